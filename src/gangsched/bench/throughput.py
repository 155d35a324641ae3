"""``bench throughput``: gangs decided and committed per second on the upstream
kube-scheduler scheduler_perf shapes (k8s.io/kubernetes v1.37
test/integration/scheduler_perf/podgroup), against a plain numpy first-fit on the same
cases in the same run.

Nodes: 5,000 of 4 CPU, 32Gi, 110 pods, 100 per rack (``topology.kubernetes.io/rack``).
Pods: 100m CPU, 100Mi. Cases, as upstream: ``tas`` (every gang inside one rack):
750/1,500/2,250 gangs of 4 and 3/6/9 gangs of 1,000; ``gang`` (no topology):
1,000/2,000/3,000 gangs of 3, and 10 gangs of 5,000.

Each case is run ``repeat`` times on a fresh cluster; the medians are reported, as wall
time and as this process's CPU time (the machine is shared: CPU time is what the engine
spent). Every decision is committed, so the time includes bringing the cached
capacities up to date after each commit. ``ratio_to_first_fit`` is the engine's CPU time
over the first-fit's, on the same gangs: how much the search costs over the least a
topology-aware placer must do. The first-fit does not name a node for each pod, which the
engine's decision does (a dict from pod to node, 40-50 ns a pod here: for a gang of
1,000 pods more than the whole first-fit); ``ratio_to_first_fit_map`` is the ratio to the
same first-fit also writing that map, the like-for-like reference. What a running
scheduler computes once per cluster, not per gang (which nodes pass the pods' node
filters, the node names), is computed on each fresh cluster before the clock starts; the
capacities themselves are not: the first decision on a fresh cluster computes them, as
the first-fit computes them for every gang. The pod names are hashed before either side
is timed, as a running scheduler's are (it holds its pods by name); otherwise the side
timed first would pay for the hashes the other reuses.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gangsched.api.types import NodeRequirements
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, podsets
from gangsched.placement import place
from gangsched.testing.builders import GiB, group, nodes, podset

RACK = "topology.kubernetes.io/rack"
SHAPE = (("rack", 50), ("host", 100))
NODE = {"cpu": 4_000, "memory": 32 * GiB, "pods": 110}
MiB = 1 << 20
POD = {"cpu": 100, "memory": 100 * MiB, "pods": 1}
# upstream kube-scheduler on these shapes (scheduler_perf, binding through an API server)
UPSTREAM_PODS_PER_S = (492, 975)


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "tas": each gang inside one rack; "gang": no topology
    gangs: int
    pods: int  # per gang


CASES: tuple[Case, ...] = (
    Case("tas 750 x 4", "tas", 750, 4),
    Case("tas 1,500 x 4", "tas", 1_500, 4),
    Case("tas 2,250 x 4", "tas", 2_250, 4),
    Case("tas 3 x 1,000", "tas", 3, 1_000),
    Case("tas 6 x 1,000", "tas", 6, 1_000),
    Case("tas 9 x 1,000", "tas", 9, 1_000),
    Case("gang 1,000 x 3", "gang", 1_000, 3),
    Case("gang 2,000 x 3", "gang", 2_000, 3),
    Case("gang 3,000 x 3", "gang", 3_000, 3),
    Case("gang 10 x 5,000", "gang", 10, 5_000),
)


def cluster_nodes() -> list[Any]:
    out = nodes(SHAPE, NODE)
    for n in out:  # the upstream label key for racks
        n.labels[RACK] = n.labels.pop("gangsched.io/rack")
    return out


def make_gang(case: Case, i: int) -> Group:
    p = f"g{i}"
    topo = (Constraint(RACK),) if case.kind == "tas" else ()
    return group(p, [podset(p + "/w", case.pods, cpu=POD["cpu"],
                            extra={"memory": POD["memory"]})], topology=topo)


def first_fit(state: ClusterState, case: Case, pods: Sequence[Sequence[str]] | None = None,
              maps: list[dict[str, str]] | None = None) -> int:
    """The reference: each gang in the first rack (or anywhere) whose summed fit counts
    hold it, its pods on that scope's first nodes in order. Returns gangs admitted. With
    ``pods`` (each gang's pod names), it also writes each admitted gang's pod-to-node map
    into ``maps``, as the engine's decision does: the like-for-like reference."""
    names = state.topology.name_array
    free = state.free.copy()
    rows = [state.rindex[r] for r in POD]
    amount = np.array([POD[r] for r in POD], dtype=np.int64)[:, None]
    racks = state.topology.level(RACK)
    assert racks is not None
    starts, ends = racks.starts, racks.ends
    admitted = 0
    for g in range(case.gangs):
        fit = (free[rows] // amount).min(axis=0)
        if case.kind == "tas":
            room = np.flatnonzero(np.add.reduceat(fit, starts) >= case.pods)
            if not len(room):
                continue
            lo, hi = int(starts[room[0]]), int(ends[room[0]])
        else:
            lo, hi = 0, state.n_nodes
        take = fit[lo:hi]
        cum = np.cumsum(take)
        k = int(np.searchsorted(cum, case.pods))
        if k >= len(take):
            continue
        counts = take[: k + 1].copy()
        counts[-1] -= int(cum[k]) - case.pods
        free[rows, lo:lo + k + 1] -= amount * counts
        if pods is not None and maps is not None:
            maps.append(dict(zip(pods[g], np.repeat(names[lo:lo + k + 1], counts).tolist(),
                                 strict=True)))
        admitted += 1
    return admitted


@dataclass
class ThroughputCase:
    case: str
    gangs: int
    admitted: int
    pods: int
    seconds: float  # wall, median of repeats
    cpu_seconds: float  # this process's CPU time, median of repeats
    pods_per_s: float
    cpu_pods_per_s: float
    gangs_per_s: float
    first_fit_cpu_seconds: float
    first_fit_admitted: int
    first_fit_seconds: float  # wall, median of repeats
    first_fit_pods_per_s: float  # first-fit pods per CPU second
    ratio_to_first_fit: float  # engine CPU time / first-fit CPU time
    first_fit_map_cpu_seconds: float  # the first-fit writing each gang's pod-to-node map
    ratio_to_first_fit_map: float  # engine CPU time / that


@dataclass
class ThroughputBench:
    nodes: int
    repeat: int
    cases: list[ThroughputCase] = field(default_factory=list)
    upstream_pods_per_s: tuple[int, int] = UPSTREAM_PODS_PER_S

    def as_dict(self) -> dict[str, Any]:
        return {"benchmark": "throughput", "nodes": self.nodes, "repeat": self.repeat,
                "upstream_pods_per_s": list(self.upstream_pods_per_s),
                "cases": [asdict(c) for c in self.cases]}


def _timed(fn: Callable[[], int]) -> tuple[float, float, int]:
    gc.collect()
    gc.freeze()  # the cluster and the queue live long: keep them out of GC passes
    w, c = time.perf_counter(), time.process_time()
    got = fn()
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    gc.unfreeze()
    return wall, cpu, got


def _ready(state: ClusterState) -> ClusterState:
    """Compute what a running scheduler holds per cluster, not per gang: the nodes the
    pods' (empty) node requirements allow, and the node names."""
    state.mask(NodeRequirements())
    _ = state.topology.name_array
    return state


def _hashed(names: list[list[str]]) -> None:
    """Hash every pod name, as a running scheduler has when the pods reach its queue (it
    holds them by name): a str computes its hash once, so otherwise the first side timed
    would pay for both."""
    for gang in names:
        for p in gang:
            hash(p)


def run_throughput_bench(
    cases: Sequence[str] | None = None, repeat: int = 3,
    progress: Callable[[str], None] | None = None,
) -> ThroughputBench:
    node_list = cluster_nodes()
    chosen = [c for c in CASES if cases is None or c.name in cases]
    result = ThroughputBench(nodes=len(node_list), repeat=repeat)
    warm = ClusterState.from_nodes(node_list, None, keys={RACK})
    for case in chosen:  # first calls (imports, numpy) are not throughput
        place(make_gang(case, -1), warm, commit=False)
    for case in chosen:
        if progress:
            progress(f"{case.name} x {repeat}")
        walls, cpus, ff_walls, ff_cpus, map_cpus = [], [], [], [], []
        admitted = ff_admitted = 0
        for _ in range(repeat):
            state = _ready(ClusterState.from_nodes(node_list, None, keys={RACK}))
            units = [make_gang(case, i) for i in range(case.gangs)]
            names = [[p for ps in podsets(u) for p in ps.pods] for u in units]
            _hashed(names)
            wall, cpu, admitted = _timed(
                lambda: sum(place(u, state).admitted for u in units))  # noqa: B023
            walls.append(wall)
            cpus.append(cpu)
            fresh = ClusterState.from_nodes(node_list, None, keys={RACK})
            ff_wall, ff_cpu, ff_admitted = _timed(lambda: first_fit(fresh, case))  # noqa: B023
            ff_walls.append(ff_wall)
            ff_cpus.append(ff_cpu)
            fresh = ClusterState.from_nodes(node_list, None, keys={RACK})
            map_cpus.append(_timed(lambda: first_fit(fresh, case, names, []))[1])  # noqa: B023
        wall, cpu, ff, ff_wall, ff_map = (statistics.median(x) for x in (
            walls, cpus, ff_cpus, ff_walls, map_cpus))
        pods = admitted * case.pods
        result.cases.append(ThroughputCase(
            case=case.name, gangs=case.gangs, admitted=admitted, pods=pods, seconds=wall,
            cpu_seconds=cpu, pods_per_s=pods / wall if wall else 0.0,
            cpu_pods_per_s=pods / cpu if cpu else 0.0,
            gangs_per_s=admitted / wall if wall else 0.0, first_fit_cpu_seconds=ff,
            first_fit_admitted=ff_admitted, first_fit_seconds=ff_wall,
            first_fit_pods_per_s=ff_admitted * case.pods / ff if ff else 0.0,
            ratio_to_first_fit=cpu / ff if ff else 0.0, first_fit_map_cpu_seconds=ff_map,
            ratio_to_first_fit_map=cpu / ff_map if ff_map else 0.0,
        ))
    return result
