"""Small, tight random placement instances for checking the engine against the exact MILP.

``random_instance(rng)`` builds a cluster of at most 64 nodes in three topology levels
(zone > block > rack, hosts as nodes) with heterogeneous, partly used, sometimes cordoned
or tainted nodes, and one gang tree (depth 2-3) sized against the cluster's free GPUs so
that about half of the instances are infeasible or need search. Deterministic for a given
generator state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from gangsched.api.types import Node, NodeRequirements, Pod, Taint, Toleration
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, Mode, PodSet, constraint_keys, validate

ZONE = "topology.kubernetes.io/zone"
BLOCK = "gangsched.io/block"
RACK = "gangsched.io/rack"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
GPU_TYPE = "gangsched.io/gpu-type"
SWITCH = "gangsched.io/switch"  # cuts across every level: nodes of a rack sit on two switches
RESERVED = "gangsched.io/reserved"
LEVELS = (ZONE, BLOCK, RACK)
KEYS = (ZONE, BLOCK, RACK, HOST)  # constraint keys, widest first
GiB = 1 << 30
MAX_NODES = 64
MAX_PODS = 160

# rack kinds: (gpus, cpu millicores choices, memory GiB choices, pod slots choices, gpu type)
_KINDS: dict[str, tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...], str]] = {
    "gpu8": (8, (96_000, 128_000, 192_000), (512, 1024, 2048), (32, 110), "h100"),
    "gpu4": (4, (48_000, 64_000), (256, 512), (16, 110), "a100"),
    "cpu": (0, (16_000, 32_000, 64_000), (64, 128, 256), (8, 110), ""),
}


def _pick(rng: np.random.Generator, options: tuple[int, ...] | list[int]) -> int:
    return int(options[int(rng.integers(len(options)))])


def _kind(rng: np.random.Generator) -> str:
    return str(rng.choice(["gpu8", "gpu4", "cpu"], p=[0.5, 0.3, 0.2]))


def random_cluster(rng: np.random.Generator) -> ClusterState:
    """Up to 64 nodes in zone > block > rack, some used, cordoned, tainted or unlabeled."""
    nodes, used = random_nodes(rng)
    return ClusterState.from_nodes(nodes, list(LEVELS), pods=used)


def random_nodes(rng: np.random.Generator) -> tuple[list[Node], list[Pod]]:
    """The nodes of :func:`random_cluster` and the pods already running on them."""
    nodes: list[Node] = []
    used: list[Pod] = []
    for z in range(int(rng.integers(1, 3))):
        for b in range(int(rng.integers(1, 4))):
            for r in range(int(rng.integers(1, 4))):
                rack_kind = _kind(rng)
                mixed = rng.random() < 0.2
                for h in range(int(rng.integers(1, 5))):
                    if len(nodes) >= MAX_NODES:
                        break
                    kind = _kind(rng) if mixed else rack_kind
                    gpus, cpus, mems, slots, gtype = _KINDS[kind]
                    name = f"n-z{z}-b{b}-r{r}-h{h}"
                    labels = {
                        ZONE: f"z{z}",
                        BLOCK: f"z{z}-b{b}",
                        RACK: f"z{z}-b{b}-r{r}",
                        HOST: name,
                        SWITCH: f"s{h % 2}",
                    }
                    if rng.random() < 0.02:
                        del labels[RACK]  # a node the rack level cannot use
                    if gtype:
                        labels[GPU_TYPE] = gtype
                    alloc = {
                        "cpu": _pick(rng, cpus),
                        "memory": _pick(rng, mems) * GiB,
                        "pods": _pick(rng, slots),
                    }
                    if gpus:
                        alloc[GPU] = gpus
                    taints: tuple[Taint, ...] = ()
                    u = rng.random()
                    if u < 0.07:
                        taints = (Taint(RESERVED, "true", "NoSchedule"),)
                    elif u < 0.10:
                        taints = (Taint("gangsched.io/soft", "true", "PreferNoSchedule"),)
                    nodes.append(
                        Node(name, labels, taints, alloc, unschedulable=bool(rng.random() < 0.04))
                    )
                    if rng.random() < 0.4:
                        req = {
                            "cpu": int(alloc["cpu"] * rng.uniform(0.05, 0.9)) // 1000 * 1000,
                            "memory": int(alloc["memory"] * rng.uniform(0.05, 0.9)) // GiB * GiB,
                            "pods": 1,
                        }
                        if gpus:
                            req[GPU] = int(rng.integers(1, gpus + 1))
                        used.append(Pod(f"used-{len(used)}", requests=req, node_name=name))
    return nodes, used


def _free_gpus(state: ClusterState) -> int:
    r = state.rindex.get(GPU)
    if r is None:
        return 0
    ok = state.mask(NodeRequirements())
    return int(np.maximum(state.free[r], 0)[ok].sum())


class _TreeMaker:
    def __init__(self, rng: np.random.Generator, name: str) -> None:
        self.rng = rng
        self.name = name

    def constraints(self, parent_rank: int, lo: int, hi: int, p_req: float) -> tuple[
        tuple[Constraint, ...], int
    ]:
        """Random required/preferred constraints at ranks in [lo, hi] (0 zone .. 3 host),
        never wider than the parent's required rank; returns them and the new required
        rank (the parent's when nothing is required)."""
        rng = self.rng
        lo = max(lo, parent_rank)
        out: list[Constraint] = []
        rank = parent_rank
        if lo <= hi and rng.random() < p_req:
            rank = int(rng.integers(lo, hi + 1))
            out.append(Constraint(KEYS[rank], "required"))
        if rng.random() < 0.3 and rank < len(KEYS) - 1:
            pref = int(rng.integers(max(rank + 1, lo), len(KEYS)))
            mode: Mode = "preferred"
            out.append(Constraint(KEYS[pref], mode))
        return tuple(out), rank

    def podset(self, path: str, pods: int, requests: dict[str, int], *, min_pods: int,
               parent_rank: int, gpu: bool) -> PodSet:
        rng = self.rng
        sel: tuple[tuple[str, str], ...] = ()
        tol: tuple[Toleration, ...] = ()
        if gpu and rng.random() < 0.2:
            sel = ((GPU_TYPE, str(rng.choice(["h100", "a100"]))),)
        if rng.random() < 0.3:
            tol = (Toleration(RESERVED, "Equal", "true", "NoSchedule"),)
        cap = None
        if gpu and rng.random() < 0.15:
            cap = int(rng.integers(1, 3))
        topo: tuple[Constraint, ...] = ()
        if rng.random() < 0.1:
            topo, _ = self.constraints(parent_rank, 2, 3, 1.0)
        slug = path.replace("/", "-")
        return PodSet(
            name=path.rsplit("/", 1)[-1],
            path=path,
            pods=tuple(f"default/{slug}-{i}" for i in range(pods)),
            requests=requests,
            requirements=NodeRequirements(node_selector=sel, tolerations=tol),
            min_pods=min_pods,
            topology=topo,
            max_pods_per_node=cap,
        )

    def worker_requests(self, g: int) -> dict[str, int]:
        rng = self.rng
        return {
            "cpu": g * _pick(rng, (4_000, 8_000, 12_000)),
            "memory": g * _pick(rng, (16, 32, 64)) * GiB,
            GPU: g,
            "pods": 1,
        }

    def leader_requests(self) -> dict[str, int]:
        rng = self.rng
        return {"cpu": _pick(rng, (2_000, 4_000, 8_000)), "memory": _pick(rng, (4, 8, 16)) * GiB,
                "pods": 1}

    def replica(self, path: str, workers: int, g: int, parent_rank: int) -> Group:
        """A replica: optional CPU-only leader plus ``workers`` GPU pods."""
        rng = self.rng
        topo, rank = self.constraints(parent_rank, 1, 3, 0.5)
        kids: list[Group | PodSet] = []
        if rng.random() < 0.4:
            kids.append(self.podset(f"{path}/leader", 1, self.leader_requests(), min_pods=1,
                                    parent_rank=rank, gpu=False))
        wmin = workers if rng.random() < 0.8 else max(1, math.ceil(workers / 2))
        kids.append(self.podset(f"{path}/worker", workers, self.worker_requests(g),
                                min_pods=wmin, parent_rank=rank, gpu=True))
        min_pods = 0
        if rng.random() < 0.15:
            min_pods = sum(k.min_pods for k in kids if isinstance(k, PodSet)) + int(
                rng.integers(0, workers - wmin + 1)
            )
        return Group(path.rsplit("/", 1)[-1], path, kids, min_groups=len(kids),
                     min_pods=min_pods, topology=topo)

    def role(self, path: str, target_gpus: float, parent_rank: int, lo: int,
             p_req: float = 0.35) -> Group:
        """``R`` replicas of one shape; at least one of them, at most all, required."""
        rng = self.rng
        topo, rank = self.constraints(parent_rank, lo, 2, p_req)
        count = int(rng.integers(1, 6))
        g = _pick(rng, (1, 2, 4, 4, 8, 8))
        workers = int(np.clip(round(target_gpus / count / g), 1, 8))
        first = self.replica(f"{path}/r0", workers, g, rank)
        reps: list[Group | PodSet] = [first]
        for i in range(1, count):
            if rng.random() < 0.15:  # now and then a replica of a different shape
                reps.append(self.replica(f"{path}/r{i}", workers, g, rank))
            else:  # usually one template, as in Kthena
                reps.append(_renamed(first, f"{path}/r0", f"{path}/r{i}"))
        need = count if rng.random() < 0.4 else int(rng.integers(1, count + 1))
        return Group(path.rsplit("/", 1)[-1], path, reps, min_groups=need, topology=topo)

    def flat(self, target_gpus: float) -> Group:
        """A Volcano-style PodGroup: root over PodSets, minMember below the total."""
        rng = self.rng
        topo, rank = self.constraints(-1, 0, 2, 0.5)
        kids: list[Group | PodSet] = []
        if rng.random() < 0.5:
            kids.append(self.podset(f"{self.name}/master", 1, self.leader_requests(),
                                    min_pods=1, parent_rank=rank, gpu=False))
        sets = int(rng.integers(1, 3))
        for k in range(sets):
            g = _pick(rng, (1, 2, 4, 8))
            size = int(np.clip(round(target_gpus / sets / g), 1, 24))
            smin = 0 if rng.random() < 0.5 else int(rng.integers(1, size + 1))
            kids.append(self.podset(f"{self.name}/worker{k}", size, self.worker_requests(g),
                                    min_pods=smin, parent_rank=rank, gpu=True))
        total = sum(c.size for c in kids)
        floor = sum(c.min_pods for c in kids if isinstance(c, PodSet))
        min_pods = int(rng.integers(max(1, floor), total + 1))
        min_groups = len(kids) if rng.random() < 0.4 else int(rng.integers(0, len(kids) + 1))
        return Group(self.name, self.name, kids, min_groups=min_groups, min_pods=min_pods,
                     topology=topo, kind="PodGroup")

    def replicas(self, target_gpus: float) -> Group:
        """Root over replica groups (depth 2), e.g. one Kthena role or a LeaderWorkerSet."""
        root = self.role(self.name, target_gpus, -1, 0, p_req=0.5)
        root.kind = "ServingGroup"
        return root

    def disagg(self, target_gpus: float) -> Group:
        """Root over prefill/decode roles over replicas over PodSets (depth 3)."""
        rng = self.rng
        topo, rank = self.constraints(-1, 0, 1, 0.4)
        share = rng.uniform(0.3, 0.7)
        roles: list[Group | PodSet] = [
            self.role(f"{self.name}/prefill", target_gpus * share, rank, 0),
            self.role(f"{self.name}/decode", target_gpus * (1 - share), rank, 0),
        ]
        return Group(self.name, self.name, roles, min_groups=2, topology=topo,
                     kind="ServingGroup")


def _renamed(node: Group | PodSet, old: str, new: str) -> Group:
    """A copy of a replica subtree with paths (and pod names) moved from ``old`` to ``new``."""
    out = _rename(node, old, new)
    assert isinstance(out, Group)
    return out


def _rename(node: Group | PodSet, old: str, new: str) -> Group | PodSet:
    path = new + node.path[len(old):]
    name = path.rsplit("/", 1)[-1]
    if isinstance(node, PodSet):
        slug_old, slug_new = old.replace("/", "-"), new.replace("/", "-")
        pods = tuple(p.replace(slug_old, slug_new, 1) for p in node.pods)
        return replace(node, name=name, path=path, pods=pods)
    return replace(node, name=name, path=path,
                   children=[_rename(c, old, new) for c in node.children])


def _trim(root: Group) -> None:
    """Drop trailing replicas until the tree has at most MAX_PODS pods."""
    while root.size > MAX_PODS:
        biggest = max(
            (g for g in [root, *root.children] if isinstance(g, Group) and len(g.children) > 1),
            key=lambda g: g.size,
            default=None,
        )
        if biggest is None:
            break
        biggest.children.pop()
        biggest.min_groups = min(biggest.min_groups, len(biggest.children))
        biggest.min_pods = min(biggest.min_pods, biggest.size)
    root.min_pods = min(root.min_pods, root.size)


def random_instance(
    rng: np.random.Generator, relabel: Mapping[str, str] | None = None
) -> tuple[ClusterState, Group]:
    """A cluster and one gang unit for it (see the module doc).

    With ``relabel`` (old label key -> new key), the same instance with its topology keys
    renamed, on a cluster whose levels are derived from the labels and the unit's keys
    (no fixed order): it must be placed exactly as the original."""
    nodes, used = random_nodes(rng)
    state = ClusterState.from_nodes(nodes, list(LEVELS), pods=used)
    free = max(_free_gpus(state), 8)
    target = free * rng.uniform(0.2, 1.0)
    maker = _TreeMaker(rng, f"job-{int(rng.integers(1_000_000))}")
    kind = rng.random()
    if kind < 0.3:
        unit = maker.flat(target)
    elif kind < 0.65:
        unit = maker.replicas(target)
    else:
        unit = maker.disagg(target)
    _trim(unit)
    validate(unit, KEYS)
    if relabel is not None:
        unit = _relabelled(unit, relabel)
        nodes = [replace(n, labels={relabel.get(k, k): v for k, v in n.labels.items()})
                 for n in nodes]
        state = ClusterState.from_nodes(nodes, None, used, keys=constraint_keys([unit]))
    return state, unit


def _relabelled(node: Group | PodSet, relabel: Mapping[str, str]) -> Group:
    out = _relabel(node, relabel)
    assert isinstance(out, Group)
    return out


def _relabel(node: Group | PodSet, relabel: Mapping[str, str]) -> Group | PodSet:
    topo = tuple(replace(c, key=relabel.get(c.key, c.key)) for c in node.topology)
    if isinstance(node, PodSet):
        return replace(node, topology=topo)
    return replace(node, topology=topo, children=[_relabel(c, relabel) for c in node.children])
