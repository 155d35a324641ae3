"""Failures: lost nodes, repair in place, stale eviction, ``all`` units, bind rollback."""

from __future__ import annotations

from sched_helpers import rack_of, racks, world

from gangsched.gang import Group
from gangsched.scheduler import SchedulerConfig, UnitState
from gangsched.testing.builders import cons, group, podset, replicas


def service(name: str, disruption: str = "single") -> Group:
    """One prefill and two decode replicas (one 8-GPU pod each), all in one rack."""
    g = group(name, [
        replicas(f"{name}/prefill", 1, pods=1, gpu=8),
        replicas(f"{name}/decode", 2, pods=1, gpu=8),
    ], topology=cons("rack"))
    g.disruption = "all" if disruption == "all" else "single"
    return g


DECODE_0 = "default/svc-decode-decode-0-pods-0"


def test_lost_decode_pod_of_a_single_unit_is_repaired_inside_the_same_rack() -> None:
    w = world()
    w.submit(group("filler", [podset("filler/w", 2, gpu=8)]))  # two nodes of r0
    w.cycle()
    w.submit(service("svc"))  # does not fit r0's two free nodes: goes to r1
    w.cycle()
    assert racks(w.bound("svc")) == {"z0-r1"}
    w.backend.remove_workload("filler")  # r0 is empty now
    w.cycle(1.0)
    failed = w.bound("svc")[DECODE_0]
    w.clock.advance(1.0)
    w.backend.set_node_ready(failed, False)
    rep = w.sched.run_cycle()
    assert rep.repaired == 1 and rep.evicted_pods == 0
    now = w.bound("svc")
    assert len(now) == 3 and racks(now) == {"z0-r1"} and now[DECODE_0] != failed
    st = w.sched.status()["svc"]
    assert st.state == UnitState.admitted and st.domain == "z0-r1"
    assert w.kinds("svc") == ["Admitted", "Degraded", "Repaired"]
    assert [s for _, s, _ in st.history] == ["pending", "admitted", "running_degraded",
                                            "admitted"]


def test_single_unit_without_room_in_its_rack_is_evicted_whole_after_the_stale_timeout() -> None:
    w = world(config=SchedulerConfig(stale_timeout=30.0, backoff_initial=2.0))
    w.submit(service("svc"))  # three nodes of r0
    w.submit(group("other", [podset("other/w", 1, gpu=8)]))  # the fourth node of r0
    w.cycle()
    assert racks(w.bound("svc")) == {"z0-r0"} and racks(w.bound("other")) == {"z0-r0"}
    failed = w.bound("svc")[DECODE_0]
    w.clock.set(10.0)
    w.backend.set_node_ready(failed, False)
    w.cycle()
    st = w.sched.status()["svc"]
    assert st.state == UnitState.running_degraded and st.pods_bound == 2
    assert st.reason.startswith("repair:")
    # r1 has room, but repair stays inside r0 until the timeout
    w.run_until(39.0)
    assert w.state("svc") == "running_degraded" and racks(w.bound("svc")) == {"z0-r0"}
    wake = w.sched.next_wakeup()
    assert wake is not None and wake <= 40.0
    w.clock.set(40.0)
    w.sched.run_cycle()
    # evicted whole and requeued: placed again whole, in r1
    st = w.sched.status()["svc"]
    assert w.kinds("svc") == ["Admitted", "Degraded", "Evicted", "Admitted"]
    evicted = next(e for e in w.sched.events if e.kind == "Evicted")
    assert evicted.time == 40.0 and "not repaired within 30s" in evicted.message
    assert st.state == UnitState.admitted and st.domain == "z0-r1"
    assert racks(w.bound("svc")) == {"z0-r1"} and len(w.bound("svc")) == 3
    assert [s for _, s, _ in st.history][-3:] == ["running_degraded", "evicted", "admitted"]


def test_all_unit_below_its_minimum_is_evicted_whole_and_requeued() -> None:
    w = world()
    w.submit(service("svc", disruption="all"))
    w.cycle()
    failed = w.bound("svc")[DECODE_0]
    w.clock.advance(1.0)
    w.backend.remove_node(failed)
    rep = w.sched.run_cycle()
    assert rep.evicted_pods == 2  # the two survivors
    assert w.kinds("svc") == ["Admitted", "Evicted", "Admitted"]
    # placed again whole (r0's three remaining nodes are the tightest fit)
    assert len(w.bound("svc")) == 3 and failed not in w.bound("svc").values()
    assert w.sched.status()["svc"].domain == "z0-r0"


