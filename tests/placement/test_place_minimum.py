"""A unit's minimum placed alone, where the whole unit would go (place_minimum): the
minimum-first scheduler and ``place`` use it so extras find room beside their minimum."""

from __future__ import annotations

import numpy as np
import pytest

from gangsched.bench.instances import random_instance
from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, podsets
from gangsched.placement.engine import Options, place, place_minimum
from gangsched.placement.verify import verify
from gangsched.testing.builders import cluster, cons, group, replicas, take

# 2 racks of 2 nodes of 8 GPUs; rack r0 has one node busy
SHAPE = (("zone", 1), ("rack", 2), ("host", 2))


def loaded() -> ClusterState:
    state = cluster(SHAPE)
    take(state, "n-z0-r0-h0", gpu=8)
    return state


def unit(min_replicas: int = 1, count: int = 2) -> Group:
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


def random_case(seed: int) -> tuple[ClusterState, Group]:
    """A loaded cluster of racks and a unit with extras under a required level: a role of
    one-to-three-pod replicas, some of them required, perhaps a second role."""
    rng = np.random.default_rng(seed)
    state = cluster((("zone", 1), ("block", 2), ("rack", 3), ("host", 3)))
    for name in state.topology.names:
        used = int(rng.choice([0, 0, 4, 8]))
        if used:
            take(state, name, gpu=used)
    key = str(rng.choice(["rack", "block", "zone"]))
    count = int(rng.integers(2, 6))
    roles = [replicas("u/a", count, pods=int(rng.integers(1, 4)), gpu=int(rng.choice([4, 8])),
                      min_replicas=int(rng.integers(1, count)))]
    if rng.random() < 0.5:
        roles.append(replicas("u/b", 2, pods=1, gpu=4, min_replicas=1))
    return state, group("u", roles, topology=cons(key))


@pytest.mark.parametrize("seed", range(80))
def test_same_verdict_as_the_plain_minimum_and_sound(seed: int) -> None:
    state, tree = (random_instance(np.random.default_rng(seed)) if seed % 4 == 0
                   else random_case(seed))
    plain = place(tree, state, Options(extras=False), commit=False)
    before = state.snapshot()
    d = place_minimum(tree, state, Options())
    assert d.admitted == plain.admitted
    if d.admitted:
        assert verify(tree, before, d.assignments) == []
        assert d.minimum_pods == plain.minimum_pods
        gpu = state.rindex["nvidia.com/gpu"]
        taken = int((before.free[gpu] - state.free[gpu]).sum())
        assert taken == sum(ps.requests.get("nvidia.com/gpu", 0) for ps in podsets(tree)
                            for p in ps.pods if p in d.assignments)  # committed exactly
    else:
        assert np.array_equal(state.free, before.free)


def test_random_cases_do_move_minimums() -> None:
    moved = 0
    for seed in range(80):
        state, tree = random_case(seed)
        plain = place(tree, state, Options(extras=False), commit=False)
        d = place_minimum(tree, state, Options(), commit=False)
        moved += d.admitted and d.assignments != plain.assignments
    assert moved >= 5  # the property above covers the pinned path, not only the plain one
