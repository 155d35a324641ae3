"""The Alibaba v2025 disaggregated DLRM trace as a scenario: the shipped data, the node
assumptions, apps as gangs of their CN and HN roles, windows per seed."""

from __future__ import annotations

from gangsched.gang import Group, PodSet
from gangsched.sim.disagg2025 import (
    GPU,
    MEMORY_PER_CORE,
    RDMA,
    disagg2025,
    instances,
    nodes,
)
from gangsched.sim.inputs import ScenarioRequest, build_scenario


def test_the_shipped_trace_is_complete() -> None:
    every = instances()
    assert len(every) == 23_871
    assert len({i.app for i in every}) == 156
    assert {i.role for i in every} == {"CN", "HN"}
    ns = nodes()
    assert len(ns) == 4_278
    assert sum(n.allocatable[GPU] for n in ns) == 10_412
    n = ns[0]
    assert n.allocatable["memory"] == n.allocatable["cpu"] // 1000 * MEMORY_PER_CORE
    assert n.allocatable[RDMA] == 100


def test_apps_at_the_start_are_gangs_of_both_roles() -> None:
    sc = disagg2025(0, days=0.25, scale=0.1)
    bases = [it for it in sc.items if it.kind == "deployment"]
    assert bases and all(it.arrival == 0.0 for it in bases)
    both = [it for it in bases if len(it.workload.tree.children) == 2]  # type: ignore[union-attr]
    assert both, "some app has both roles at the start"
    tree = both[0].workload.tree
    assert isinstance(tree, Group) and tree.min_groups == 2
    roles = {c.name: c for c in tree.children}
    assert set(roles) == {"cn", "hn"}
    hn = roles["hn"]
    assert isinstance(hn, PodSet) and hn.min_pods == hn.size  # every instance required
    assert hn.requests[GPU] == 1 and RDMA in hn.requests
    ups = [it for it in sc.items if it.kind == "scale-up"]
    assert all(0 < it.arrival < sc.horizon for it in ups)


def test_seeds_are_consecutive_windows_and_it_runs() -> None:
    req = ScenarioRequest(scenario="alibaba-disagg-2025",
                          knobs=(("days", 0.25), ("scale", 0.05), ("warmup_hours", 0.5)))
    a, b = build_scenario(req), build_scenario(req.with_seed(1))
    assert a.parameters["window_start_days"] == 0.0
    assert b.parameters["window_start_days"] == 0.25
    assert a.gpu_resource == "cpu"  # cores are what these pods compete for
