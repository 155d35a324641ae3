"""Deciding leaves no reference cycles behind.

A recursive closure (a nested function calling itself by name) is a cycle through its
own cell: each call then leaves garbage only the cyclic collector frees, holding all the
closure reaches (a search's placements, its Facts). In serve and the simulator these
calls run once per decision or bind, and the collector's passes over them cost time.
Each case below runs with the collector off and checks that nothing was left in a cycle.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest

from gangsched.batch import _counts
from gangsched.bench.place import disagg, loaded_cluster, rack_gang, training
from gangsched.gang import Constraint, claims_of
from gangsched.placement import place
from gangsched.placement.decision import Decision
from gangsched.scheduler.tree import broken_all_groups
from gangsched.sim.units import _evaluate
from gangsched.testing.builders import RACK, group, podset


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _cycles_left(run: Callable[[], object]) -> int:
    """Objects ``run`` left in reference cycles (the collector is off)."""
    gc.collect()  # what was there before
    run()
    return gc.collect()


def test_engine_decisions_leave_no_cycles(no_collector: None) -> None:
    state = loaded_cluster(5_000)
    too_big = group("big", [podset("big/w", 100_000, gpu=8)])
    # the fast path (one pod set; identical replicas), the generic search (a composite
    # with a preferred level), a rejection explained; each once before (lazy imports and
    # caches), then measured: a dry run, and committed
    for unit in [rack_gang(0), training(0), disagg(0), too_big]:
        place(unit, state, commit=False)
        left = _cycles_left(lambda u=unit: place(u, state, commit=False))
        assert left == 0, f"{unit.path}: {left} objects in reference cycles"
    got: list[Decision] = []
    for unit in [rack_gang(1), disagg(1)]:
        left = _cycles_left(lambda u=unit: got.append(place(u, state, commit=True)))
        assert got[-1].admitted and left == 0, f"{unit.path}: {left} objects in cycles"


def test_tree_walks_leave_no_cycles(no_collector: None) -> None:
    owned = podset("x/a/pods", 2, gpu=2)
    unit = group("x", [group("x/a", [owned], topology=(
        Constraint(RACK, "required", exclusive="set"),)), podset("x/b", 1)])
    got: list[object] = []
    assert _cycles_left(lambda: got.append(claims_of(unit))) == 0
    assert got[-1] == {"x/a/pods": (("set", RACK, "x/a"),)}
    assert _cycles_left(lambda: got.append(broken_all_groups(unit, {}))) == 0
    assert got[-1] == []
    assert _cycles_left(lambda: got.append(_counts(unit, {"x/a/pods": {"p": "n"}}))) == 0
    assert got[-1] == {"x/a/pods": (1, 0, False), "x/a": (1, 0, False),
                       "x/b": (0, 0, False), "x": (1, 0, False)}
    sets = [owned, unit.children[1]]
    idx = {id(ps): i for i, ps in enumerate(sets)}
    assert _cycles_left(lambda: got.append(_evaluate(unit, [2, 1], idx))) == 0
    assert got[-1] == (3, True)
