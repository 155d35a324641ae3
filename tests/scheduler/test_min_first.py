"""Minimums of all waiting units before anyone's extras (issue 14): two serving groups
whose minimums fit together only if extras wait, extras grown after the queue in the
same cycle, and a waiting unit taking back extras of running units (never minimums)."""

from __future__ import annotations

from sched_helpers import rack_of, racks, world

from gangsched.gang import Group
from gangsched.scheduler import GangschedPolicy
from gangsched.testing.builders import cons, group, podset

ONE_RACK = (("zone", 1), ("rack", 1), ("host", 4))  # 4 nodes of 8 GPUs


def serving_group(name: str) -> Group:
    """prefill: 3 replicas wanted, 1 required; decode: 1 required; 8 GPUs a pod."""
    prefill = group(f"{name}/prefill", [podset(f"{name}/prefill/r{i}", 1, gpu=8)
                                        for i in range(3)], min_groups=1)
    decode = group(f"{name}/decode", [podset(f"{name}/decode/r0", 1, gpu=8)])
    return group(name, [prefill, decode])


def test_two_minimums_before_either_ones_extras() -> None:
    w = world(ONE_RACK)
    w.submit(serving_group("sg0"))
    w.submit(serving_group("sg1"))
    w.cycle()
    assert w.state("sg0") == w.state("sg1") == "admitted"
    assert len(w.bound("sg0")) == len(w.bound("sg1")) == 2  # no room left for extras


def test_without_minimum_first_the_first_ones_extras_starve_the_second() -> None:
    w = world(ONE_RACK, policy=GangschedPolicy(min_first=False))
    w.submit(serving_group("sg0"))
    w.submit(serving_group("sg1"))
    w.cycle()
    assert len(w.bound("sg0")) == 4 and w.state("sg1") == "pending"


def test_extras_grow_in_the_same_cycle_once_every_minimum_was_tried() -> None:
    w = world(ONE_RACK)
    w.submit(serving_group("sg0"))
    w.cycle()
    assert len(w.bound("sg0")) == 4
    assert w.kinds("sg0") == ["Admitted", "Extras"]


def test_a_waiting_unit_takes_back_extras_but_never_a_minimum() -> None:
    w = world(ONE_RACK)
    w.submit(serving_group("sg0"))
    w.cycle()
    assert len(w.bound("sg0")) == 4  # its minimum (2) and both extra prefills
    w.submit(serving_group("sg1"))  # same priority: no preemption, but extras go back
    w.cycle(1.0)
    assert w.state("sg1") == "admitted" and len(w.bound("sg1")) == 2
    assert len(w.bound("sg0")) == 2 and w.state("sg0") == "admitted"
    assert "Reclaimed" in w.kinds("sg0") and "Preempted" not in w.kinds("sg0")
    w.submit(serving_group("sg2"))  # nothing but minimums left: it waits
    w.cycle(1.0)
    assert w.state("sg2") == "pending"
    assert len(w.bound("sg0")) == len(w.bound("sg1")) == 2


TWO_RACKS = (("zone", 1), ("rack", 2), ("host", 2))  # 2 racks of 2 nodes of 8 GPUs


def rack_role(name: str) -> Group:
    """A rack-required role: 2 one-pod replicas of 8 GPUs wanted, 1 required."""
    return group(name, [group(f"{name}/prefill", [podset(f"{name}/prefill/r{i}", 1, gpu=8)
                                                  for i in range(2)], min_groups=1)],
                 topology=cons("rack"))


def test_the_minimum_goes_where_its_extras_fit_so_they_grow_beside_it() -> None:
    # rack 0 has one free node: the minimum alone fits it tightest, but its extra could
    # never join it there; the minimum goes to rack 1, and the extra grows beside it
    w = world(TWO_RACKS)
    w.submit(group("busy", [podset("busy/w", 1, gpu=8)]))
    w.cycle()
    assert rack_of(next(iter(w.bound("busy").values()))) == "z0-r0"
    w.submit(rack_role("svc"))
    w.cycle()
    assert w.state("svc") == "admitted" and len(w.bound("svc")) == 2
    assert racks(w.bound("svc")) == {"z0-r1"}
    assert w.kinds("svc") == ["Admitted", "Extras"]