def test_lost_extra_pods_are_placed_again_without_degrading() -> None:
    w = world(config=SchedulerConfig(extras_interval=10.0))
    w.submit(group("el", [podset("el/w", 4, gpu=4, min_pods=2)], topology=cons("rack")))
    w.cycle()
    assert len(w.bound("el")) == 4 and len(set(w.bound("el").values())) == 2
    lost = w.bound("el")["default/el-w-3"]  # with two pods: two remain, the minimum
    w.clock.advance(1.0)
    w.backend.set_node_ready(lost, False)
    w.cycle()
    st = w.sched.status()["el"]
    assert st.state == UnitState.admitted and st.pods_bound == 4
    assert "Degraded" not in w.kinds("el") and "Extras" in w.kinds("el")
    assert racks(w.bound("el")) == {rack_of(lost)} and lost not in w.bound("el").values()


def test_bind_failure_in_the_middle_of_a_decision_leaves_no_pod_bound() -> None:
    w = world()
    w.backend.fail_binds = lambda pod, node: pod == "default/g-w-4"
    w.submit(group("g", [podset("g/w", 8, gpu=8)]))
    rep = w.sched.run_cycle()
    assert rep.admitted == 0 and rep.evicted_pods == 4  # four were bound, rolled back
    assert w.bound("g") == {}
    assert sorted(p for _, p, _ in w.backend.evictions) == [f"default/g-w-{i}" for i in range(4)]
    assert w.sched.state.bound == {}  # nothing stays assumed
    st = w.sched.status()["g"]
    assert st.state == UnitState.pending and st.reason.startswith("bind failed:")
    assert st.next_try == 1.0
    assert w.kinds("g") == ["BindFailed"]
    # the fault clears: the next attempt binds all of it
    w.backend.fail_binds = None
    w.cycle(1.0)
    assert len(w.bound("g")) == 8 and w.state("g") == "admitted"


def test_an_all_group_inside_a_single_unit_goes_whole_and_is_repaired_whole() -> None:
    w = world()
    svc_tree = service("svc")
    decode = svc_tree.children[1]
    assert isinstance(decode, Group)
    decode.disruption = "all"  # its replicas only work together
    w.submit(svc_tree)
    w.cycle()
    failed = w.bound("svc")[DECODE_0]
    survivor = "default/svc-decode-decode-1-pods-0"
    w.clock.advance(1.0)
    w.backend.set_node_ready(failed, False)
    rep = w.sched.run_cycle()
    assert [(p, r) for _, p, r in w.backend.evictions] == [
        (survivor, "disruption all: svc/decode below its minimum")]
    assert rep.repaired == 1 and w.kinds("svc") == ["Admitted", "Degraded", "Repaired"]
    assert len(w.bound("svc")) == 3 and racks(w.bound("svc")) == {"z0-r0"}
    assert failed not in w.bound("svc").values()


def test_a_lost_pod_a_group_above_still_counts_on_is_repaired_not_evicted() -> None:
    """job needs 3 pods over g, which needs both x (2 pods, min 1) and y (1 pod). Losing
    x-1 and y-0 leaves job 2 pods short: the repair places both back instead of treating
    x-1 as an extra and then evicting the unit as unrepairable."""
    w = world(config=SchedulerConfig(stale_timeout=30.0, backoff_initial=2.0))
    g = group("job/g", [podset("job/g/x", 2, gpu=1, min_pods=1),
                        podset("job/g/y", 1, gpu=1)], min_groups=2)
    w.submit(group("job", [g], min_pods=3))
    w.cycle()
    bound = w.bound("job")
    assert len(bound) == 3
    lost = sorted(bound)[1:]  # x-1 and y-0
    w.clock.advance(1.0)
    for pod in lost:
        w.backend.evict(pod, "lost")
    for _ in range(20):
        w.cycle(5.0)
    assert sorted(w.bound("job")) == sorted(bound)
    assert w.kinds("job") == ["Admitted", "Degraded", "Repaired"]  # never evicted
