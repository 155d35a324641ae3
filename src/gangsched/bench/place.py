"""``bench place``: decision latency of the engine on large clusters, against a floor.

The floor is one vectorized fit + domain-sum pass (the least any topology-aware decision
must do) on the same cluster, timed in the same run, so the ratio survives a noisy machine.
Two latencies per case: dry runs on a warm snapshot, and *committed* decisions (each
placement committed, so the next decision first brings the cached capacities up to date;
the pods are handed back, untimed, so the cluster stays as loaded). Each is measured as
wall time and as CPU time of this process (the machine is shared); the floor too, so the
committed CPU p99 is a ratio of CPU times (``commit_cpu_p99_ratio``). ``pods_per_s`` and
``cpu_pods_per_s`` are the case's pods over its committed p50 latency (wall, CPU).

With ``repeats`` above one, each case's decisions are timed that many times, each run
against the floor measured right before it, and every figure reported is the median over
the runs: a p99 of 200 decisions is about their second largest, so on a shared machine
one run's p99 is mostly its noisiest moment.
"""

from __future__ import annotations

import gc
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gangsched.cluster.state import ClusterState, Shape
from gangsched.gang import Group, podsets
from gangsched.placement import place
from gangsched.scheduler.capacity import tally
from gangsched.testing.builders import GPU, RACK, cons, group, levels_of, nodes, podset, replicas

SIZES: dict[int, tuple[tuple[str, int], ...]] = {
    512: (("zone", 2), ("block", 4), ("rack", 4), ("host", 16)),
    5_000: (("zone", 5), ("block", 5), ("rack", 10), ("host", 20)),
    15_000: (("zone", 5), ("block", 10), ("rack", 15), ("host", 20)),
    50_000: (("zone", 5), ("block", 25), ("rack", 20), ("host", 20)),
    200_000: (("zone", 5), ("block", 50), ("rack", 40), ("host", 20)),  # opt-in: --sizes
}
DEFAULT_SIZES = (512, 5_000, 15_000, 50_000)
NODE = {"cpu": 128_000, "memory": 1 << 40, GPU: 8, "pods": 110}
GPU_USED = (0, 2, 4, 8)  # background load per node of a busy rack, drawn uniformly
BUSY_RACKS = 0.4  # share of racks running other work


def rack_gang(i: int) -> Group:
    return group(f"rack4-{i}", [podset(f"rack4-{i}/w", 4, gpu=8)], topology=cons("rack"))


def disagg(i: int) -> Group:
    """KAI's scale-test shape: prefill 4x8 GPUs in one rack, decode 8x4 GPUs preferably in
    one block, two CPU-only frontends, all in one zone."""
    p = f"disagg-{i}"
    return group(p, [
        replicas(f"{p}/prefill", 1, pods=4, gpu=8, topology=cons("rack")),
        replicas(f"{p}/decode", 1, pods=8, gpu=4, topology=cons("block~")),
        podset(f"{p}/frontend", 2, cpu=4_000),
    ], topology=cons("zone"))


def training(i: int) -> Group:
    """1,024 pods of 8 GPUs in 64 rack-local slices of 16."""
    p = f"train-{i}"
    return group(p, [
        group(f"{p}/slice-{j}", [podset(f"{p}/slice-{j}/w", 16, gpu=8)], topology=cons("rack"))
        for j in range(64)
    ])


def wide(i: int) -> Group:
    """1,024 pods of 8 GPUs, no topology constraint: a wide gang."""
    return group(f"wide-{i}", [podset(f"wide-{i}/w", 1024, gpu=8)])


CASES: dict[str, tuple[Callable[[int], Group], int]] = {
    "rack-gang-4": (rack_gang, 4),
    "disagg-kai": (disagg, 14),
    "training-1024": (training, 1024),
}
# run only when asked for by name (run_place_bench(cases=...))
EXTRA_CASES: dict[str, tuple[Callable[[int], Group], int]] = {
    "wide-1024": (wide, 1024),
}


