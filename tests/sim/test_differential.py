"""The differences the simulator exists to show are real (the issue's differential tests).

1. Two disaggregated deployments that cannot both fit: gangsched runs one and holds
   nothing for the other; pod-by-pod and flat-gang leave the second partly placed,
   holding GPUs it cannot use.
2. Resource stealing: a deployment whose minimum fits, but not its greedy extras first:
   gangsched admits it, cpg-alpha (KEP-6012 alpha) rejects it.
"""

from __future__ import annotations

from gangsched.sim.metrics import seed_summary
from gangsched.sim.policies import make_policy
from gangsched.sim.result import SimResult
from gangsched.sim.runner import RunConfig, simulate
from gangsched.sim.scenarios import GPU_NODE, cluster
from gangsched.sim.trace import RoleSpec, TraceItem, WorkloadSpec, build

GPU = "nvidia.com/gpu"
G8 = {"cpu": 8000, GPU: 8}
HORIZON = 3600.0


def deployment(name: str, arrival: float, prefill: int, decode: int,
               min_prefill: int | None = None) -> TraceItem:
    return build(WorkloadSpec(name, arrival, [
        RoleSpec("prefill", prefill, G8, min_replicas=min_prefill),
        RoleSpec("decode", decode, G8),
    ], duration=None, kind="inference"))


def run(items: list[TraceItem], hosts: int, policies: list[str]) -> SimResult:
    nodes, levels = cluster([("rack", 1), ("host", hosts)], GPU_NODE)
    return simulate("crafted", 0, nodes, levels, items, [make_policy(p) for p in policies],
                    RunConfig(horizon=HORIZON, sample_interval=60.0))


def test_partial_deployments_hold_gpus_without_gangs_but_never_with_gangsched() -> None:
    # 4 nodes x 8 GPUs; each deployment needs 3 pods x 8 GPUs: only one fits
    items = [deployment("a", 0.0, 2, 1), deployment("b", 1.0, 2, 1)]
    result = run(items, 4, ["gangsched", "pod-by-pod", "flat-gang"])
    s = seed_summary(result)["policies"]
    ours = s["gangsched"]
    assert ours["admitted"] == 1 and ours["wasted_gpu_hours"] == 0.0
    assert ours["partial_units_max"] == 0
    for name in ("pod-by-pod", "flat-gang"):
        theirs = s[name]
        assert theirs["partial_units_max"] >= 1, name
        assert theirs["wasted_gpu_hours"] > 0.0, name
        # "b" holds GPUs below its minimum for most of the hour
        run_ = next(p for p in result.policies if p.policy == name)
        b = next(u for u in run_.units if u.workload == "default/b")
        assert b.admitted is None and b.max_pods >= 1, name
        assert b.wasted_gpu_hours > 0.5 * 8 * (HORIZON - 60) / 3600, name
        assert theirs["gpu_useful_mean"] < theirs["gpu_allocation_mean"], name


def test_cpg_alpha_rejects_what_gangsched_admits_through_resource_stealing() -> None:
    # 3 nodes x 8 GPUs; prefill wants 3 replicas (1 required), decode needs 1: the
    # minimum (1 + 1) fits, greedy prefill first (3) leaves no room for decode
    items = [deployment("s", 0.0, 3, 1, min_prefill=1)]
    result = run(items, 3, ["gangsched", "cpg-alpha"])
    s = seed_summary(result)["policies"]
    assert s["gangsched"]["admitted"] == 1
    assert s["cpg-alpha"]["admitted"] == 0
    ours = next(p for p in result.policies if p.policy == "gangsched").units[0]
    assert ours.max_pods == 3  # minimum plus one extra prefill
