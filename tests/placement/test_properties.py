"""Properties of the engine over small random instances (DESIGN.md section 2).

For every instance: a dry run leaves the state alone; the same input gives the same
decision; an admitted unit passes the independent verifier and the state is charged
exactly its pods; a rejected unit leaves the state unchanged and says why; the exact MILP
agrees that whatever the engine admits is feasible.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gangsched.bench.instances import random_instance
from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, podsets
from gangsched.placement import Decision, place
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify

seeds = st.integers(min_value=0, max_value=2**32 - 1)


def instance(seed: int) -> tuple[ClusterState, Group]:
    return random_instance(np.random.default_rng(seed))


def charged(state: ClusterState, unit: Group, d: Decision) -> np.ndarray:
    """What the decision's pods take from each node, as a [resource, node] array."""
    used = np.zeros_like(state.free)
    owner = {p: ps for ps in podsets(unit) for p in ps.pods}
    for pod, name in d.assignments.items():
        j = state.topology.index[name]
        for res, amount in owner[pod].requests.items():
            if amount > 0:
                used[state.rindex[res], j] += amount
    return used


@settings(max_examples=60, deadline=None)
@given(seeds)
def test_dry_runs_are_pure_and_decisions_deterministic(seed: int) -> None:
    state, unit = instance(seed)
    before = state.free.copy()
    d1 = place(unit, state.snapshot(), commit=False)
    d2 = place(unit, state, commit=False)
    assert np.array_equal(state.free, before)
    assert state.bound.keys() == instance(seed)[0].bound.keys()
    _, unit2 = instance(seed)
    d3 = place(unit2, instance(seed)[0], commit=False)  # a fresh copy of the same input
    for d in (d2, d3):
        assert (d.admitted, d.assignments, d.reason) == (d1.admitted, d1.assignments, d1.reason)


@settings(max_examples=60, deadline=None)
@given(seeds)
def test_admitted_units_are_sound_and_rejections_leave_no_trace(seed: int) -> None:
    state, unit = instance(seed)
    before = state.snapshot()
    d = place(unit, state)  # commit=True
    if not d.admitted:
        assert d.reason
        assert d.assignments == {}
        assert np.array_equal(state.free, before.free)
        return
    problems = verify(unit, before, d.assignments)
    assert problems == []
    assert np.array_equal(before.free - state.free, charged(before, unit, d))
    exact = solve(unit, before, time_limit=5.0, maximize=False)
    assert exact.status != "infeasible", f"engine admitted what the MILP proves infeasible: {d}"
    if exact.assignments is not None:
        assert verify(unit, before, exact.assignments) == []  # the MILP is sound too
