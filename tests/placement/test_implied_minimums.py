"""A group's pod-count minimum can need more of a child than the child's own minimum:
what its siblings could place at most falls short. The search meets those implied
minimums from the start, instead of placing the child's own minimum where it cannot grow
(a host-local set's first pod on a host too small for the rest)."""

from __future__ import annotations

from gangsched.api.types import Node
from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, PodSet
from gangsched.placement import place
from gangsched.placement.engine import Options
from gangsched.placement.engine.trace import SearchLog, recording
from gangsched.placement.verify import verify
from gangsched.testing.builders import GPU, HOST, LEVEL_KEYS, GiB, cons, podset


def _node(name: str, rack: str, cpu: int, gpu: int, memory_gib: int) -> Node:
    labels = {LEVEL_KEYS["zone"]: "z0", LEVEL_KEYS["rack"]: rack, HOST: name}
    return Node(name, labels, allocatable={"cpu": cpu * 1000, "memory": memory_gib * GiB,
                                           GPU: gpu, "pods": 32})


def test_a_child_the_group_count_needs_whole_is_placed_whole() -> None:
    # r0: one host with room for both big pods, two smaller; r1: two small hosts
    ns = [_node("r0-h0", "r0", 96, 8, 2048), _node("r0-h1", "r0", 85, 6, 1310),
          _node("r0-h2", "r0", 93, 4, 210), _node("r1-h0", "r1", 64, 4, 512),
          _node("r1-h1", "r1", 64, 4, 512)]
    state = ClusterState.from_nodes(ns, [LEVEL_KEYS["zone"], LEVEL_KEYS["rack"]])
    small = podset("u/small", 8, gpu=1, cpu=4_000, min_pods=6, topology=cons("rack"),
                   extra={"memory": 16 * GiB})
    big = podset("u/big", 2, gpu=4, cpu=48_000, min_pods=1, topology=cons("host"),
                 max_per_node=2, extra={"memory": 64 * GiB})
    # ten pods of ten: both sets whole, though each asks for less on its own
    unit = Group("u", "u", [small, big], min_groups=1, min_pods=10, topology=cons("zone"))
    for opts in (Options(), Options(node_order="spread")):
        d = place(unit, state, opts, commit=False)
        assert d.admitted, d.reason
        assert len(d.assignments) == 10
        assert {d.assignments[p] for p in big.pods} == {"r0-h0"}  # the one host for both
        assert verify(unit, state, d.assignments) == []
        # the outcomes report the unit's own minimums
        by_path = {g.path: g for g in d.groups}
        assert by_path["u/big"].min_pods == 1 and by_path["u/small"].min_pods == 6
        assert by_path["u"].min_pods == 10 and by_path["u"].placed_pods == 10


def test_the_search_log_names_the_implied_attempt() -> None:
    ns = [_node("r0-h0", "r0", 96, 8, 2048), _node("r0-h1", "r0", 85, 6, 1310)]
    state = ClusterState.from_nodes(ns, [LEVEL_KEYS["zone"], LEVEL_KEYS["rack"]])
    a = podset("u/a", 2, gpu=4, cpu=8_000, min_pods=1, topology=cons("host"))
    b = podset("u/b", 1, gpu=1, cpu=8_000, min_pods=1)
    unit = Group("u", "u", [a, b], min_groups=2, min_pods=3)  # a whole: 3 - 1
    log = SearchLog()
    with recording(log):
        d = place(unit, state, commit=False)
    assert d.admitted
    first = log.attempts[0]
    assert first.implied and not first.whole
    # a group whose min_groups already needs what its count asks: no such attempt
    both = Group("v", "v", [podset("v/a", 2, gpu=1, min_pods=2), podset("v/b", 2, gpu=1,
                                                                          min_pods=2)],
                 min_groups=2, min_pods=3)
    log = SearchLog()
    with recording(log):
        assert place(both, state, Options(fast=False), commit=False).admitted
    assert not any(x.implied for x in log.attempts)


def test_a_group_count_no_placement_can_reach_is_still_explained() -> None:
    ns = [_node("r0-h0", "r0", 96, 8, 2048), _node("r0-h1", "r0", 85, 4, 1310)]
    state = ClusterState.from_nodes(ns, [LEVEL_KEYS["zone"], LEVEL_KEYS["rack"]])
    a = podset("u/a", 2, gpu=4, cpu=8_000, min_pods=1, topology=cons("host"))
    b = podset("u/b", 2, gpu=4, cpu=8_000, min_pods=1, topology=cons("host"))
    # all four pods, each pair on one host: 8 + 8 GPUs, and one host has 4
    unit = Group("u", "u", [a, b], min_groups=2, min_pods=4)
    d = place(unit, state, commit=False)
    assert not d.admitted and d.reason and "\n" not in d.reason
    assert isinstance(unit.children[0], PodSet) and unit.children[0].min_pods == 1
