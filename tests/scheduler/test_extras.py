"""Elastic extras inside pinned domains, and scaling a running unit."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sched_helpers import World, racks, world

from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, PodSet, minimum_pods
from gangsched.placement.decision import Decision
from gangsched.scheduler import (
    FakeClock,
    GangschedPolicy,
    InMemoryBackend,
    Scheduler,
    SchedulerConfig,
    UnitState,
    make_workload,
)
from gangsched.testing.builders import HOST, RACK, cons, group, node, podset


def elastic(pods: int, *, gpu: int = 4, min_pods: int = 4) -> Group:
    return group("u", [podset("u/w", pods, gpu=gpu, min_pods=min_pods)], topology=cons("rack"))


def test_extras_placed_in_a_later_cycle_stay_inside_the_pinned_rack() -> None:
    w = world(config=SchedulerConfig(extras_interval=10.0))
    w.submit(group("f0", [podset("f0/w", 3, gpu=8)], topology=cons("rack")))  # 3 nodes of r0
    w.submit(group("f1", [podset("f1/w", 2, gpu=8)], topology=cons("rack")))  # 2 nodes of r1
    w.cycle()
    assert racks(w.bound("f0")) == {"z0-r0"} and racks(w.bound("f1")) == {"z0-r1"}
    # 12 pods of 4 GPUs, at least 4 in one rack: r0 holds 2, r1 holds 4
    w.submit(elastic(12))
    w.cycle(1.0)
    assert len(w.bound("u")) == 4 and racks(w.bound("u")) == {"z0-r1"}
    assert w.sched.status()["u"].domain == "z0-r1"
    # room appears in both racks; r0 is now the emptier one
    w.clock.set(2.0)
    w.backend.remove_workload("f0")
    w.backend.remove_workload("f1")
    w.cycle()
    assert len(w.bound("u")) == 4  # extras wait for their interval
    assert w.sched.next_wakeup() == 11.0
    w.clock.set(11.0)
    w.sched.run_cycle()
    assert len(w.bound("u")) == 8 and racks(w.bound("u")) == {"z0-r1"}
    ev = [e for e in w.sched.events if e.kind == "Extras"]
    assert [(e.unit, e.time, e.message) for e in ev] == [("u", 11.0, "placed 4 more pods (8/12)")]
    st = w.sched.status()["u"]
    assert st.state == UnitState.admitted and (st.pods_bound, st.minimum, st.desired) == (8, 4, 12)
    # the rack is full: later tries place nothing, and nothing outside r1
    w.run_until(41.0, step=10.0)
    assert len(w.bound("u")) == 8 and racks(w.bound("u")) == {"z0-r1"}


def test_scale_down_keeps_running_pods_the_domain_and_the_minimum() -> None:
    w = world()
    w.submit(elastic(8, gpu=2))  # 8 pods on 2 nodes of one rack
    w.cycle()
    before = w.bound("u")
    assert len(before) == 8 and racks(before) == {"z0-r0"}
    w.clock.advance(5.0)
    w.backend.submit(make_workload(elastic(5, gpu=2), name="u"))  # same name: scale to 5
    rep = w.sched.run_cycle()
    after = w.bound("u")
    assert rep.evicted_pods == 3
    assert after == {p: n for p, n in before.items() if p in after}  # nothing moved
    assert sorted(after) == [f"default/u-w-{i}" for i in range(5)]
    assert [p for _, p, _ in w.backend.evictions] == ["default/u-w-7", "default/u-w-6",
                                                      "default/u-w-5"]  # highest index first
    st = w.sched.status()["u"]
    assert st.state == UnitState.admitted and st.admitted_at == 0.0
    assert (st.pods_bound, st.minimum, st.desired, st.domain) == (5, 4, 5, "z0-r0")
    assert w.kinds("u") == ["Admitted", "Extras", "Scaled"]  # extras after the minimums
    # scaling down to the minimum evicts one more, never a pod below it
    w.backend.submit(make_workload(elastic(4, gpu=2), name="u"))
    w.cycle(1.0)
    assert sorted(w.bound("u")) == [f"default/u-w-{i}" for i in range(4)]
    assert w.state("u") == "admitted"


def test_scale_up_adds_extras_inside_the_same_rack() -> None:
    w = world(config=SchedulerConfig(extras_interval=10.0))
    w.submit(elastic(4))  # 4 pods of 4 GPUs: two nodes of r0
    w.cycle()
    before = w.bound("u")
    assert racks(before) == {"z0-r0"}
    w.clock.advance(1.0)
    w.backend.submit(make_workload(elastic(10), name="u"))  # scale up to 10
    rep = w.sched.run_cycle()
    # the new pods are extras of the running unit: r0 takes 4 more; r1 is empty but
    # not its domain, so the last two wait
    after = w.bound("u")
    assert rep.bound_pods == 4 and len(after) == 8 and racks(after) == {"z0-r0"}
    assert all(after[p] == n for p, n in before.items())
    st = w.sched.status()["u"]
    assert st.state == UnitState.admitted and (st.pods_bound, st.desired) == (8, 10)
    assert w.kinds("u") == ["Admitted", "Scaled", "Extras"]


@pytest.mark.parametrize("levels", [[RACK], [RACK, HOST]])
def test_extras_pinned_to_a_host_find_it_when_its_hostname_label_is_not_its_name(
        levels: list[str]) -> None:
    """A node named node-a whose hostname label is host-a (kubelet --hostname-override):
    a set required on one host gets its minimum while a blocker holds half the node, and
    its extra pod once the blocker leaves (the pin named host-a where the engine's hosts
    are node names, so the extra never fitted)."""
    clock = FakeClock()
    backend = InMemoryBackend([node("node-a", {HOST: "host-a", RACK: "r0"})], clock)
    w = World(clock, backend, Scheduler(backend, clock, SchedulerConfig(
        levels=levels, extras_interval=5.0)))
    w.submit(podset("blocker", 1, gpu=4))
    w.cycle()
    w.submit(podset("w", 2, gpu=4, min_pods=1, topology=cons("host")))
    w.cycle(1.0)
    assert len(w.bound("w")) == 1
    w.backend.remove_workload("blocker")
    for _ in range(4):
        w.cycle(5.0)
    assert w.bound("w") == {"default/w-0": "node-a", "default/w-1": "node-a"}


class _OnePodAtATime(GangschedPolicy):
    """The engine's extras, one pod per try: a try that places part of what fits (a
    residual may leave a sibling satisfied by nothing for later)."""

    def place(self, unit: Group | PodSet, state: ClusterState) -> Decision:
        d = super().place(unit, state)
        if d.admitted and minimum_pods(unit) == 0 and len(d.assignments) > 1:
            first = next(iter(d.assignments.items()))
            d = replace(d, assignments=dict([first]), extra_pods=1)
        return d


def test_extras_keep_growing_after_a_try_that_placed_only_some_of_what_fits() -> None:
    """With room for all 4 pods and nothing freed after the first try, the unit reaches
    4/4 one try per interval (it stopped at 2/4: a try that placed pods marked the unit as
    tried until capacity was next freed)."""
    w = world(config=SchedulerConfig(extras_interval=5.0), policy=_OnePodAtATime(whole=False))
    w.submit(group("f", [podset("f/w", 4, gpu=8)], topology=cons("rack")))  # r0 full
    w.cycle()
    w.submit(group("u", [podset("u/w", 4, gpu=8, min_pods=1)], topology=cons("rack")))
    w.cycle(1.0)
    assert len(w.bound("u")) == 2  # its minimum, and one extra in the same cycle
    for _ in range(8):
        w.cycle(5.0)
    assert len(w.bound("u")) == 4 and racks(w.bound("u")) == {"z0-r1"}
