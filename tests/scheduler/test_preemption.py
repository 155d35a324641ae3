"""Workload-aware preemption (KEP-5710): whole ``all`` groups, surplus of ``single``
ones, victims inside one candidate domain, nothing evicted unless the dry run fits."""

from __future__ import annotations

import numpy as np
import pytest
from sched_helpers import World, racks, world

from gangsched.gang import Group
from gangsched.placement import place
from gangsched.scheduler import GangschedPolicy, Scheduler, UnitState, preemption
from gangsched.scheduler.preemption import Search, find_preemption
from gangsched.testing.builders import cons, group, podset, replicas


def gang(name: str, pods: int, *, gpu: int = 8, disruption: str = "single",
         min_pods: int | None = None) -> Group:
    g = group(name, [podset(f"{name}/w", pods, gpu=gpu, min_pods=min_pods)])
    g.disruption = "all" if disruption == "all" else "single"
    return g


def disaggregated(name: str) -> Group:
    """One prefill and two decode replicas (one 8-GPU pod each), all in one rack."""
    return group(name, [
        replicas(f"{name}/prefill", 1, pods=1, gpu=8),
        replicas(f"{name}/decode", 2, pods=1, gpu=8),
    ], topology=cons("rack"))


def test_high_priority_disaggregated_unit_preempts_an_all_group_whole() -> None:
    w = world()  # racks z0-r0 and z0-r1, 4 nodes of 8 GPUs each
    w.submit(gang("low", 6, disruption="all"))  # r0 x4 and r1 x2
    w.submit(gang("mid", 2))  # the last two nodes of r1
    w.cycle()
    assert racks(w.bound("low")) == {"z0-r0", "z0-r1"} and len(w.bound("mid")) == 2
    w.submit(disaggregated("high"), priority=10)
    rep = w.sched.run_cycle()
    # rack r0 costs one victim (low, taken whole: its two pods in r1 go too); rack r1
    # would cost two (low and mid)
    assert rep.admitted == 1 and rep.preempted == 1 and rep.evicted_pods == 6
    assert racks(w.bound("high")) == {"z0-r0"} and len(w.bound("high")) == 3
    assert w.bound("low") == {}
    assert len(w.bound("mid")) == 2
    st = w.sched.status()
    assert st["high"].state == UnitState.admitted and st["high"].domain == "z0-r0"
    assert st["low"].state == UnitState.evicted and st["low"].preemptions == 1
    pre = [e for e in w.sched.events if e.kind == "Preempted"]
    assert [(e.unit, e.time) for e in pre] == [("low", 0.0)]
    assert "preempted by high (priority 10)" in pre[0].message and "z0-r0" in pre[0].message
    admitted = [e for e in w.sched.events if e.kind == "Admitted" and e.unit == "high"]
    assert admitted[0].message.endswith("after preempting low")
    # requeued whole: it does not fit any more (3 free nodes for 6 pods) and cannot
    # preempt anyone; not one of its pods is bound
    w.cycle(1.0)
    assert w.state("low") == "pending" and w.bound("low") == {}


def test_victims_that_would_not_make_room_are_not_evicted() -> None:
    w = world()
    w.submit(gang("top", 6), priority=20)  # r0 x4, r1 x2: may not be preempted
    w.submit(gang("low", 2, disruption="all"))  # the last two nodes of r1
    w.cycle()
    w.submit(disaggregated("high"), priority=10)
    rep = w.sched.run_cycle()
    # evicting low frees two nodes of r1; high needs three in one rack
    assert rep.admitted == 0 and rep.preempted == 0 and rep.evicted_pods == 0
    assert w.backend.evictions == []
    assert len(w.bound("low")) == 2 and len(w.bound("top")) == 6
    assert w.state("high") == "pending" and w.bound("high") == {}
    assert "Preempted" not in w.kinds()
    last = w.sched.events[-1]
    assert last.kind == "Unschedulable" and "would not make room" in last.message


def test_a_single_unit_loses_only_pods_above_its_minimum() -> None:
    w = world()
    w.submit(gang("top", 4), priority=20)  # all of r0
    w.submit(gang("elastic", 4, min_pods=2))  # all of r1, two of them extras
    w.cycle()
    w.submit(group("high", [podset("high/w", 2, gpu=8)], topology=cons("rack")), priority=10)
    rep = w.sched.run_cycle()
    assert rep.admitted == 1 and rep.evicted_pods == 2
    assert sorted(w.bound("elastic")) == ["default/elastic-w-0", "default/elastic-w-1"]
    assert racks(w.bound("high")) == {"z0-r1"}
    st = w.sched.status()["elastic"]
    # minimum first: the extras are taken back for high's minimum (a reclaim, not a
    # preemption of the unit)
    assert st.state == UnitState.admitted and st.pods_bound == 2 and st.preemptions == 0
    assert "Reclaimed" in w.kinds("elastic")
    assert [p for _, p, _ in w.backend.evictions] == ["default/elastic-w-3",
                                                      "default/elastic-w-2"]


