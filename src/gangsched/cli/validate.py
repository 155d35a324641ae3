"""``gangsched validate``: check every object in the inputs, one line per problem."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gangsched.api.errors import GangschedError, InputError
from gangsched.cli.common import (
    AllNamespacesOption,
    FilesOption,
    IgnoreUnknownOption,
    NamespaceOption,
    PathsArgument,
    RecursiveOption,
    SelectorOption,
    TopologyOption,
    ValidateOption,
    VerboseOption,
    error,
    info,
    input_files,
    validate_mode,
    warn,
)
from gangsched.cli.place import plan_chain, topology_into
from gangsched.cli.select import Scope

if TYPE_CHECKING:
    from gangsched.api.schema import Mode


def problems(files: list[Path], ignore_unknown: bool, topology: str | None,
             validate_fields: Mode | None = None, scope: Scope | None = None) -> list[str]:
    """Every problem found: per document while loading, then per front-end (cross-object
    checks, and workloads a front-end marks invalid), then each gang tree's own rules
    (of the workloads in ``scope``: every object is checked against its schema whatever
    the scope). The loader's warnings are printed as they are found."""
    from gangsched.frontends import FRONT_ENDS, assemble, load
    from gangsched.gang import validate

    found: list[InputError] = []
    inputs = load(files, ignore_unknown=ignore_unknown, errors=found, validate=validate_fields)
    topology_into(inputs, topology)  # as place: the front-ends see --topology's levels
    for message in inputs.warnings:
        warn(message)
    scope = scope or Scope()
    if not scope.everything:
        scope.index(inputs)
    lines = [str(e) for e in found]
    for front_end in FRONT_ENDS:
        try:
            built = assemble(inputs, [front_end])
        except GangschedError as e:
            lines.append(str(e))
        else:
            lines.extend(w.invalid for w in built.workloads if w.invalid and scope.workload(w))
    if len(lines) > len(found):
        return lines  # trees are built only from objects that passed their own checks
    plan = assemble(inputs)
    levels = plan_chain(plan, topology)
    for w in scope.workloads(plan.ready):
        assert w.tree is not None
        try:
            validate(w.tree, levels)
        except GangschedError as e:  # as place reports it (batch.check_trees): its file too
            where = f"{w.source}: " if w.source else ""
            lines.append(f"{where}{w.kind}/{w.name}: {e}")
    return lines


def validate_cmd(
    paths: PathsArgument = None,
    files: FilesOption = None,
    recursive: RecursiveOption = False,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    selector: SelectorOption = None,
    topology: TopologyOption = None,
    ignore_unknown: IgnoreUnknownOption = False,
    validate_fields: ValidateOption = None,
    verbose: VerboseOption = 0,
) -> None:
    """Check every object in the input files.

    Exit 1 with one line per problem, naming the file, document, object and field; else say
    how many files were read and valid. -n and -l choose the workloads whose gang rules are
    checked."""
    scope = Scope.of(namespace, all_namespaces, selector)
    files = input_files(paths, files, recursive)
    found = problems(files, ignore_unknown, topology, validate_mode(validate_fields), scope)
    lines = list(dict.fromkeys(found))  # two front-ends may find the same problem
    for line in lines:
        error(line)
    if lines:
        raise typer.Exit(1)
    if verbose:
        for path in files:
            info(f"read {'<stdin>' if str(path) == '-' else path}")
    count = len(files)
    typer.echo(f"{count} {'file' if count == 1 else 'files'} valid")
