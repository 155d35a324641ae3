"""The nested capacity bound (``engine/bound.py``): a unit whose children find no domain
inside any domain of its root is rejected without asking the exact solver to prove it;
the bound never rejects what the solver can place."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from placement_helpers import pinned

from gangsched.bench.instances import random_instance
from gangsched.cluster.state import ClusterState
from gangsched.gang import TreeNode, minimum_pods
from gangsched.placement import exact, place
from gangsched.placement.engine.bound import Bound
from gangsched.placement.engine.domains import Domains
from gangsched.placement.engine.facts import Facts
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify
from gangsched.testing.builders import GPU, cluster, cons, group, podset


def could_fit(tree: TreeNode, state: ClusterState) -> bool:
    facts = Facts(tree, state)
    return Bound(facts, Domains(facts, True)).could_fit(tree, one=minimum_pods(tree) == 0)


@pytest.mark.parametrize("pin", [False, True])
def test_the_bound_never_rejects_what_the_solver_places(pin: bool) -> None:
    placed = caught = 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        state, unit = random_instance(rng)
        tree = pinned(unit, state, rng) if pin else unit
        fits = could_fit(tree, state)
        got = solve(tree, state, time_limit=20.0, maximize=minimum_pods(tree) == 0)
        if got.assignments and not verify(tree, state, got.assignments):
            placed += 1
            assert fits, seed
        elif got.status == "infeasible" and not fits:
            caught += 1
    assert placed > 30
    assert caught > 5  # and it does reject some


def busy_blocks() -> ClusterState:
    """Two blocks of two racks of three 8-GPU nodes; in each block the first rack is
    free and the second has one free node: four free nodes a block, one rack of them
    holding two pods of 8 GPUs twice."""
    state = cluster((("zone", 1), ("block", 2), ("rack", 2), ("host", 3)))
    gpu = state.shape({GPU: 1})
    busy = np.array([4, 5, 10, 11])  # the second rack's last two nodes, in each block
    txn = state.begin()
    txn.place(busy, np.full(len(busy), 8), gpu)
    txn.commit()
    return state


def training(replicas: int) -> TreeNode:
    """A role of replicas of two 8-GPU pods each, each replica in one rack, the job in
    one block."""
    role = group("t/role", [group(f"t/role/r{i}", [podset(f"t/role/r{i}/w", 2, gpu=8)],
                                  topology=cons("rack")) for i in range(replicas)])
    return group("t", [role], topology=cons("block"))


def no_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the exact solver was asked")

    monkeypatch.setattr(exact, "solve", refuse)


def test_replicas_no_block_holds_together_are_rejected_without_the_solver(
        monkeypatch: pytest.MonkeyPatch) -> None:
    state = busy_blocks()
    unit = training(2)
    # each block has four free nodes, and each replica alone fits in a rack of it, but
    # only one rack a block holds a replica: the exact solver agrees nothing fits
    assert solve(unit, state, maximize=False).status == "infeasible"
    no_solver(monkeypatch)
    d = place(unit, state, commit=False)
    assert not d.admitted and "t" in d.reason
    assert place(training(1), state, commit=False).admitted  # one replica fits


def test_a_pod_in_a_child_that_cannot_be_satisfied_is_not_counted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a unit needing one pod of any role, whose only role needs its two 8-GPU pods (of
    # two shapes) in one rack, pinned to a block where each pod alone fits in a rack but
    # no rack has the GPUs of both
    state = busy_blocks()
    txn = state.begin()
    gpu = state.shape({GPU: 1})
    txn.place(np.array([1, 2, 3]), np.array([4, 8, 4]), gpu)  # z0-b0: [8, 4, 0], [4, 0, 0]
    txn.commit()
    role = group("u/role", [podset("u/role/a", 1, gpu=8, cpu=1000),
                            podset("u/role/b", 1, gpu=8, cpu=2000)], topology=cons("rack"))
    unit = group("u", [group("u/roles", [role], min_groups=0)], min_groups=0, min_pods=1,
                 topology=(replace(cons("block")[0], value="z0-b0"),))
    assert solve(unit, state, maximize=False).status == "infeasible"
    no_solver(monkeypatch)
    d = place(unit, state, commit=False)
    assert not d.admitted and "u" in d.reason
