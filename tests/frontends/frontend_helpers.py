"""Helpers for the front-end tests: objects in, loaded Inputs or a Plan out."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from gangsched.api.loader import Inputs
from gangsched.api.types import Node
from gangsched.frontends import assemble, load
from gangsched.gang import Group, PodSet
from gangsched.model import Plan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"


def example(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]


def write(tmp: Path, objects: Iterable[Mapping[str, Any]], name: str = "in.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump_all([dict(o) for o in objects], sort_keys=False))
    return path


def load_objects(tmp: Path, *objects: Mapping[str, Any]) -> Inputs:
    return load([write(tmp, objects)])


def plan_of(tmp: Path, *objects: Mapping[str, Any], nodes: Iterable[Node] = ()) -> Plan:
    inputs = load_objects(tmp, *objects)
    inputs.nodes.extend(nodes)
    return assemble(inputs)


def deep(obj: Mapping[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(dict(obj))


def outline(node: Group | PodSet) -> list[tuple[str, int, int, int]]:
    """(path, min_groups, min_pods, size) of every node, depth first."""
    if isinstance(node, PodSet):
        return [(node.path, -1, node.min_pods, node.size)]
    out = [(node.path, node.min_groups, node.min_pods, node.size)]
    for child in node.children:
        out.extend(outline(child))
    return out


def find(node: Group | PodSet, path: str) -> Group | PodSet:
    if node.path == path:
        return node
    if isinstance(node, Group):
        for child in node.children:
            if path.startswith(child.path):
                try:
                    return find(child, path)
                except KeyError:
                    continue
    raise KeyError(path)


def slots(count: int, cpu: int = 100) -> list[Node]:
    """``count`` nodes that each take exactly one pod of ``cpu`` millicores."""
    return [Node(f"n{i}", {"kubernetes.io/hostname": f"n{i}"},
                 allocatable={"cpu": cpu, "pods": 110}) for i in range(count)]
