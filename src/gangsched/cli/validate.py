"""``gangsched validate``: check every object in the inputs, one line per problem."""

from __future__ import annotations

from pathlib import Path

import typer

from gangsched.api.errors import GangschedError, InputError
from gangsched.api.loader import load
from gangsched.cli.common import (
    FilesOption,
    IgnoreUnknownOption,
    PathsArgument,
    TopologyOption,
    error,
    input_files,
    out,
)
from gangsched.cli.place import plan_chain
from gangsched.frontends import assemble, builder_names
from gangsched.gang import validate


def problems(files: list[Path], ignore_unknown: bool, topology: str | None) -> list[str]:
    """Every problem found: per document while loading, then per front-end (cross-object
    checks), then each gang tree's own rules."""
    found: list[InputError] = []
    inputs = load(files, ignore_unknown=ignore_unknown, errors=found)
    lines = [str(e) for e in found]
    for name in builder_names():
        try:
            assemble(inputs, [name])
        except GangschedError as e:
            lines.append(str(e))
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
) -> None:
    """Check every object in the input files; exit 1 with one line per problem."""
    files = input_files(paths, files)
    lines = problems(files, ignore_unknown, topology)
    for line in lines:
        error(line)
    if lines:
        raise typer.Exit(1)
    out().print(f"ok: {len(files)} file(s) valid")
