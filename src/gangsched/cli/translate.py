"""``gangsched translate``: the PodGroups and Pods Kthena would create for ModelServings;
with ``-o tree``, the gang tree every workload of the inputs becomes (:mod:`.tree`).

Register with ``app.command("translate")(translate_cmd)`` on the top-level
:class:`~gangsched.cli.common.App`, which turns input errors into one-line errors.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from gangsched.api.errors import InputError
from gangsched.cli.common import (
    AllNamespacesOption,
    FilesOption,
    IgnoreUnknownOption,
    NamespaceOption,
    PathsArgument,
    RecursiveOption,
    SelectorOption,
    error,
    input_files,
    load_inputs,
    warn,
)
from gangsched.cli.select import Scope


class Format(StrEnum):
    yaml = "yaml"
    json = "json"
    tree = "tree"


FormatOption = Annotated[Format, typer.Option("--output", "-o", help="Output format.")]


def translated(files: list[Path], ignore_unknown: bool = False, scope: Scope | None = None
               ) -> list[dict[str, Any]]:
    """Every ModelServing in ``files`` (in ``scope``: -n, -l) translated: its PodGroups,
    then its Pods."""
    from gangsched.frontends.kthena import model_servings, translate

    inputs = load_inputs(files, ignore_unknown)
    servings = model_servings(inputs)
    if not servings:
        raise InputError("no ModelServing objects in the input files")
    if scope is not None and not scope.everything:
        scope.index(inputs)
        servings = [ms for ms in servings if scope.matches("ModelServing", ms.namespace, ms.name)]
        if not servings:
            raise InputError("no ModelServing objects in the input files match -n/-l")
    objects: list[dict[str, Any]] = []
    for ms in servings:
        for message in ms.warnings:
            warn(message)
        podgroups, pods = translate(ms)
        objects.extend(podgroups)
        objects.extend(pods)
    return objects


def render(objects: list[dict[str, Any]], fmt: Format) -> str:
    """Multi-document YAML, or a JSON ``v1`` ``List`` (what ``kubectl -o json`` prints)."""
    if fmt is Format.json:
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2) + "\n"
    import yaml

    return yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True)


def translate_cmd(
    paths: PathsArgument = None,
    files: FilesOption = None,
    recursive: RecursiveOption = False,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    selector: SelectorOption = None,
    output: FormatOption = Format.yaml,
    ignore_unknown: IgnoreUnknownOption = False,
) -> None:
    """Print the PodGroups and Pods Kthena's controller creates for each ModelServing.

    With -o tree: the gang tree of every workload, whatever its kind; exit 1 when one is
    invalid, after the tree."""
    scope = Scope.of(namespace, all_namespaces, selector)
    if output is Format.tree:
        from gangsched.cli.tree import render_tree
        from gangsched.frontends import assemble

        inputs = load_inputs(input_files(paths, files, recursive), ignore_unknown)
        plan = assemble(inputs)
        scope.index(inputs)
        shown = scope.workloads(plan.workloads)
        typer.echo(render_tree(plan, shown), nl=False)
        invalid = [w for w in shown if w.invalid]
        if invalid:  # shown as invalid, and the exit status says it (as place does)
            more = f" (and {len(invalid) - 1} more invalid workloads)" if len(invalid) > 1 else ""
            error(f"{invalid[0].invalid}{more}")
            raise typer.Exit(1)
        return
    objects = translated(input_files(paths, files, recursive), ignore_unknown, scope)
    typer.echo(render(objects, output), nl=False)
