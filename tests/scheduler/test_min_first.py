"""Minimums of all waiting units before anyone's extras (issue 14): two serving groups
whose minimums fit together only if extras give way, a unit's extras decided with its
minimum (so they sit beside it) and bound once every due minimum was tried, a waiting
unit taking back extras of running units (never minimums), and the minimum-alone
admission (``whole=False``: extras decided after the queue)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from sched_helpers import rack_of, racks, world

from gangsched.gang import Group
from gangsched.scheduler import GangschedPolicy, queue
from gangsched.testing.builders import cons, group, podset

ONE_RACK = (("zone", 1), ("rack", 1), ("host", 4))  # 4 nodes of 8 GPUs


def serving_group(name: str) -> Group:
    """prefill: 3 replicas wanted, 1 required; decode: 1 required; 8 GPUs a pod."""
    prefill = group(f"{name}/prefill", [podset(f"{name}/prefill/r{i}", 1, gpu=8)
                                        for i in range(3)], min_groups=1)
    decode = group(f"{name}/decode", [podset(f"{name}/decode/r0", 1, gpu=8)])
    return group(name, [prefill, decode])


def test_two_minimums_before_either_ones_extras() -> None:
    for policy in (GangschedPolicy(), GangschedPolicy(whole=False)):
        w = world(ONE_RACK, policy=policy)
        w.submit(serving_group("sg0"))
        w.submit(serving_group("sg1"))
        w.cycle()
        assert w.state("sg0") == w.state("sg1") == "admitted"
        assert len(w.bound("sg0")) == len(w.bound("sg1")) == 2  # no room left for extras
        assert w.backend.evictions == []  # no extra was bound, then taken back


def test_extras_of_all_or_nothing_groups_wait_for_the_minimums_too() -> None:
    # KEP-5710 disruption mode "all": running pods are never taken back one by one (no
    # reclaim), so the extras must not be bound before every minimum was tried
    w = world(ONE_RACK)
    for name in ("sg0", "sg1"):
        w.submit(replace(serving_group(name), disruption="all"))
    w.cycle()
    assert w.state("sg0") == w.state("sg1") == "admitted"
    assert len(w.bound("sg0")) == len(w.bound("sg1")) == 2
    assert w.backend.evictions == []


def test_without_minimum_first_the_first_ones_extras_starve_the_second() -> None:
    w = world(ONE_RACK, policy=GangschedPolicy(min_first=False))
    w.submit(serving_group("sg0"))
    w.submit(serving_group("sg1"))
    w.cycle()
    assert len(w.bound("sg0")) == 4 and w.state("sg1") == "pending"


def test_extras_decided_with_the_minimum_are_bound_once_every_minimum_was_tried() -> None:
    w = world(ONE_RACK)
    w.submit(serving_group("sg0"))
    w.cycle()
    assert len(w.bound("sg0")) == 4
    assert w.kinds("sg0") == ["Admitted", "Extras"]
    admitted, extras = (e.message for e in w.sched.events if e.unit == "sg0")
    assert admitted.startswith("2/4 pods") and extras == "placed 2 more pods (4/4)"


def test_minimum_alone_extras_grow_in_the_same_cycle_once_every_minimum_was_tried() -> None:
    w = world(ONE_RACK, policy=GangschedPolicy(whole=False))
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


def test_reclaiming_looks_at_running_units_only_when_one_holds_extras(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reclaim search runs for a waiting unit only while some running unit of its
    priority or lower holds pods above its minimum (otherwise there is nothing to take
    back, and every failed unit walked every running unit)."""
    searches: list[str] = []
    real = queue.find_preemption

    def counted(tree: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("surplus_only"):
            searches.append(tree.path)
        return real(tree, *args, **kwargs)

    monkeypatch.setattr(queue, "find_preemption", counted)
    w = world(ONE_RACK)
    w.submit(serving_group("sg0"))
    w.cycle()
    w.submit(serving_group("sg1"))
    w.cycle(1.0)  # sg0 holds extras: sg1 looks, takes them back and runs
    assert searches == ["sg1"] and w.state("sg1") == "admitted"
    w.submit(serving_group("sg2"))
    for _ in range(3):
        w.cycle(60.0)
    assert w.state("sg2") == "pending" and searches == ["sg1"]  # nothing left to take


TWO_RACKS = (("zone", 1), ("rack", 2), ("host", 2))  # 2 racks of 2 nodes of 8 GPUs


def rack_role(name: str) -> Group:
    """A rack-required role: 2 one-pod replicas of 8 GPUs wanted, 1 required."""
    return group(name, [group(f"{name}/prefill", [podset(f"{name}/prefill/r{i}", 1, gpu=8)
                                                  for i in range(2)], min_groups=1)],
                 topology=cons("rack"))


def test_the_minimum_goes_where_its_extras_fit_so_they_grow_beside_it() -> None:
    # rack 0 has one free node: the minimum alone fits it tightest, but its extra could
    # never join it there; the minimum goes to rack 1, and the extra grows beside it
    w = world(TWO_RACKS, policy=GangschedPolicy(whole=False))
    w.submit(group("busy", [podset("busy/w", 1, gpu=8)]))
    w.cycle()
    assert rack_of(next(iter(w.bound("busy").values()))) == "z0-r0"
    w.submit(rack_role("svc"))
    w.cycle()
    assert w.state("svc") == "admitted" and len(w.bound("svc")) == 2
    assert racks(w.bound("svc")) == {"z0-r1"}
    assert w.kinds("svc") == ["Admitted", "Extras"]


BLOCKS = (("zone", 1), ("block", 2), ("rack", 2), ("host", 2))  # 2 blocks of 4 nodes


def blocks(placement: dict[str, str]) -> set[str]:
    """Blocks of the bound nodes (``n-z0-b1-r0-h1`` -> ``z0-b1``)."""
    return {"-".join(n.split("-")[1:3]) for n in placement.values()}


def prefers_block(name: str) -> Group:
    """3 one-pod prefill replicas of 8 GPUs wanted, 1 required, preferably in one block."""
    return group(name, [group(f"{name}/prefill",
                              [podset(f"{name}/prefill/r{i}", 1, gpu=8) for i in range(3)],
                              min_groups=1, topology=cons("block~"))])


def scenario(policy: GangschedPolicy) -> tuple[dict[str, str], dict[str, str]]:
    """Block b0 has 3 free nodes, b1 4; a preferred-block unit, then a block gang of 2."""
    w = world(BLOCKS, policy=policy)
    w.submit(group("busy", [podset("busy/w", 1, gpu=8)], topology=cons("block")))
    w.cycle()
    assert blocks(w.bound("busy")) == {"z0-b0"}
    w.submit(prefers_block("svc"))
    w.submit(group("job", [podset("job/w", 2, gpu=8)], topology=cons("block")))
    w.cycle()
    assert w.state("svc") == w.state("job") == "admitted"
    return w.bound("svc"), w.bound("job")


def test_admitted_whole_the_extras_share_the_minimums_block() -> None:
    svc, job = scenario(GangschedPolicy())
    assert len(svc) == 3 and blocks(svc) == {"z0-b0"}
    assert blocks(job) == {"z0-b1"}


def test_minimum_alone_a_later_minimum_takes_the_room_and_the_extras_spread() -> None:
    # the same cluster and queue with the minimum placed alone: the block gang takes the
    # two nodes beside the minimum, and the extras land in the other block
    svc, job = scenario(GangschedPolicy(whole=False))
    assert len(svc) == 3 and blocks(svc) == {"z0-b0", "z0-b1"}
    assert blocks(job) == {"z0-b0"}


def test_a_unit_without_a_minimum_is_bound_as_decided() -> None:
    # its pods are placed one by one: nothing of it is a minimum to bind first
    w = world(ONE_RACK)
    w.submit(group("b", [podset("b/w", 3, gpu=8, min_pods=0)], min_groups=0))
    w.cycle()
    assert len(w.bound("b")) == 3
    assert [e.message for e in w.sched.events if e.unit == "b"] == ["3/3 pods on 3 nodes"]
