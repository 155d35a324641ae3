"""The runner: arrivals, admissions, completions on simulated time, waits, job clocks that
pause while a job is preempted, samples, progress, determinism."""

from __future__ import annotations

import pytest

from gangsched.sim.metrics import deterministic, summarize
from gangsched.sim.policies import make_policy
from gangsched.sim.result import PolicyRun
from gangsched.sim.runner import RunConfig, run_policy, simulate
from gangsched.sim.scenarios import GPU_NODE, cluster
from gangsched.sim.trace import RoleSpec, TraceItem, WorkloadSpec, build

GPU = "nvidia.com/gpu"
NODES, LEVELS = cluster([("rack", 1), ("host", 2)], GPU_NODE)  # 2 nodes, 16 GPUs


def job(name: str, arrival: float, duration: float | None, pods: int = 2,
        priority: int = 0) -> TraceItem:
    return build(WorkloadSpec(name, arrival, [RoleSpec("w", pods, {"cpu": 1000, GPU: 8})],
                              duration=duration, priority=priority))


def run(items: list[TraceItem], horizon: float = 300.0, policy: str = "gangsched",
        **kw: object) -> PolicyRun:
    cfg = RunConfig(horizon=horizon, sample_interval=60.0)
    return run_policy(make_policy(policy), NODES, LEVELS, items, cfg, **kw)  # type: ignore


def test_a_job_is_admitted_on_arrival_and_finishes_after_its_duration() -> None:
    r = run([job("a", 10.0, 100.0)])
    (u,) = r.units
    assert (u.arrival, u.admitted, u.finished, u.wait) == (10.0, 10.0, 110.0, 0.0)
    assert (u.pods_min, u.pods_desired, u.gpus_min, u.max_pods) == (2, 2, 16, 2)
    assert u.gpu_hours == pytest.approx(16 * 100 / 3600)
    assert u.wasted_gpu_hours == 0.0 and u.partial_seconds == 0.0
    assert [s.time for s in r.samples] == [0.0, 60.0, 120.0, 180.0, 240.0, 300.0]
    assert r.samples[1].gpu_allocated == 1.0 and r.samples[1].gpu_useful == 1.0
    assert r.samples[2].gpu_allocated == 0.0
    s = summarize(r, 300.0)
    assert s["finished"] == 1 and s["completion_p50"] == 100.0 and s["locality"] == 1.0


def test_a_job_that_does_not_fit_waits_for_the_one_before_it() -> None:
    r = run([job("a", 0.0, 100.0), job("b", 5.0, 50.0)])
    a, b = r.units
    assert a.finished == 100.0
    assert b.admitted == 100.0 and b.wait == 95.0 and b.finished == 150.0
    assert b.max_pods == 2 and b.wasted_gpu_hours == 0.0


def test_services_run_to_the_horizon() -> None:
    r = run([job("svc", 0.0, None)], horizon=120.0)
    (u,) = r.units
    assert u.finished is None and u.duration is None
    assert u.gpu_hours == pytest.approx(16 * 120 / 3600)


def test_a_preempted_job_pauses_its_clock_and_finishes_later() -> None:
    low = job("low", 0.0, 100.0)
    high = job("high", 50.0, 30.0, priority=10)
    r = run([low, high])
    lo, hi = sorted(r.units, key=lambda u: u.priority)
    assert hi.admitted == 50.0 and hi.finished == 80.0
    assert lo.preemptions == 1 and lo.evictions == 2
    assert lo.finished == 130.0  # ran 50 s, waited 30 s, ran the remaining 50 s
    assert r.preemptions == 1 and r.evictions == 2


def test_progress_reports_simulated_time_per_policy() -> None:
    seen: list[tuple[str, float, float]] = []
    run([job("a", 0.0, 10.0)], horizon=150.0,
        progress=lambda p, t, h: seen.append((p, t, h)))
    assert seen[0] == ("gangsched", 0.0, 150.0)
    assert seen[-1] == ("gangsched", 150.0, 150.0)


def test_simulate_runs_every_policy_on_the_same_inputs_deterministically() -> None:
    items = [job("a", 0.0, 100.0), job("b", 5.0, 50.0, pods=1), job("c", 7.0, None)]
    cfg = RunConfig(horizon=300.0)
    policies = ["gangsched", "pod-by-pod"]
    one = simulate("t", 0, NODES, LEVELS, items, [make_policy(p) for p in policies], cfg)
    two = simulate("t", 0, NODES, LEVELS, items, [make_policy(p) for p in policies], cfg)
    assert [p.policy for p in one.policies] == policies
    assert (one.nodes, one.gpus) == (2, 16)
    assert one.parameters["scheduler"]["backoff_initial"] == 30.0
    for a, b in zip(one.policies, two.policies, strict=True):
        assert deterministic(summarize(a, 300.0)) == deterministic(summarize(b, 300.0))


def test_the_gpu_count_is_summed_past_int64() -> None:
    from gangsched.sim.runner import empty_result
    from gangsched.testing.builders import node

    nodes = [node(f"n{i}", {"kubernetes.io/hostname": f"n{i}"}, gpu=2**62) for i in range(3)]
    result = empty_result("s", 0, nodes, ["kubernetes.io/hostname"], RunConfig(horizon=60.0))
    assert result.gpus == 3 * 2**62
