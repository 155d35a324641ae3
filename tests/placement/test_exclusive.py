"""Exclusive domains (gang.py): an owner of a set keeps its domain to itself, inside one
unit and against units placed before it; the engine, the verifier and the exact MILP
agree on the rule."""

from __future__ import annotations

import numpy as np
import pytest

from gangsched.api.errors import ValidationError
from gangsched.api.types import Pod
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, claims_of, validate
from gangsched.placement import Decision, place
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify
from gangsched.scheduler.capacity import pins_of
from gangsched.scheduler.tree import residual
from gangsched.testing.builders import BLOCK, GPU, HOST, RACK, ZONE, cluster, group, podset

SET = "default/leaderworkerset.sigs.k8s.io/group-key"


def own(key: str = RACK, exclusive: str = SET) -> tuple[Constraint, ...]:
    return (Constraint(key, "required", exclusive=exclusive),)


def lws_group(name: str, pods: int = 2, gpu: int = 8, key: str = RACK) -> Group:
    """One LeaderWorkerSet group: all its pods in one rack it owns."""
    return group(name, [podset(f"{name}/pods", pods, gpu=gpu)], topology=own(key))


def small() -> ClusterState:
    """2 zones x 1 block x 2 racks x 2 hosts of 8 GPUs: 4 racks of 16 GPUs."""
    return cluster((("zone", 2), ("block", 1), ("rack", 2), ("host", 2)))


def racks_of(state: ClusterState, d: Decision, prefix: str = "") -> set[str]:
    by_name = {n.name: n for n in state.topology.nodes}
    return {by_name[n].labels[RACK] for p, n in d.assignments.items()
            if p.startswith(f"default/{prefix}")}


def test_owners_inside_one_unit_take_different_racks() -> None:
    state = small()
    unit = group("app", [lws_group(f"app/g{i}", pods=1) for i in range(4)])
    before = state.snapshot()
    d = place(unit, state)
    assert d.admitted, d.reason
    assert verify(unit, before, d.assignments) == []
    racks = [racks_of(before, d, f"app-g{i}") for i in range(4)]
    assert all(len(r) == 1 for r in racks)
    assert len(set().union(*racks)) == 4  # one pod each, yet never two groups in a rack


def test_a_fifth_owner_finds_no_rack_of_its_own() -> None:
    state = small()
    unit = group("app", [lws_group(f"app/g{i}", pods=1) for i in range(5)])
    d = place(unit, state)
    assert not d.admitted
    assert "needs 5" in d.reason
    assert solve(unit, state, maximize=False).status == "infeasible"


def test_a_later_unit_avoids_the_racks_held_before_it() -> None:
    state = small()
    first = place(lws_group("a", pods=1), state)  # committed: holds its rack
    assert first.admitted
    held = racks_of(state, first)
    for name in ("b", "c", "d"):
        d = place(lws_group(name, pods=1), state)
        assert d.admitted, d.reason
        assert not racks_of(state, d) & held
        held |= racks_of(state, d)
    assert len(held) == 4
    d = place(lws_group("e", pods=1), state)
    assert not d.admitted
    assert "held exclusively by other groups of" in d.reason
    assert "4 racks" in d.reason


def test_the_same_owner_placed_again_keeps_its_rack() -> None:
    state = small()
    unit = lws_group("a", pods=3, gpu=4)
    d = place(unit, state)
    assert d.admitted
    sets = {"a/pods": {p: n for p, n in list(d.assignments.items())[:2]}}
    rest = residual(unit, sets, lambda node, key: pins_of(state, node, key))
    assert rest is not None
    assert rest.path == unit.path  # the same owner
    again = place(rest, state, commit=False)
    assert again.admitted, again.reason


def test_other_sets_and_non_owners_share_racks_freely() -> None:
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 2)))
    assert place(lws_group("a", pods=1, gpu=2), state).admitted
    other_set = group("b", [podset("b/pods", 1, gpu=2)], topology=own(exclusive="other"))
    assert place(other_set, state).admitted
    assert place(group("c", [podset("c/pods", 1, gpu=2)], topology=(Constraint(RACK),)),
                 state).admitted
    d = place(lws_group("d", pods=1, gpu=2), state)
    assert not d.admitted  # the only rack is held by a, of the same set


def test_owners_at_two_levels_nest() -> None:
    """A group owns a block, its subgroups each own a rack (LWS's two annotations)."""
    state = cluster((("zone", 1), ("block", 2), ("rack", 2), ("host", 2)))
    sub = "default/leaderworkerset.sigs.k8s.io/subgroup-key"

    def lws(name: str) -> Group:
        return group(name, [group(f"{name}/s{i}", [podset(f"{name}/s{i}/pods", 2, gpu=8)],
                                  topology=own(RACK, sub)) for i in range(2)],
                     topology=own(BLOCK))

    before = state.snapshot()
    a = place(lws("a"), state)
    b = place(lws("b"), state)
    assert a.admitted and b.admitted
    blocks = {n.labels[BLOCK] for n in before.topology.nodes
              if n.name in set(a.assignments.values())}
    other = {n.labels[BLOCK] for n in before.topology.nodes
             if n.name in set(b.assignments.values())}
    assert len(blocks) == 1 and len(other) == 1 and blocks != other
    assert not place(lws("c"), state).admitted


def test_verify_reports_shared_and_taken_domains() -> None:
    state = small()
    unit = group("app", [lws_group("app/g0", pods=1), lws_group("app/g1", pods=1)])
    nodes = [n.name for n in state.topology.nodes]
    shared = {"default/app-g0-pods-0": nodes[0], "default/app-g1-pods-0": nodes[1]}
    assert any("shares" in p for p in verify(unit, state, shared))
    state.hold([(SET, RACK, state.topology.nodes[2].labels[RACK], "x", 1)])
    taken = {"default/app-g0-pods-0": nodes[0], "default/app-g1-pods-0": nodes[2]}
    assert any("held by another group" in p for p in verify(unit, state, taken))


