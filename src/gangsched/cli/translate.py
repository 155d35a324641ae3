"""``gangsched translate``: the PodGroups and Pods Kthena would create for ModelServings.

Register with ``app.command("translate")(translate_cmd)`` on the top-level
:class:`~gangsched.cli.common.App`, which turns input errors into one-line errors.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from gangsched.api.errors import InputError
from gangsched.cli.common import (
    FilesOption,
    IgnoreUnknownOption,
    PathsArgument,
    input_files,
    load_inputs,
    warn,
)
from gangsched.frontends.kthena import model_servings, translate


class Format(StrEnum):
    yaml = "yaml"
    json = "json"


FormatOption = Annotated[Format, typer.Option("--output", "-o", help="Output format.")]


def translated(files: list[Path], ignore_unknown: bool = False) -> list[dict[str, Any]]:
    """Every ModelServing in ``files`` translated: its PodGroups, then its Pods."""
    inputs = load_inputs(files, ignore_unknown)
    servings = model_servings(inputs)
    if not servings:
        raise InputError("no ModelServing objects in the input files")
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
    return yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True)


def translate_cmd(
    paths: PathsArgument = None,
    files: FilesOption = None,
    output: FormatOption = Format.yaml,
    ignore_unknown: IgnoreUnknownOption = False,
) -> None:
    """Print the PodGroups and Pods Kthena's controller creates for each ModelServing."""
    typer.echo(render(translated(input_files(paths, files), ignore_unknown), output), nl=False)
