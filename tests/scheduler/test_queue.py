"""Queue and cycle: whole units, priority then arrival, backoff and early requeue."""

from __future__ import annotations

from sched_helpers import world

from gangsched.scheduler import SchedulerConfig, UnitState
from gangsched.testing.builders import group, node, podset

ONE_RACK = (("zone", 1), ("rack", 1), ("host", 2))


def test_two_gangs_that_fit_alone_but_not_together_never_deadlock() -> None:
    # 16 nodes x 8 GPUs = 128 GPUs; each gang asks for 100 (the Volcano deadlock report)
    w = world((("zone", 1), ("rack", 2), ("host", 8)))
    w.submit(group("a", [podset("a/w", 100, gpu=1)]))
    w.submit(group("b", [podset("b/w", 100, gpu=1)]))
    for _ in range(5):
        w.cycle(7.0)
        assert len(w.bound("a")) == 100
        assert w.bound("b") == {}  # not one pod of the second gang holds resources
    st = w.sched.status()
    assert st["a"].state == UnitState.admitted and st["a"].pods_bound == 100
    assert st["b"].state == UnitState.pending and st["b"].pods_bound == 0
    assert st["b"].reason.startswith("w: needs 100 pods x 1 nvidia.com/gpu")
    assert "room for 28 pods" in st["b"].reason
    assert w.kinds("b") == ["Unschedulable"] * st["b"].attempts
    # the first gang finishes: the second runs whole
    w.backend.remove_workload("a")
    w.cycle(0.5)
    assert len(w.bound("b")) == 100
    assert w.state("b") == "admitted"


def test_queue_orders_by_priority_then_arrival() -> None:
    w = world(ONE_RACK)  # room for exactly one 2-node gang
    w.submit(group("first", [podset("first/w", 2, gpu=8)]))
    w.submit(group("second", [podset("second/w", 2, gpu=8)]))
    w.submit(group("urgent", [podset("urgent/w", 2, gpu=8)]), priority=5)
    w.cycle()
    assert [e.unit for e in w.sched.events if e.kind == "Admitted"] == ["urgent"]
    w.backend.remove_workload("urgent")
    w.cycle(1.0)
    assert [e.unit for e in w.sched.events if e.kind == "Admitted"] == ["urgent", "first"]
    assert w.state("second") == "pending"


def test_backoff_grows_and_a_node_added_resets_it() -> None:
    cfg = SchedulerConfig(backoff_initial=1.0, backoff_max=8.0)
    w = world(ONE_RACK, config=cfg)
    w.submit(group("big", [podset("big/w", 3, gpu=8)]))  # needs 3 nodes, there are 2
    tried_at: list[float] = []
    next_tries: list[float] = []
    for t in range(0, 30):
        w.clock.set(float(t))
        if w.sched.run_cycle().attempted:
            tried_at.append(float(t))
            next_tries.append(w.sched.status()["big"].next_try)
    assert tried_at == [0.0, 1.0, 3.0, 7.0, 15.0, 23.0]  # 1, 2, 4, 8, then capped at 8
    assert next_tries == [1.0, 3.0, 7.0, 15.0, 23.0, 31.0]
    assert w.sched.next_wakeup() == 31.0
    # a node joins: the unit is requeued at once, backoff reset
    w.clock.set(30.0)
    w.backend.add_node(node("n-z0-r0-h9", {"topology.kubernetes.io/zone": "z0",
                                           "gangsched.io/rack": "z0-r0"}))
    rep = w.sched.run_cycle()
    assert rep.attempted == 1 and rep.admitted == 1 and rep.bound_pods == 3
    st = w.sched.status()["big"]
    assert st.state == UnitState.admitted and st.admitted_at == 30.0 and st.attempts == 7
    assert "n-z0-r0-h9" in set(w.bound("big").values())


def test_released_capacity_requeues_a_backed_off_unit_early() -> None:
    w = world(ONE_RACK, config=SchedulerConfig(backoff_initial=5.0))
    w.submit(group("a", [podset("a/w", 2, gpu=8)]))
    w.submit(group("b", [podset("b/w", 1, gpu=8)]))
    w.cycle()
    assert w.state("b") == "pending" and w.sched.status()["b"].next_try == 5.0
    w.clock.advance(1.0)
    w.backend.remove_workload("a")  # capacity released: b need not wait out its backoff
    assert w.sched.next_wakeup() == 1.0
    w.cycle()
    assert w.state("b") == "admitted"


def test_cycle_report_counts_and_decision_latencies() -> None:
    w = world(ONE_RACK)
    w.submit(group("a", [podset("a/w", 2, gpu=4)]))
    w.submit(group("b", [podset("b/w", 3, gpu=8)]))
    rep = w.sched.run_cycle()
    assert (rep.attempted, rep.admitted, rep.bound_pods, rep.evicted_pods) == (2, 1, 2, 0)
    assert len(rep.decision_seconds) == 2 and all(s >= 0 for s in rep.decision_seconds)


def test_max_units_per_cycle_limits_attempts() -> None:
    w = world(ONE_RACK, config=SchedulerConfig(max_units_per_cycle=1))
    w.submit(group("a", [podset("a/w", 1, gpu=8)]))
    w.submit(group("b", [podset("b/w", 1, gpu=8)]))
    assert w.sched.run_cycle().attempted == 1
    assert w.sched.next_wakeup() == 0.0  # b is still due
    assert w.sched.run_cycle().attempted == 1
    assert w.state("a") == w.state("b") == "admitted"