def test_exact_solver_respects_held_domains() -> None:
    state = small()
    for n in state.topology.nodes[:6]:  # 3 of the 4 racks held by others
        state.hold([(SET, RACK, n.labels[RACK], "other", 1)])
    unit = group("app", [lws_group("app/g0", pods=2), lws_group("app/g1", pods=1)])
    assert solve(unit, state, maximize=False).status == "infeasible"
    assert not place(unit, state).admitted
    one = lws_group("solo", pods=2)
    r = solve(one, state, maximize=False)
    assert r.feasible and r.assignments is not None
    assert verify(one, state, r.assignments) == []


def test_bound_pods_hold_their_domains_once_their_claims_are_known() -> None:
    state = small()
    unit = lws_group("a", pods=1)
    name = state.topology.nodes[0].name
    pod = Pod("a-pods-0", "default", requests={GPU: 8, "pods": 1}, node_name=name)
    state.charge_bound(pod)
    assert state.claims == {}
    state.note_exclusive(unit)  # the running pod now holds its rack for "a"
    rack = state.topology.nodes[0].labels[RACK]
    assert state.held_by_others(SET, RACK, "b") == {rack}
    assert state.held_by_others(SET, RACK, "a") == set()
    snap = state.snapshot()
    state.release(pod.key)
    assert state.claims[(SET, RACK)] == {}
    assert snap.held_by_others(SET, RACK, "b") == {rack}  # snapshots are independent


def test_a_rolled_back_placement_holds_nothing() -> None:
    state = small()
    d = place(lws_group("a", pods=1), state, commit=False)
    assert d.admitted
    assert not any(state.claims.values())


def test_claims_of_lists_every_owner_above_a_set() -> None:
    tree = group("a", [group("a/s", [podset("a/s/p", 1)], topology=own(RACK, "sub"))],
                 topology=own(ZONE))
    assert claims_of(tree) == {"a/s/p": ((SET, ZONE, "a"), ("sub", RACK, "a/s"))}


@pytest.mark.parametrize(("topology", "message"), [
    ((Constraint(RACK, "preferred", exclusive=SET),), "must be required"),
    ((Constraint(RACK, "required", exclusive=""),), "names no set"),
])
def test_bad_exclusive_constraints(topology: tuple[Constraint, ...], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        validate(group("g", [podset("g/p", 1)], topology=topology))


def test_an_owner_inside_an_owner_of_the_same_set_and_key_is_refused() -> None:
    tree = group("g", [group("g/a", [podset("g/a/p", 1)], topology=own())], topology=own())
    with pytest.raises(ValidationError, match="owns that domain already"):
        validate(tree)


def test_dry_runs_leave_claims_alone() -> None:
    state = small()
    assert place(lws_group("a", pods=1), state).admitted
    before = {k: {v: dict(o) for v, o in m.items()} for k, m in state.claims.items()}
    free = state.free.copy()
    place(group("x", [lws_group(f"x/g{i}", pods=1) for i in range(5)]), state)
    assert state.claims == before
    assert np.array_equal(state.free, free)


def optional_owner(name: str, min_pods: int = 0, key: str = RACK) -> Group:
    """An owner whose minimum may be no pod: it holds no rack until it has pods."""
    return group(name, [podset(f"{name}/p", 1, gpu=4, min_pods=min_pods)], min_groups=0,
                 topology=own(key))


def one_rack() -> ClusterState:
    """One rack of one host: room for two pods, one owner."""
    return cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 1)))


@pytest.mark.parametrize("mins", [(0, 0), (1, 0), (0, 1)])
def test_owners_grown_as_extras_keep_out_of_a_rack_a_sibling_took(mins: tuple[int, int]) -> None:
    # each owner's minimum may be empty, so it holds nothing when the minimum is placed;
    # growing it afterwards must still respect the rack its sibling took
    state = one_rack()
    unit = group("job", [optional_owner("job/a", mins[0]), optional_owner("job/b", mins[1])],
                 min_groups=2)
    validate(unit, state.topology.keys)
    before = state.snapshot()
    d = place(unit, state)
    assert d.admitted, d.reason
    assert verify(unit, before, d.assignments) == []
    assert len(d.assignments) == 1  # the rack has one owner, whichever it is


def test_a_pod_count_reached_through_two_owners_of_one_rack_is_rejected() -> None:
    # two pods are needed, each can only come from a different owner, and there is one rack
    state = one_rack()
    inner = group("job/c", [optional_owner("job/c/a"), optional_owner("job/c/b")], min_groups=2)
    unit = group("job", [inner], min_groups=0, min_pods=2)
    validate(unit, state.topology.keys)
    assert solve(unit, state, time_limit=5.0, maximize=False).status == "infeasible"
    d = place(unit, state)
    assert not d.admitted
    assert not any(state.claims.values())


def test_owners_of_hosts_grown_as_extras_keep_out_of_a_host_a_sibling_took() -> None:
    # the hostname key without a hostname level: each node is its own domain, by name
    state = ClusterState.from_nodes(one_rack().topology.nodes, [])
    assert HOST not in state.topology.keys
    unit = group("job", [optional_owner("job/a", key=HOST), optional_owner("job/b", key=HOST)],
                 min_groups=2)
    validate(unit, state.topology.keys)
    before = state.snapshot()
    d = place(unit, state)
    assert d.admitted, d.reason
    assert verify(unit, before, d.assignments) == [] and len(d.assignments) == 1
