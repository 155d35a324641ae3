"""``gangsched validate``: check every object in the inputs, one line per problem."""

from __future__ import annotations

from pathlib import Path

import typer

from gangsched.api.errors import GangschedError, InputError
from gangsched.api.schema import Mode
from gangsched.cli.common import (
    FilesOption,
    IgnoreUnknownOption,
    PathsArgument,
    TopologyOption,
    ValidateOption,
    error,
    input_files,
    out,
    validate_mode,
    warn,
)
from gangsched.cli.place import plan_chain
from gangsched.frontends import FRONT_ENDS, assemble, load
from gangsched.gang import validate


def problems(files: list[Path], ignore_unknown: bool, topology: str | None,
             validate_fields: Mode | None = None) -> list[str]:
    """Every problem found: per document while loading, then per front-end (cross-object
    checks, and workloads a front-end marks invalid), then each gang tree's own rules.
    The loader's warnings are printed as they are found."""
    found: list[InputError] = []
    inputs = load(files, ignore_unknown=ignore_unknown, errors=found, validate=validate_fields)
    for message in inputs.warnings:
        warn(message)
    lines = [str(e) for e in found]
    for front_end in FRONT_ENDS:
        try:
            built = assemble(inputs, [front_end])
        except GangschedError as e:
            lines.append(str(e))
        else:
            lines.extend(w.invalid for w in built.workloads if w.invalid)
    if len(lines) > len(found):
        return lines  # trees are built only from objects that passed their own checks
    plan = assemble(inputs)
    levels = plan_chain(plan, topology)
    for w in plan.ready:
        assert w.tree is not None
        try:
            validate(w.tree, levels)
        except GangschedError as e:
            lines.append(f"{w.kind}/{w.name}: {e}")
    return lines


def validate_cmd(
    paths: PathsArgument = None,
    files: FilesOption = None,
    topology: TopologyOption = None,
    ignore_unknown: IgnoreUnknownOption = False,
    validate_fields: ValidateOption = None,
) -> None:
    """Check every object in the input files; exit 1 with one line per problem."""
    files = input_files(paths, files)
    found = problems(files, ignore_unknown, topology, validate_mode(validate_fields))
    lines = list(dict.fromkeys(found))  # two front-ends may find the same problem
    for line in lines:
        error(line)
    if lines:
        raise typer.Exit(1)
    out().print(f"ok: {len(files)} file(s) valid")
