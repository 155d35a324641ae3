"""Helpers for the scenario tests of the KAI, Grove, LWS and Kueue front-ends: objects in,
placements out, and which domains the pods landed in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.api.errors import InputError
from gangsched.api.types import Node
from gangsched.batch import WorkloadOutcome, place_plan
from gangsched.cluster.state import ClusterState
from gangsched.frontends import assemble, load
from gangsched.gang import Group, PodSet, constraint_keys, validate
from gangsched.model import Plan, Workload
from gangsched.testing.builders import GPU, levels_of, nodes

SHAPE = (("zone", 1), ("block", 2), ("rack", 2), ("host", 2))  # 8 nodes of 8 GPUs
BLOCK, RACK, HOST = "gangsched.io/block", "gangsched.io/rack", "kubernetes.io/hostname"


def cluster(shape: Sequence[tuple[str, int]] = SHAPE, gpu: int = 8) -> list[Node]:
    return nodes(shape, {"cpu": 64_000, "memory": 512 << 30, GPU: gpu, "pods": 110})


def write(tmp: Path, objects: Iterable[Mapping[str, Any]], name: str = "in.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump_all([dict(o) for o in objects], sort_keys=False))
    return path


def plan(tmp: Path, *objects: Mapping[str, Any], with_nodes: Sequence[Node] = ()) -> Plan:
    inputs = load([write(tmp, objects)])
    inputs.nodes.extend(with_nodes)
    return assemble(inputs)


def load_error(tmp: Path, *objects: Mapping[str, Any]) -> InputError:
    with pytest.raises(InputError) as info:
        load([write(tmp, objects)])
    return info.value


def only(p: Plan, kind: str | None = None) -> Workload:
    found = [w for w in p.workloads if kind is None or w.kind == kind]
    assert len(found) == 1, [(w.kind, w.name) for w in p.workloads]
    return found[0]


def tree(w: Workload) -> Group:
    assert w.tree is not None and isinstance(w.tree, Group), (w.waiting, w.invalid)
    return w.tree


def place(p: Plan, shape: Sequence[tuple[str, int]] = SHAPE) -> dict[str, WorkloadOutcome]:
    """Every workload of the plan placed on its nodes (levels of ``shape``)."""
    levels = p.levels or levels_of(shape)
    for w in p.ready:
        assert w.tree is not None
        validate(w.tree, levels)
    state = ClusterState.from_nodes(p.nodes, levels, p.bound,
                                    keys=constraint_keys(w.tree for w in p.workloads))
    return {o.name: o for o in place_plan(p, state)}


def domains(p: Plan, outcome: WorkloadOutcome, key: str, prefix: str = "") -> set[str]:
    """Values of ``key`` of the nodes the outcome's pods (named ``prefix``...) are on."""
    by_name = {n.name: n for n in p.nodes}
    return {by_name[n].labels[key] for pod, n in outcome.pods.items()
            if pod.split("/", 1)[1].startswith(prefix)}


def outline(node: Group | PodSet) -> list[tuple[str, int, int, int]]:
    """(path, min_groups (-1 for a set), min_pods, size) of every node, depth first."""
    if isinstance(node, PodSet):
        return [(node.path, -1, node.min_pods, node.size)]
    out = [(node.path, node.min_groups, node.min_pods, node.size)]
    for child in node.children:
        out.extend(outline(child))
    return out
