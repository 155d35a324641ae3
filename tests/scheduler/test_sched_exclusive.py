"""Exclusive domains against running units: a later gang of the same set keeps out of the
domains the running ones hold, gets one back when its owner leaves, and its own running
pods never keep it out (gang.py, "Exclusive domains")."""

from __future__ import annotations

from sched_helpers import racks, world

from gangsched.gang import Constraint, Group
from gangsched.testing.builders import RACK, group, podset

SET = "default/leaderworkerset.sigs.k8s.io/group-key"
SHAPE = (("zone", 1), ("rack", 3), ("host", 2))  # 3 racks x 2 nodes x 8 GPUs


def lws_group(name: str, pods: int = 1, gpu: int = 2) -> Group:
    return group(name, [podset(f"{name}/pods", pods, gpu=gpu)],
                 topology=(Constraint(RACK, exclusive=SET),))


def test_a_second_gang_of_the_set_avoids_the_rack_of_the_first() -> None:
    w = world(SHAPE)
    w.submit(lws_group("a"))
    w.cycle()
    assert w.state("a") == "admitted"
    w.submit(lws_group("b"))
    w.submit(lws_group("c"))
    w.cycle(1)
    held = [racks(w.bound(n)) for n in ("a", "b", "c")]
    assert all(len(r) == 1 for r in held)
    assert len(set().union(*held)) == 3  # one pod of 2 GPUs each, yet three racks


def test_a_gang_waits_for_a_rack_of_its_own_and_takes_the_one_freed() -> None:
    w = world(SHAPE)
    for name in ("a", "b", "c"):
        w.submit(lws_group(name))
    w.cycle()
    w.submit(lws_group("d"))
    w.cycle(1)
    assert w.state("d") == "pending"
    assert "held exclusively by other groups" in w.sched.status()["d"].reason
    freed = racks(w.bound("b"))
    w.backend.remove_workload("b")
    w.run_until(w.clock.now() + 40)
    assert w.state("d") == "admitted"
    assert racks(w.bound("d")) == freed


def test_other_sets_are_not_kept_out() -> None:
    w = world(SHAPE)
    for name in ("a", "b", "c"):
        w.submit(lws_group(name))
    w.submit(group("plain", [podset("plain/pods", 1, gpu=2)],
                   topology=(Constraint(RACK),)))
    w.cycle()
    assert w.state("plain") == "admitted"


def test_extras_of_an_exclusive_gang_grow_after_the_queue_inside_its_own_rack() -> None:
    # an exclusive gang's extras are not held as a plan (a plan is checked against
    # capacity, not claims): they are decided after the queue, inside its rack
    w = world(SHAPE)
    w.submit(group("a", [podset("a/pods", 3, gpu=8, min_pods=1)],
                   topology=(Constraint(RACK, exclusive=SET),)))
    w.submit(lws_group("b"))
    w.cycle()
    assert w.state("a") == w.state("b") == "admitted"
    assert len(w.bound("a")) == 2  # its rack has two nodes
    assert len(racks(w.bound("a"))) == 1 and not racks(w.bound("a")) & racks(w.bound("b"))
    assert w.kinds("a") == ["Admitted", "Extras"]