@dataclass
class CaseResult:
    nodes: int
    case: str
    pods: int
    decisions: int
    admitted: int
    p50_us: float
    p99_us: float
    floor_us: float
    p50_ratio: float
    p99_ratio: float
    cpu_p50_us: float = 0.0  # dry runs, CPU time
    cpu_p99_us: float = 0.0
    commit_p50_us: float = 0.0  # committed decisions, wall
    commit_p99_us: float = 0.0
    commit_cpu_p50_us: float = 0.0
    commit_cpu_p99_us: float = 0.0
    commit_cpu_p99_ratio: float = 0.0  # committed CPU p99 / floor CPU time
    floor_cpu_us: float = 0.0  # the floor in CPU time
    pods_per_s: float = 0.0  # pods / committed wall p50
    cpu_pods_per_s: float = 0.0  # pods / committed CPU p50
    repeats: int = 1  # runs of the case; each figure above is the median over them


@dataclass
class PlaceBench:
    cases: list[CaseResult] = field(default_factory=list)
    build_s: dict[int, float] = field(default_factory=dict)
    peak_rss_mib: dict[int, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": [asdict(c) for c in self.cases],
            "build_s": self.build_s,
            "peak_rss_mib": self.peak_rss_mib,
        }


def loaded_cluster(n: int, seed: int = 0) -> ClusterState:
    """A cluster of ``n`` nodes from SIZES with seeded background GPU load: a share of the
    racks run other work (random GPUs used per node), the others are free."""
    shape = SIZES[n]
    state = ClusterState.from_nodes(nodes(shape, NODE), levels_of(shape))
    rng = np.random.default_rng(seed)
    racks = state.topology.level(RACK)
    assert racks is not None
    busy_rack = rng.random(len(racks)) < BUSY_RACKS
    used = np.asarray(GPU_USED)[rng.integers(0, len(GPU_USED), state.n_nodes)]
    used[~busy_rack[racks.node_domain]] = 0
    busy = np.flatnonzero(used)
    txn = state.begin()
    txn.place(busy, used[busy], state.shape({GPU: 1}))
    txn.commit()
    return state


