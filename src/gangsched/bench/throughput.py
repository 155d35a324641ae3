"""``bench throughput``: gangs decided and committed per second, on the shapes of the
upstream kube-scheduler gang / topology performance tests (5,000 nodes of 4 CPU, 32Gi,
110 pods in racks of 100; many 4-pod rack-local gangs, or a few 1,000-pod gangs)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gangsched.cluster.state import ClusterState
from gangsched.gang import Group
from gangsched.placement import place
from gangsched.testing.builders import GiB, cons, group, levels_of, nodes, podset

SHAPE = (("rack", 50), ("host", 100))
NODE = {"cpu": 4_000, "memory": 32 * GiB, "pods": 110}
MiB = 1 << 20
# upstream kube-scheduler, same shapes, binding through an API server
UPSTREAM_PODS_PER_S = (492, 975)


def small_gang(i: int) -> Group:
    p = f"gang-{i}"
    return group(p, [podset(p + "/w", 4, cpu=100, extra={"memory": 100 * MiB})],
                 topology=cons("rack"))


def large_gang(i: int) -> Group:
    p = f"big-{i}"
    return group(p, [podset(p + "/w", 1_000, cpu=100, extra={"memory": 100 * MiB})])


CASES: dict[str, tuple[Callable[[int], Group], int]] = {
    "750 gangs x 4 (rack)": (small_gang, 750),
    "1,500 gangs x 4 (rack)": (small_gang, 1_500),
    "2,250 gangs x 4 (rack)": (small_gang, 2_250),
    "3 gangs x 1,000": (large_gang, 3),
    "6 gangs x 1,000": (large_gang, 6),
    "9 gangs x 1,000": (large_gang, 9),
}


@dataclass
class ThroughputCase:
    case: str
    gangs: int
    admitted: int
    pods: int
    seconds: float
    pods_per_s: float
    gangs_per_s: float


@dataclass
class ThroughputBench:
    nodes: int
    cases: list[ThroughputCase] = field(default_factory=list)
    upstream_pods_per_s: tuple[int, int] = UPSTREAM_PODS_PER_S

    def as_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "upstream_pods_per_s": list(self.upstream_pods_per_s),
                "cases": [asdict(c) for c in self.cases]}


def run_throughput_bench(
    cases: Sequence[str] = tuple(CASES), progress: Callable[[str], None] | None = None
) -> ThroughputBench:
    node_list = nodes(SHAPE, NODE)
    result = ThroughputBench(nodes=len(node_list))
    warm = ClusterState.from_nodes(node_list, levels_of(SHAPE))
    for make, _ in CASES.values():  # first calls (imports, numpy) are not throughput
        place(make(-1), warm)
    for name in cases:
        make, count = CASES[name]
        if progress:
            progress(name)
        state = ClusterState.from_nodes(node_list, levels_of(SHAPE))
        units = [make(i) for i in range(count)]
        gc.collect()
        gc.freeze()  # long-lived cluster and queue: out of the collector's way
        t = time.perf_counter()
        decisions = [place(u, state) for u in units]
        seconds = time.perf_counter() - t
        pods = sum(d.placed for d in decisions)
        admitted = sum(d.admitted for d in decisions)
        gc.unfreeze()
        result.cases.append(ThroughputCase(
            case=name, gangs=count, admitted=admitted, pods=pods, seconds=seconds,
            pods_per_s=pods / seconds, gangs_per_s=admitted / seconds,
        ))
    return result
