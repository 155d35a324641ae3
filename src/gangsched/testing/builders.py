"""Builders for nodes, clusters and gang trees, shared by tests and benchmarks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import count, product

from gangsched.api.types import NO_REQUIREMENTS, Node, NodeRequirements, Pod, Taint
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, Mode, PodSet

ZONE = "topology.kubernetes.io/zone"
BLOCK = "gangsched.io/block"
RACK = "gangsched.io/rack"
HOST = "kubernetes.io/hostname"
LEVEL_KEYS = {"zone": ZONE, "block": BLOCK, "rack": RACK, "host": HOST}

GPU = "nvidia.com/gpu"
GiB = 1 << 30
DEFAULT_NODE: dict[str, int] = {"cpu": 64_000, "memory": 512 * GiB, GPU: 8, "pods": 110}


def nodes(
    shape: Sequence[tuple[str, int]] = (("zone", 2), ("block", 2), ("rack", 2), ("host", 4)),
    alloc: Mapping[str, int] | None = None,
    prefix: str = "n",
) -> list[Node]:
    """Nodes of a regular topology; the last level ``host`` gives nodes per parent domain.

    Label values are unique paths such as ``z0-b1-r0`` so every domain is distinct.
    """
    alloc = dict(DEFAULT_NODE if alloc is None else alloc)
    names = [n for n, _ in shape]
    out: list[Node] = []
    for idx in product(*(range(c) for _, c in shape)):
        parts = [f"{name[0]}{i}" for name, i in zip(names, idx, strict=True)]
        node_name = f"{prefix}-" + "-".join(parts)
        labels = {}
        for depth, name in enumerate(names):
            key = LEVEL_KEYS.get(name, f"gangsched.io/{name}")
            labels[key] = node_name if name == "host" else "-".join(parts[: depth + 1])
        labels.setdefault(HOST, node_name)
        out.append(Node(node_name, labels, allocatable=dict(alloc)))
    return out


def levels_of(shape: Sequence[tuple[str, int]]) -> list[str]:
    return [LEVEL_KEYS.get(n, f"gangsched.io/{n}") for n, _ in shape if n != "host"]


def cluster(
    shape: Sequence[tuple[str, int]] = (("zone", 2), ("block", 2), ("rack", 2), ("host", 4)),
    alloc: Mapping[str, int] | None = None,
    extra: Sequence[Node] = (),
) -> ClusterState:
    ns = nodes(shape, alloc) + list(extra)
    return ClusterState.from_nodes(ns, levels_of(shape))


def node(name: str, labels: Mapping[str, str] | None = None, *, gpu: int = 8, cpu: int = 64_000,
         taints: Sequence[Taint] = (), ready: bool = True, unschedulable: bool = False) -> Node:
    lab = {HOST: name, **(labels or {})}
    return Node(name, lab, tuple(taints), {"cpu": cpu, "memory": 512 * GiB, GPU: gpu, "pods": 110},
                unschedulable=unschedulable, ready=ready)


def cons(*specs: str) -> tuple[Constraint, ...]:
    """``cons("rack", "block~")``: required rack, preferred block (``~`` = preferred)."""
    out = []
    for s in specs:
        mode: Mode = "preferred" if s.endswith("~") else "required"
        name = s.rstrip("~")
        out.append(Constraint(LEVEL_KEYS.get(name, name), mode))
    return tuple(out)


def podset(
    path: str,
    pods: int,
    *,
    gpu: int = 0,
    cpu: int = 1000,
    min_pods: int | None = None,
    topology: tuple[Constraint, ...] = (),
    requirements: NodeRequirements | None = None,
    max_per_node: int | None = None,
    extra: Mapping[str, int] | None = None,
) -> PodSet:
    req = {"cpu": cpu, "pods": 1, **({GPU: gpu} if gpu else {}), **(extra or {})}
    return PodSet(
        name=path.rsplit("/", 1)[-1],
        path=path,
        pods=tuple(f"default/{path.replace('/', '-')}-{i}" for i in range(pods)),
        requests=req,
        requirements=requirements or NO_REQUIREMENTS,
        min_pods=pods if min_pods is None else min_pods,
        topology=topology,
        max_pods_per_node=max_per_node,
    )


def group(
    path: str,
    children: Sequence[Group | PodSet],
    *,
    min_groups: int | None = None,
    min_pods: int = 0,
    topology: tuple[Constraint, ...] = (),
    priority: int = 0,
) -> Group:
    return Group(
        name=path.rsplit("/", 1)[-1],
        path=path,
        children=list(children),
        min_groups=len(children) if min_groups is None else min_groups,
        min_pods=min_pods,
        topology=topology,
        priority=priority,
    )


def replicas(
    path: str,
    count: int,
    *,
    pods: int,
    gpu: int,
    min_replicas: int | None = None,
    replica_topology: tuple[Constraint, ...] = (),
    topology: tuple[Constraint, ...] = (),
    cpu: int = 1000,
) -> Group:
    """A role: ``count`` replicas of ``pods`` identical pods each, ``min_replicas`` required."""
    reps = [
        group(f"{path}/{path.rsplit('/', 1)[-1]}-{i}",
              [podset(f"{path}/{path.rsplit('/', 1)[-1]}-{i}/pods", pods, gpu=gpu, cpu=cpu)],
              topology=replica_topology)
        for i in range(count)
    ]
    return group(path, reps, min_groups=count if min_replicas is None else min_replicas,
                 topology=topology)


def take(state: ClusterState, node_name: str, **resources: int) -> None:
    """Use up capacity on a node, as a pod already bound there would (``gpu=`` for GPUs)."""
    requests = {GPU if k == "gpu" else k: v for k, v in resources.items()}
    state.charge_bound(Pod(f"filler-{next(_fillers)}", requests=requests, node_name=node_name))


_fillers = count()