def floor_us(state: ClusterState, level_key: str = RACK, reps: int = 200,
             clock: Callable[[], float] = time.perf_counter) -> float:
    """Median time (``clock``: wall by default) of one fit + domain-sum pass for an 8-GPU
    pod over the whole cluster."""
    lv = state.topology.level(level_key)
    assert lv is not None
    shape = state.shape({"cpu": 1_000, GPU: 8, "pods": 1})
    free = state.free
    times = []
    for _ in range(reps):
        t = clock()
        f = free[shape.index[0]] // shape.amount[0]
        for r, a in zip(shape.index[1:], shape.amount[1:], strict=True):
            np.minimum(f, free[r] // a, out=f)
        np.add.reduceat(f, lv.starts)
        times.append(clock() - t)
    return float(np.median(times)) * 1e6


def _timed_runs(state: ClusterState, make: Callable[[int], Group], reps: int, *,
                commit: bool) -> tuple[list[float], list[float], int]:
    """(wall µs, CPU µs, admitted) of ``reps`` decisions; committed ones are handed back
    (untimed) so every decision sees the same load."""
    wall: list[float] = []
    cpu: list[float] = []
    admitted = 0
    for i in range(reps):
        unit = make(i)
        w, c = time.perf_counter(), time.process_time()
        d = place(unit, state, commit=commit)
        cpu.append((time.process_time() - c) * 1e6)
        wall.append((time.perf_counter() - w) * 1e6)
        admitted += d.admitted
        if commit and d.admitted:
            _hand_back(state, unit, d.assignments)
    return wall, cpu, admitted


def _hand_back(state: ClusterState, unit: Group, assignments: dict[str, str]) -> None:
    """Give the unit's pods back as the scheduler releases a finished gang
    (:func:`gangsched.scheduler.capacity.release`): one change per pod shape."""
    index = state.topology.index
    by_shape: dict[Shape, list[int]] = {}
    for ps in podsets(unit):
        by_shape.setdefault(state.shape(ps.requests), []).extend(
            index[assignments[p]] for p in ps.pods if p in assignments)
    for shape, js in by_shape.items():
        if js:
            nodes, counts = tally(js)
            state._apply(nodes, counts, shape, sign=+1)


def run_place_bench(
    sizes: Sequence[int] = DEFAULT_SIZES,
    cases: Sequence[str] = tuple(CASES),
    decisions: int = 200,
    progress: Callable[[str], None] | None = None,
    repeats: int = 1,
) -> PlaceBench:
    result = PlaceBench()
    for n in sizes:
        t = time.perf_counter()
        state = loaded_cluster(n)
        result.build_s[n] = time.perf_counter() - t
        gc.collect()
        gc.freeze()  # the cluster lives for the whole run: keep it out of GC passes
        for name in cases:
            make, pods = CASES[name] if name in CASES else EXTRA_CASES[name]
            reps = decisions  # as many for wide units: the p99 of fewer is about their max
            if progress:
                progress(f"{n:,} nodes: {name} x {reps}"
                         + (f", {repeats} runs" if repeats > 1 else ""))
            make(0)  # build cost of the tree is not decision latency
            # warm up, untimed: the capacity cache, and the first commit and hand-back (the
            # first catch-up after one pays one-time costs, such as numpy's lazy imports)
            warm = make(-1)
            d = place(warm, state, commit=True)
            if d.admitted:
                _hand_back(state, warm, d.assignments)
            place(warm, state, commit=False)
            runs = [_case_run(state, n, name, make, pods, reps) for _ in range(repeats)]
            result.cases.append(_median(runs))
        result.peak_rss_mib[n] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        del state
        gc.unfreeze()
    return result


def _case_run(state: ClusterState, n: int, name: str, make: Callable[[int], Group],
              pods: int, reps: int) -> CaseResult:
    """One run of a case: its floor (wall and CPU), then ``reps`` dry runs and ``reps``
    committed decisions."""
    floor = floor_us(state)
    floor_cpu = floor_us(state, clock=time.process_time)
    lat, cpu, admitted = _timed_runs(state, make, reps, commit=False)
    clat, ccpu, _ = _timed_runs(state, make, reps, commit=True)
    p50, p99 = (float(np.percentile(lat, q)) for q in (50, 99))
    return CaseResult(
        nodes=n, case=name, pods=pods, decisions=reps, admitted=admitted,
        p50_us=p50, p99_us=p99, floor_us=floor,
        p50_ratio=p50 / floor, p99_ratio=p99 / floor,
        cpu_p50_us=float(np.percentile(cpu, 50)),
        cpu_p99_us=float(np.percentile(cpu, 99)),
        commit_p50_us=float(np.percentile(clat, 50)),
        commit_p99_us=float(np.percentile(clat, 99)),
        commit_cpu_p50_us=float(np.percentile(ccpu, 50)),
        commit_cpu_p99_us=float(np.percentile(ccpu, 99)),
        commit_cpu_p99_ratio=float(np.percentile(ccpu, 99)) / floor_cpu,
        floor_cpu_us=floor_cpu,
        pods_per_s=pods / float(np.percentile(clat, 50)) * 1e6,
        cpu_pods_per_s=pods / float(np.percentile(ccpu, 50)) * 1e6,
    )


def _median(runs: list[CaseResult]) -> CaseResult:
    """The runs of one case as one result: every timed figure (and ratio) the median over
    the runs, each ratio taken within its own run; the fewest admitted."""
    if len(runs) == 1:
        return runs[0]
    rows = [asdict(r) for r in runs]
    out = dict(rows[0])
    for key, value in out.items():
        if isinstance(value, float):
            out[key] = float(np.median([r[key] for r in rows]))
    out["admitted"] = min(r.admitted for r in runs)
    out["repeats"] = len(runs)
    return CaseResult(**out)
