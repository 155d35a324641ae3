"""The exact MILP on instances small enough to solve by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import OptimizeResult

from gangsched.api.types import NodeRequirements, Taint, Toleration
from gangsched.bench.instances import random_instance
from gangsched.cluster.state import ClusterState
from gangsched.gang import TreeNode
from gangsched.placement import exact, place
from gangsched.placement.exact import ExactResult, solve
from gangsched.placement.verify import tree_minimum, verify
from gangsched.testing.builders import (
    GPU,
    RACK,
    cluster,
    cons,
    group,
    node,
    podset,
    replicas,
    take,
)


def two_racks(hosts: int = 3) -> ClusterState:
    """One zone, one block, racks r0 and r1 of ``hosts`` 8-GPU hosts each."""
    return cluster((("zone", 1), ("block", 1), ("rack", 2), ("host", hosts)))


def solved(unit: TreeNode, state: ClusterState) -> ExactResult:
    before = state.free.copy()
    r = solve(unit, state, time_limit=5.0)
    assert np.array_equal(state.free, before)  # the solver never touches the state
    if r.assignments is not None:
        assert verify(unit, state, r.assignments) == []
        if r.max_pods is not None:
            assert len(r.assignments) == r.max_pods
    return r


def racks_used(state: ClusterState, assignments: dict[str, str]) -> set[str]:
    by_name = {n.name: n for n in state.topology.nodes}
    return {by_name[n].labels[RACK] for n in assignments.values()}


def test_rack_required_gang_fits_in_the_only_rack_with_room() -> None:
    state = two_racks()
    take(state, "n-z0-b0-r1-h0", gpu=8)  # r1 holds 2 full-node pods, r0 holds 3
    unit = group("job", [podset("job/w", 3, gpu=8)], topology=cons("rack"))
    r = solved(unit, state)
    assert r.feasible and r.status == "optimal"
    assert r.min_pods_needed == 3 and r.max_pods == 3
    assert r.assignments is not None and racks_used(state, r.assignments) == {"z0-b0-r0"}


def test_rack_required_gang_is_infeasible_when_room_is_spread() -> None:
    state = two_racks()
    take(state, "n-z0-b0-r0-h0", gpu=8)
    take(state, "n-z0-b0-r1-h0", gpu=8)  # 4 free hosts, 2 per rack
    unit = group("job", [podset("job/w", 3, gpu=8)], topology=cons("rack"))
    r = solved(unit, state)
    assert not r.feasible and r.status == "infeasible" and r.max_pods is None
    # without the constraint the same gang fits across racks
    loose = group("job", [podset("job/w", 3, gpu=8)])
    r2 = solved(loose, state)
    assert r2.feasible and r2.max_pods == 3
    assert r2.assignments is not None and len(racks_used(state, r2.assignments)) == 2


def test_min_groups_chooses_the_replicas_that_fit() -> None:
    # 3 replicas of 3 full-node pods, each in one rack; only 2 racks of 3 hosts: any 2 of 3
    state = two_racks()
    unit = replicas("svc", 3, pods=3, gpu=8, min_replicas=2, replica_topology=cons("rack"))
    r = solved(unit, state)
    assert r.feasible and r.min_pods_needed == 6 and r.max_pods == 6
    unit_all = replicas("svc", 3, pods=3, gpu=8, replica_topology=cons("rack"))
    assert not solved(unit_all, state).feasible


def test_extras_maximum_counts_only_whole_children() -> None:
    # replicas of 2 pods x 8 GPUs, 1 required of 4; 5 free hosts: 2 whole replicas (4 pods),
    # the fifth host cannot hold half a replica
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 5)))
    unit = replicas("svc", 4, pods=2, gpu=8, min_replicas=1)
    r = solved(unit, state)
    assert r.feasible and r.min_pods_needed == 2 and r.max_pods == 4


def test_elastic_pod_set_extras_fill_the_room() -> None:
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 2)))
    unit = group("job", [podset("job/w", 10, gpu=2, min_pods=4)])
    r = solved(unit, state)
    assert r.feasible and r.min_pods_needed == 4 and r.max_pods == 8
    assert r.max_pods_bound == 8


def test_required_constraints_nest() -> None:
    # replicas each in one host, the whole unit in one rack
    state = two_racks(hosts=2)
    take(state, "n-z0-b0-r0-h0", gpu=4)
    unit = replicas("svc", 3, pods=2, gpu=4, min_replicas=2, topology=cons("rack"),
                    replica_topology=cons("kubernetes.io/hostname"))
    r = solved(unit, state)
    # r0 holds 4+8 GPUs: one replica on h1 (+ nothing else); r1 holds 2 replicas
    assert r.feasible and r.max_pods == 4
    assert r.assignments is not None and racks_used(state, r.assignments) == {"z0-b0-r1"}


def test_masks_caps_and_unknown_resources() -> None:
    taint = Taint("reserved", "true", "NoSchedule")
    extra = [node("tainted", {RACK: "x"}, taints=(taint,)),
             node("cordoned", {RACK: "x"}, unschedulable=True)]
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 1)), extra=extra)
    # untolerated: only the one clean host, capped at 2 pods per node
    capped = group("job", [podset("job/w", 6, gpu=1, min_pods=1, max_per_node=2)])
    assert solved(capped, state).max_pods == 2
    tol = NodeRequirements(tolerations=(Toleration("reserved", "Equal", "true", "NoSchedule"),))
    tolerant = group("job", [podset("job/w", 6, gpu=1, min_pods=1, max_per_node=2,
                                    requirements=tol)])
    assert solved(tolerant, state).max_pods == 4
    impossible = group("job", [podset("job/w", 1, extra={"example.com/fpga": 1})])
    assert not solved(impossible, state).feasible


def test_group_min_pods_with_all_or_nothing_children() -> None:
    # min_pods 4 over two 3-pod all-required sets: any satisfying placement has 6 pods
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 8)))
    unit = group("job", [podset("job/a", 3, gpu=8), podset("job/b", 3, gpu=8)],
                 min_groups=0, min_pods=4)
    assert tree_minimum(unit) == 6
    r = solved(unit, state)
    assert r.feasible and r.min_pods_needed == 6 and r.max_pods == 6
    small = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 5)))
    assert not solved(unit, small).feasible


def test_phase_one_only() -> None:
    state = two_racks()
    unit = group("job", [podset("job/w", 4, gpu=8, min_pods=2)])
    r = solve(unit, state, maximize=False)
    assert r.feasible and r.min_pods_needed == 2 and r.max_pods is None
    assert r.assignments is not None and len(r.assignments) == 2
    assert int(state.free[state.rindex[GPU]].sum()) == 48


# -- the engine against the MILP on minimal cases it gets wrong (engine bugs, for the lead) --


def engine_admits(unit: TreeNode, state: ClusterState) -> bool:
    assert solved(unit, state).feasible  # the exact answer: it fits
    d = place(unit, state, commit=False)
    return d.admitted and verify(unit, state, d.assignments) == []


def test_engine_caps_are_per_pod_set() -> None:
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 1)))
    unit = group("job", [podset("job/a", 1, gpu=1, max_per_node=1),
                         podset("job/b", 1, gpu=1, max_per_node=1)])
    assert engine_admits(unit, state)


def test_engine_min_groups_over_children_of_different_shapes() -> None:
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 1)))
    take(state, "n-z0-b0-r0-h0", gpu=8)  # GPUs full; CPU free
    unit = group("job", [podset("job/gpu", 1, gpu=8), podset("job/cpu", 2, cpu=1000)],
                 min_groups=1)
    assert engine_admits(unit, state)


def test_engine_zero_minimum_child_with_required_topology() -> None:
    state = two_racks(hosts=1)
    take(state, "n-z0-b0-r0-h0", gpu=8)  # rack r0 is full, r1 is free
    unit = group("job", [podset("job/w", 2, gpu=4, min_pods=0, topology=cons("rack"))],
                 min_groups=0, min_pods=2)
    assert engine_admits(unit, state)


def test_infeasible_verdicts_are_confirmed_without_presolve() -> None:
    # HiGHS's presolve called this instance infeasible; the engine's placement verifies
    state, unit = random_instance(np.random.default_rng(107894956))
    assert solve(unit, state).feasible


def test_a_limit_hit_before_any_solution_is_no_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """HiGHS stopped by its time limit before finding a solution still hands back an x
    (all zeros); that is no placement, so the unit is not reported feasible."""
    real = exact._run

    def stopped(model: object, sign: float, time_limit: float, presolve: bool = True,
                node_limit: int | None = None, relaxed: bool = False) -> OptimizeResult:
        res = real(model, sign, time_limit, presolve, node_limit, relaxed)  # type: ignore[arg-type]
        return OptimizeResult(x=np.zeros_like(res.x), status=1, message="time limit",
                              mip_gap=np.inf)

    unit = replicas("w", 2, pods=2, gpu=4, min_replicas=2, replica_topology=cons("rack"))
    state = two_racks()
    assert solved(unit, state).feasible  # it fits; the stopped solver just did not say so
    monkeypatch.setattr(exact, "_run", stopped)
    r = solve(unit, state, time_limit=5.0)
    assert (r.feasible, r.status, r.assignments) == (False, "unknown", None)
    monkeypatch.undo()
    # a stopped maximising phase keeps the minimum's solution, never the zeros
    calls = iter([real, stopped, stopped])
    monkeypatch.setattr(exact, "_run", lambda *a, **k: next(calls)(*a, **k))
    r = solve(unit, state, time_limit=5.0)
    assert r.feasible and r.assignments is not None and verify(unit, state, r.assignments) == []
