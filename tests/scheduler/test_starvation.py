"""Starvation protection: a unit queued too long reserves its best domain."""

from __future__ import annotations

import math

from sched_helpers import World, world

from gangsched.scheduler import SchedulerConfig, UnitState
from gangsched.scheduler.policy import GangschedPolicy
from gangsched.testing.builders import cons, group, podset

FOUR_NODES = (("zone", 1), ("rack", 1), ("host", 4))
RUN = 25.0  # each small unit runs this long
EVERY = 5.0  # and one arrives this often: more than four nodes can serve


def stream(w: World, until: float, large_at: float = 1.0) -> None:
    """Small one-node units arrive every EVERY seconds and run RUN seconds; a large
    four-node gang arrives at ``large_at``. One cycle per second."""
    run = {f"s{k}": 7.0 + 6.0 * k for k in range(4)}  # starts full, ends staggered
    for name in run:
        w.submit(group(name, [podset(f"{name}/w", 1, gpu=8)]))
    n = 4
    w.cycle()
    t = 0.0
    while t < until:
        t += 1.0
        w.clock.set(t)
        if t == large_at:
            w.submit(group("large", [podset("large/w", 4, gpu=8)]))
        if t % EVERY == 0:
            w.submit(group(f"s{n}", [podset(f"s{n}/w", 1, gpu=8)]))
            run[f"s{n}"] = RUN
            n += 1
        for name, st in w.sched.status().items():
            if name in run and st.admitted_at is not None and t >= st.admitted_at + run[name]:
                w.backend.remove_workload(name)
        w.sched.run_cycle()
        if w.state("large") == "admitted":
            return


def test_large_gang_behind_a_stream_of_small_units_starves_without_reservation() -> None:
    w = world(FOUR_NODES, config=SchedulerConfig(reserve_after=math.inf, backoff_max=4.0))
    stream(w, until=300.0)
    assert w.state("large") == "pending" and w.bound("large") == {}
    assert sum(1 for e in w.sched.events if e.kind == "Admitted") > 40  # the stream ran


def test_large_gang_is_admitted_within_the_reservation_time() -> None:
    w = world(FOUR_NODES, config=SchedulerConfig(reserve_after=60.0, backoff_max=4.0))
    stream(w, until=300.0)
    st = w.sched.status()["large"]
    assert st.state == UnitState.admitted and len(w.bound("large")) == 4
    reserved = next(e for e in w.sched.events if e.kind == "Reserved")
    assert reserved.unit == "large" and reserved.time == 61.0 and "cluster" in reserved.message
    # reserved after waiting 60s, admitted once the small units already running end
    assert st.admitted_at is not None and st.admitted_at <= 61.0 + RUN
    # no small unit started inside the reservation
    starts = [e.time for e in w.sched.events
              if e.kind == "Admitted" and e.unit.startswith("s")]
    assert all(t < 61.0 or t > st.admitted_at for t in starts)
    assert st.reserved is None  # released on admission


def test_reservation_takes_the_rack_where_the_gang_comes_closest_to_fitting() -> None:
    w = world(config=SchedulerConfig(reserve_after=10.0))
    w.submit(group("a", [podset("a/w", 3, gpu=8)], topology=cons("rack")))  # 3 nodes of r0
    w.submit(group("b", [podset("b/w", 2, gpu=8)], topology=cons("rack")))  # 2 nodes of r1
    w.cycle()
    w.submit(group("big", [podset("big/w", 4, gpu=8)], topology=cons("rack")))
    w.submit(group("small", [podset("small/w", 1, gpu=8)]), priority=0)
    w.run_until(11.0)
    st = w.sched.status()
    assert st["big"].reserved == "z0-r1"  # 2 of 4 nodes free there, 1 in r0
    # small arrived later: r1 is hidden from it; it took r0's free node at once
    assert st["small"].state == UnitState.admitted
    w.submit(group("small2", [podset("small2/w", 1, gpu=8)]))
    w.cycle(1.0)
    assert w.state("small2") == "pending"  # r0 is full and r1 is reserved
    assert "Reserved" in w.kinds("big")
    # a higher-priority unit is not held back by the reservation
    w.submit(group("vip", [podset("vip/w", 1, gpu=8)]), priority=5)
    w.cycle(1.0)
    assert w.state("vip") == "admitted"


