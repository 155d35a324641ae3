"""The room bound (``attempts._room``): at most how many of a unit's pods fit, counted
inside the domains its pinned values name. A unit whose minimum exceeds it is rejected
before any search, so the bound must never be below what the exact solver places."""

from __future__ import annotations

import numpy as np
import pytest
from placement_helpers import pinned

from gangsched.bench.instances import random_instance
from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, TreeNode, minimum_pods
from gangsched.placement import place
from gangsched.placement.engine import Options
from gangsched.placement.engine import attempts as engine_attempts
from gangsched.placement.engine.domains import Domains
from gangsched.placement.engine.facts import Facts
from gangsched.placement.exact import solve
from gangsched.testing.builders import GPU, cluster, cons, group, podset


def room(unit: TreeNode, state: ClusterState) -> int:
    facts = Facts(unit, state)
    return engine_attempts._room(unit, facts, Domains(facts, True, False, False, False))


@pytest.mark.parametrize("pin", [False, True])
def test_the_room_bounds_what_the_solver_places(pin: bool) -> None:
    checked = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        state, unit = random_instance(rng)
        tree = pinned(unit, state, rng) if pin else unit
        bound = room(tree, state)
        got = solve(tree, state, time_limit=20.0)
        if got.status == "infeasible":
            continue
        if got.status != "optimal":
            continue  # not proven: nothing to compare with
        checked += 1
        assert got.max_pods is not None and got.max_pods <= bound, seed
        assert minimum_pods(tree) <= bound, seed  # a feasible minimum is never cut off
    assert checked > 10


def test_a_minimum_beyond_the_room_is_rejected_without_a_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    searched: list[int] = []
    run = engine_attempts.run

    def counted(*args: object, **kwargs: object) -> engine_attempts.Outcome:
        out = run(*args, **kwargs)  # type: ignore[arg-type]
        searched.append(out.search.budget.dry_runs)
        return out

    monkeypatch.setattr(engine_attempts, "run", counted)
    found = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        state, unit = random_instance(rng)
        tree = pinned(unit, state, rng)
        if not isinstance(tree, Group) or room(tree, state) >= minimum_pods(tree):
            continue
        found += 1
        searched.clear()
        quiet = place(tree, state, Options(explain=False), commit=False)
        assert not quiet.admitted and not searched, seed  # no search at all
        assert solve(tree, state, maximize=False).status == "infeasible", seed
        loud = place(tree, state, Options(), commit=False)
        assert not loud.admitted and loud.reason, seed  # explained by one search
        assert len(searched) == 1, seed
    assert found > 5


def test_a_replica_no_domain_of_its_level_holds_adds_no_room(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # three racks of two 8-GPU nodes; one node free in each of r0 and r1: two pods of
    # room by the nodes alone, but a replica of two pods in one rack fits in none
    state = cluster((("zone", 1), ("rack", 3), ("host", 2)))
    gpu = state.shape({GPU: 1})
    busy = np.array([1, 3, 4, 5])
    txn = state.begin()
    txn.place(busy, np.full(len(busy), 8), gpu)
    txn.commit()
    replica = group("u/rep", [podset("u/rep/w", 2, gpu=8, min_pods=2)], topology=cons("rack"))
    unit = group("u", [replica], min_groups=0)  # nothing required: the replica is an extra
    assert room(unit, state) == 0
    assert room(replica.children[0], state) == 2  # the pods alone would fit
    searched: list[int] = []
    run = engine_attempts.run
    monkeypatch.setattr(engine_attempts, "run", lambda *a, **k: searched.append(1) or run(
        *a, **k))
    quiet = place(unit, state, Options(explain=False), commit=False)
    assert not quiet.admitted and not searched  # no pod fits: no search
    got = solve(unit, state)
    assert got.status == "optimal" and got.max_pods == 0  # the exact solver agrees
    # a second free node in r0: the replica fits there
    txn = state.begin()
    txn.place(np.array([1]), np.array([-8]), gpu)
    txn.commit()
    assert room(unit, state) == 2
    d = place(unit, state, Options(explain=False), commit=False)
    assert d.admitted and sorted(d.assignments.values()) == ["n-z0-r0-h0", "n-z0-r0-h1"]