def test_lowest_priority_victims_first() -> None:
    w = world()
    w.submit(gang("p1", 4, disruption="all"), priority=1)
    w.submit(gang("p5", 4, disruption="all"), priority=5)
    w.cycle()
    assert racks(w.bound("p5")) == {"z0-r0"} and racks(w.bound("p1")) == {"z0-r1"}
    w.submit(disaggregated("high"), priority=10)
    w.cycle()
    assert racks(w.bound("high")) == {"z0-r1"}
    assert w.bound("p1") == {} and len(w.bound("p5")) == 4


def test_equal_priority_never_preempts() -> None:
    w = world()
    w.submit(gang("a", 8))
    w.cycle()
    w.submit(gang("b", 1))
    w.cycle()
    assert len(w.bound("a")) == 8 and w.bound("b") == {}
    assert "Preempted" not in w.kinds()


def test_policy_without_preemption_evicts_nothing() -> None:
    w = world()
    w.sched = Scheduler(w.backend, w.clock, w.sched.config,
                        GangschedPolicy(preemption=False))
    w.submit(gang("low", 8))
    w.cycle()
    w.submit(gang("high", 2), priority=10)
    w.cycle()
    assert w.bound("high") == {} and len(w.bound("low")) == 8
    assert w.backend.evictions == []


def test_unconstrained_preemptor_takes_the_whole_cluster_as_its_domain() -> None:
    w = world()
    w.submit(gang("low", 8))  # min 8 of 8: nothing above its minimum
    w.cycle()
    w.submit(gang("high", 2), priority=10)
    w.cycle()
    assert len(w.bound("high")) == 2 and w.bound("low") == {}
    pre = next(e for e in w.sched.events if e.kind == "Preempted")
    assert pre.unit == "low" and pre.message.endswith("in cluster")


def _elastic_racks(surplus: list[int]) -> World:
    """One rack of four 8-GPU nodes per entry, each filled by an elastic unit of four
    pods held in its rack, ``surplus[i]`` of them above its minimum (extras bound too)."""
    w = world((("zone", 1), ("rack", len(surplus)), ("host", 4)))
    for i, extra in enumerate(surplus):
        w.submit(group(f"e{i}", [podset(f"e{i}/w", 4, gpu=8, min_pods=4 - extra)],
                       topology=cons("rack")))
        w.cycle()
        w.cycle(60.0)  # the extras grow after the queue
    assert [racks(w.bound(f"e{i}")) for i in range(len(surplus))] == [
        {f"z0-r{i}"} for i in range(len(surplus))]
    assert all(len(w.bound(f"e{i}")) == 4 for i in range(len(surplus)))
    return w


def _search(w: World, tree: Group, *, surplus_only: bool = False,
            budget: int = 64) -> Search:
    sched = w.sched
    running = [u for u in sched.units.values() if u.running]
    hidden = np.zeros(0, dtype=np.int64)
    return find_preemption(tree, 10, running, sched.state, lambda t, s: place(t, s),
                           hidden, budget, surplus_only=surplus_only)


@pytest.mark.parametrize(("nodes", "rack", "evicted"), [(1, "r1", 1), (2, "r3", 2)])
def test_domains_whose_cheapest_victim_cannot_beat_the_best_plan_are_not_dry_run(
        monkeypatch: pytest.MonkeyPatch, nodes: int, rack: str, evicted: int) -> None:
    # racks r0..r3 offer 3, 1, 1, 2 surplus pods (one node each); the preemptor needs
    # ``nodes`` nodes in one rack. One node: r1's one pod is the cheapest plan (r2 ties it
    # and comes later, r3 cannot beat it). Two nodes: one pod of r1 or r2 frees too little
    # by the capacity bound, so a plan there takes two units; r3's two pods beat r0's three
    w = _elastic_racks([3, 1, 1, 2])
    tree = group("high", [podset("high/w", nodes, gpu=8)], topology=cons("rack"))
    pruned = _search(w, tree, surplus_only=True)
    monkeypatch.setattr(preemption, "_least", lambda victims, alone: (0, 0, 0))
    full = _search(w, tree, surplus_only=True)
    assert full.plan is not None and pruned.plan is not None
    # the same plan, found with fewer dry runs
    assert (pruned.plan.domain, pruned.plan.victims) == (full.plan.domain, full.plan.victims)
    assert pruned.plan.domain.endswith(rack) and pruned.plan.cost == (1, 0, evicted)
    assert pruned.dry_runs < full.dry_runs


def test_nothing_to_reclaim_is_found_without_a_dry_run() -> None:
    w = _elastic_racks([0, 0])  # minimums only: nothing above them to reclaim
    tree = group("high", [podset("high/w", 1, gpu=8)], topology=cons("rack"))
    got = _search(w, tree, surplus_only=True)
    assert got.plan is None and got.dry_runs == 0
    assert got.notes == ["no pods above a minimum to reclaim"]


def test_a_domain_with_nothing_to_evict_is_not_dry_run() -> None:
    w = _elastic_racks([0, 1])  # r0 runs its minimum only; r1 one pod above it
    tree = group("high", [podset("high/w", 1, gpu=8)], topology=cons("rack"))
    got = _search(w, tree, surplus_only=True)
    # r1's one pod, proven by one dry run; r0 is not tried
    assert got.plan is not None and got.plan.domain.endswith("r1")
    assert got.plan.victims[0].pods == ("default/e1-w-3",) and got.dry_runs == 1