def test_one_reservation_at_a_time_and_a_unit_ahead_in_the_queue_takes_it_over() -> None:
    w = world(config=SchedulerConfig(reserve_after=10.0, max_reservations=1))
    # 3 nodes of r0 and 2 of r1 taken, by units no one here may preempt
    w.submit(group("a", [podset("a/w", 3, gpu=8)], topology=cons("rack")), priority=9)
    w.submit(group("b", [podset("b/w", 2, gpu=8)], topology=cons("rack")), priority=9)
    w.cycle()
    w.submit(group("big1", [podset("big1/w", 4, gpu=8)], topology=cons("rack")))
    w.submit(group("big2", [podset("big2/w", 4, gpu=8)], topology=cons("rack")))
    w.run_until(12.0)
    st = w.sched.status()
    assert st["big1"].reserved == "z0-r1" and st["big2"].reserved is None  # the first only
    w.submit(group("small", [podset("small/w", 1, gpu=8)]))
    w.cycle(1.0)
    assert w.state("small") == "admitted"  # r0 is not held for big2
    w.submit(group("vip", [podset("vip/w", 4, gpu=8)], topology=cons("rack")), priority=5)
    w.run_until(25.0)
    st = w.sched.status()
    assert st["vip"].reserved == "z0-r1"  # ahead of big1 in the queue: it takes over
    assert st["big1"].reserved is None and st["big2"].reserved is None


def test_a_unit_no_domain_could_ever_hold_reserves_nothing() -> None:
    w = world(config=SchedulerConfig(reserve_after=10.0))  # racks of 4 nodes
    w.submit(group("huge", [podset("huge/w", 5, gpu=8)], topology=cons("rack")))
    w.run_until(12.0)
    assert w.state("huge") == "pending" and w.sched.status()["huge"].reserved is None
    w.submit(group("small", [podset("small/w", 4, gpu=8)], topology=cons("rack")))
    w.cycle(1.0)
    assert w.state("small") == "admitted"


def backfill_world(backfill: bool = True) -> World:
    """Four nodes: ``a`` runs on two until t=100 and ``c`` on one until t=50 (their
    run-time limits); ``big`` needs all four and reserves the cluster after 10s, so it
    can expect to start at t=100."""
    policy = GangschedPolicy()
    policy.backfill = backfill
    w = world(FOUR_NODES, config=SchedulerConfig(reserve_after=10.0), policy=policy)
    w.submit(group("a", [podset("a/w", 2, gpu=8)]), limit=100.0)
    w.submit(group("c", [podset("c/w", 1, gpu=8)]), limit=50.0)
    w.cycle()
    w.submit(group("big", [podset("big/w", 4, gpu=8)]))
    w.run_until(12.0)
    assert w.sched.status()["big"].reserved == "cluster"
    return w


def test_backfill_uses_a_reserved_domain_only_until_its_unit_can_start() -> None:
    w = backfill_world()
    big = next(u for u in w.sched.units.values() if u.name == "big")
    assert big.reservation.reserved is not None and big.reservation.reserved.start == 100.0
    w.submit(group("short", [podset("short/w", 1, gpu=8)]), limit=60.0)  # done by t=73
    w.submit(group("long", [podset("long/w", 1, gpu=8)]), limit=200.0)  # would delay big
    w.submit(group("unknown", [podset("unknown/w", 1, gpu=8)]))  # no limit: might
    w.cycle(1.0)
    assert w.state("short") == "admitted"
    assert w.state("long") == "pending" and w.state("unknown") == "pending"
    # the reservation now also waits for short: its start stays 100 (short ends at 73)
    w.cycle(1.0)
    assert big.reservation.reserved is not None and big.reservation.reserved.start == 100.0


def test_without_backfill_a_reserved_domain_stays_hidden() -> None:
    w = backfill_world(backfill=False)
    w.submit(group("short", [podset("short/w", 1, gpu=8)]), limit=60.0)
    w.cycle(1.0)
    assert w.state("short") == "pending"


def test_a_policy_without_reservations_never_holds_units_back() -> None:
    # the peers' emulations (kube-scheduler, Volcano) do not reserve: the large gang waits
    # behind the stream, as it would there, and no domain is ever hidden from the stream
    policy = GangschedPolicy()
    policy.reserve = False
    w = world(FOUR_NODES, config=SchedulerConfig(reserve_after=60.0, backoff_max=4.0),
              policy=policy)
    stream(w, until=300.0)
    assert w.state("large") == "pending"
    assert not any(e.kind == "Reserved" for e in w.sched.events)
    assert sum(1 for e in w.sched.events if e.kind == "Admitted") > 40


def test_peer_emulations_do_not_reserve_and_gangsched_does() -> None:
    from gangsched.sim.policies import make_policy

    assert make_policy("gangsched").reserve
    for name in ("pod-by-pod", "flat-gang", "cpg-alpha", "volcano"):
        assert not make_policy(name).reserve, name
