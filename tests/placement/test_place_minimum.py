"""A unit's minimum placed alone, where the whole unit would go (place_minimum): the
minimum-first scheduler and ``place`` use it so extras find room beside their minimum."""

from __future__ import annotations

from gangsched.cluster.state import ClusterState
from gangsched.placement.engine import Options, place, place_minimum
from gangsched.testing.builders import cluster, cons, group, replicas, take

# 2 racks of 2 nodes of 8 GPUs; rack r0 has one node busy
SHAPE = (("zone", 1), ("rack", 2), ("host", 2))


def loaded() -> ClusterState:
    state = cluster(SHAPE)
    take(state, "n-z0-r0-h0", gpu=8)
    return state


def unit(min_replicas: int = 1, count: int = 2):
    """A rack-required role: ``count`` one-pod replicas of 8 GPUs, ``min_replicas`` needed."""
    return group("svc", [replicas("svc/prefill", count, pods=1, gpu=8,
                                  min_replicas=min_replicas)], topology=cons("rack"))


def racks(assignments: dict[str, str]) -> set[str]:
    return {n.rsplit("-", 1)[0] for n in assignments.values()}


def test_the_minimum_goes_where_the_whole_unit_fits_not_where_it_fits_tightest() -> None:
    state = loaded()
    alone = place(unit(), state, Options(extras=False), commit=False)
    assert alone.admitted and racks(alone.assignments) == {"n-z0-r0"}  # the tight rack
    d = place_minimum(unit(), state, Options())
    assert d.admitted and len(d.assignments) == 1  # the minimum only
    assert racks(d.assignments) == {"n-z0-r1"}  # the rack that holds both replicas
    assert state.free[state.rindex["nvidia.com/gpu"]].sum() == 16  # committed: 32 - 8 - 8


def test_dry_run_leaves_the_state_as_it_was() -> None:
    state = loaded()
    before = state.free.copy()
    d = place_minimum(unit(), state, Options(), commit=False)
    assert d.admitted and (state.free == before).all()


def test_the_plain_minimum_when_the_whole_unit_fits_nowhere_more_than_the_minimum() -> None:
    state = loaded()
    take(state, "n-z0-r1-h0", gpu=8)  # one free node per rack: no extras fit anywhere
    d = place_minimum(unit(), state, Options(), commit=False)
    plain = place(unit(), state, Options(extras=False), commit=False)
    assert d.assignments == plain.assignments


def test_a_unit_without_extras_and_one_that_does_not_fit() -> None:
    state = loaded()
    whole = place_minimum(unit(min_replicas=2), state, Options(), commit=False)
    assert whole.admitted and racks(whole.assignments) == {"n-z0-r1"}
    too_big = place_minimum(unit(min_replicas=3, count=3), state, Options(), commit=False)
    assert not too_big.admitted and too_big.reason
