"""Per-unit status and history, waiting workloads, unit naming, the event log."""

from __future__ import annotations

from sched_helpers import world

from gangsched.gang import Group
from gangsched.model import Workload
from gangsched.scheduler import SchedEvent, UnitState, make_workload
from gangsched.testing.builders import group, podset


def test_status_tracks_states_with_timestamps_and_history() -> None:
    w = world((("zone", 1), ("rack", 1), ("host", 2)))
    w.submit(group("a", [podset("a/w", 2, gpu=8)]))
    w.cycle()
    w.clock.set(3.0)
    w.submit(group("b", [podset("b/w", 1, gpu=8, min_pods=1)]))
    w.cycle()
    w.clock.set(4.0)
    w.backend.remove_workload("a")
    w.cycle()
    st = w.sched.status()["b"]
    assert st.name == "b" and st.workload == "b"
    assert st.state == UnitState.admitted and st.state == "admitted"
    assert (st.created, st.since, st.admitted_at, st.attempts) == (3.0, 4.0, 4.0, 2)
    assert (st.pods_bound, st.minimum, st.desired, st.preemptions) == (1, 1, 1, 0)
    assert [(t, s) for t, s, _ in st.history] == [(3.0, "pending"), (3.0, "pending"),
                                                  (4.0, "admitted")]
    assert st.history[1][2].startswith("w: needs 1 pod")
    assert w.sched.events == [
        SchedEvent(0.0, "Admitted", "a", "2/2 pods on 2 nodes"),
        SchedEvent(3.0, "Unschedulable", "b", w.sched.events[1].message),
        SchedEvent(4.0, "Admitted", "b", "1/1 pods on 1 node"),
    ]
    assert "a" not in w.sched.status()  # finished workloads leave the status


def test_waiting_workload_is_reported_and_scheduled_once_ready() -> None:
    w = world()
    tree = group("wl", [podset("wl/w", 2, gpu=8)])
    w.backend.submit(Workload("wl", "Workload", None, waiting="needs 2 pods, has 1"))
    w.cycle()
    st = w.sched.status()["wl"]
    assert st.state == UnitState.waiting and st.reason == "needs 2 pods, has 1"
    assert w.sched.next_wakeup() is None
    w.clock.advance(2.0)
    w.backend.submit(make_workload(tree, name="wl"))
    w.cycle()
    assert w.state("wl") == "admitted" and len(w.bound("wl")) == 2


def test_basic_root_splits_into_units_named_after_the_workload() -> None:
    w = world()
    root = Group("app", "app", [
        group("app/web", [podset("app/web/pods", 2, gpu=8)]),
        group("app/batch/x", [podset("app/batch/x/pods", 1, gpu=8)]),
    ])  # min_groups 0: basic, each child its own unit
    w.backend.submit(make_workload(root, name="ns/app", priority=3))
    w.cycle()
    st = w.sched.status()
    assert sorted(st) == ["ns/app/batch/x", "ns/app/web"]
    assert all(s.state == UnitState.admitted and s.workload == "ns/app" for s in st.values())
    assert w.sched.units["ns/app/web"].priority == 3


def test_next_wakeup_reports_the_earliest_timer() -> None:
    w = world()
    assert w.sched.next_wakeup() is None
    w.submit(group("big", [podset("big/w", 9, gpu=8)]))
    assert w.sched.next_wakeup() == 0.0  # an event waits
    w.cycle()
    assert w.sched.next_wakeup() == 1.0  # backoff
    w.submit(group("el", [podset("el/w", 9, gpu=8, min_pods=1)]))
    w.cycle(1.0)
    # big retries at 3; el runs with extras missing, retried every extras_interval
    assert w.sched.status()["el"].state == UnitState.admitted
    assert w.sched.next_wakeup() == 3.0
