"""Constraints on any node label (KEP-5732), including keys whose domains cut across the
chain of levels: all pods of the constrained group on nodes sharing one value of the key,
nodes without the label no candidates, checked by the independent verifier."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gangsched.bench.instances import BLOCK, RACK, SWITCH, random_instance
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, Mode, constraint_keys
from gangsched.placement import place
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify
from gangsched.testing.builders import group, node, podset

ZONE = "topology.kubernetes.io/zone"
TAS_RACK = "topology.kubernetes.io/rack"
PLANE = "example.com/plane"  # one plane per host index: cuts across every rack


def plane_cluster(racks: int = 2, hosts: int = 4, gpu: int = 8) -> ClusterState:
    nodes = [node(f"r{r}-h{h}", {ZONE: "z", TAS_RACK: f"r{r}", PLANE: f"p{h % 2}"}, gpu=gpu)
             for r in range(racks) for h in range(hosts)]
    keys = {TAS_RACK, PLANE}
    return ClusterState.from_nodes(nodes, None, keys=keys)


def values(state: ClusterState, assignments: dict[str, str], key: str) -> set[str]:
    index = state.topology.index
    return {state.topology.nodes[index[n]].labels[key] for n in assignments.values()}


def test_the_upstream_rack_label_is_a_level_without_a_topology_object() -> None:
    state = plane_cluster()
    assert state.topology.keys[:2] == [ZONE, TAS_RACK]
    d = place(group("g", [podset("g/w", 4, gpu=8)], topology=(Constraint(TAS_RACK),)), state)
    assert d.admitted and len(values(state, d.assignments, TAS_RACK)) == 1


def test_a_required_crossing_key_keeps_the_gang_on_one_value() -> None:
    state = plane_cluster()
    before = state.snapshot()
    unit = group("g", [podset("g/w", 4, gpu=8)], topology=(Constraint(PLANE),))
    d = place(unit, state)
    assert d.admitted
    assert len(values(state, d.assignments, PLANE)) == 1  # one plane, across both racks
    assert len(values(state, d.assignments, TAS_RACK)) == 2
    assert verify(unit, before, d.assignments) == []
    assert {g.domain for g in d.groups if g.path == "g"} <= {"p0", "p1"}


def test_a_crossing_key_inside_a_rack() -> None:
    state = plane_cluster()
    unit = group("g", [podset("g/w", 2, gpu=8)],
                 topology=(Constraint(TAS_RACK), Constraint(PLANE)))
    d = place(unit, state)
    assert d.admitted
    assert len(values(state, d.assignments, PLANE)) == 1
    assert len(values(state, d.assignments, TAS_RACK)) == 1
    # three pods do not fit one plane of one rack (two hosts each)
    big = group("h", [podset("h/w", 3, gpu=8)], topology=(Constraint(TAS_RACK), Constraint(PLANE)))
    assert not place(big, state).admitted


def test_a_pinned_crossing_value() -> None:
    state = plane_cluster()
    unit = group("g", [podset("g/w", 2, gpu=8)], topology=(Constraint(PLANE, value="p1"),))
    d = place(unit, state)
    assert d.admitted and values(state, d.assignments, PLANE) == {"p1"}


def test_a_preferred_crossing_key_falls_back_to_the_whole_scope() -> None:
    state = plane_cluster(racks=1, hosts=4)  # two hosts per plane
    pref: Mode = "preferred"
    fits = group("g", [podset("g/w", 2, gpu=8)], topology=(Constraint(PLANE, pref),))
    d = place(fits, state, commit=False)
    assert d.admitted and len(values(state, d.assignments, PLANE)) == 1
    spread = group("s", [podset("s/w", 3, gpu=8)], topology=(Constraint(PLANE, pref),))
    d = place(spread, state)
    assert d.admitted and len(values(state, d.assignments, PLANE)) == 2


def test_children_on_a_crossing_key_under_a_rack_parent() -> None:
    state = plane_cluster()
    kids = [group(f"g/c{i}", [podset(f"g/c{i}/w", 2, gpu=8)], topology=(Constraint(PLANE),))
            for i in range(2)]
    unit = group("g", kids, topology=(Constraint(TAS_RACK),))
    before = state.snapshot()
    d = place(unit, state)
    assert d.admitted
    assert len(values(state, d.assignments, TAS_RACK)) == 1
    assert verify(unit, before, d.assignments) == []


def test_rejection_names_the_crossing_key_and_its_best_domain() -> None:
    state = plane_cluster(racks=2, hosts=4)  # each plane: 4 hosts of 8 GPUs
    unit = group("g", [podset("g/w", 5, gpu=8)], topology=(Constraint(PLANE),))
    d = place(unit, state)
    assert not d.admitted
    assert "inside one plane" in d.reason and "holds 4" in d.reason


def test_nodes_lacking_the_label_are_not_candidates() -> None:
    nodes = [node(f"n{i}", {PLANE: "p0"} if i < 2 else {}, gpu=8) for i in range(4)]
    state = ClusterState.from_nodes(nodes, None, keys={PLANE})
    unit = group("g", [podset("g/w", 2, gpu=8)], topology=(Constraint(PLANE),))
    d = place(unit, state)
    assert d.admitted and set(d.assignments.values()) == {"n0", "n1"}
    three = group("h", [podset("h/w", 1, gpu=8)], topology=(Constraint(PLANE),))
    assert not place(three, state).admitted


@pytest.mark.parametrize("as_group", [True, False])
def test_a_gang_of_no_minimum_takes_the_crossing_domain_with_room(as_group: bool) -> None:
    # five pods, none required: the plane with room for two, not the one with none
    nodes = [node("a", {PLANE: "p0"}, gpu=4), node("b", {PLANE: "p1"}, gpu=16)]
    state = ClusterState.from_nodes(nodes, [])  # no levels: the plane is a crossing key
    assert not state.topology.nested(PLANE)
    ps = podset("g/w", 5, gpu=8, min_pods=0, topology=() if as_group else (Constraint(PLANE),))
    unit = group("g", [ps], topology=(Constraint(PLANE),)) if as_group else ps
    before = state.snapshot()
    d = place(unit, state)
    assert d.admitted, d.reason
    assert set(d.assignments.values()) == {"b"} and len(d.assignments) == 2
    assert verify(unit, before, d.assignments) == []


# -- against the exact solver ------------------------------------------------------------

RELABEL = {BLOCK: "example.com/block", RACK: TAS_RACK}


def test_custom_labels_reach_the_recall_of_well_known_ones() -> None:
    """The same random instances with their keys renamed to labels no Topology object
    names (levels derived from the labels' nesting) are admitted as often, against the
    exact solver; every admission is sound."""
    feasible = known = custom = 0
    for seed in range(60):
        state, unit = random_instance(np.random.default_rng(seed))
        state2, unit2 = random_instance(np.random.default_rng(seed), RELABEL)
        assert all(state2.topology.nested(k) for k in constraint_keys([unit2]))
        before = state2.snapshot()
        d1, d2 = place(unit, state), place(unit2, state2)
        if d2.admitted:
            assert verify(unit2, before, d2.assignments) == []
        exact = solve(unit2, before, time_limit=10.0, maximize=False)
        if exact.status != "infeasible":
            feasible += 1
            known += d1.admitted
            custom += d2.admitted
    assert feasible >= 20
    assert custom == known


def with_switch(unit: Group, rng: np.random.Generator) -> Group:
    """The unit with a required or preferred constraint on the crossing switch key, on the
    root or on one of its children."""
    mode: Mode = "required" if rng.random() < 0.7 else "preferred"
    con = Constraint(SWITCH, mode)
    target = int(rng.integers(0, len(unit.children) + 1))
    if target == len(unit.children):
        return replace(unit, topology=(*unit.topology, con))
    kids = list(unit.children)
    kids[target] = replace(kids[target], topology=(*kids[target].topology, con))
    return replace(unit, children=kids)


def switch_instance(seed: int) -> tuple[ClusterState, Group]:
    rng = np.random.default_rng(seed)
    state, unit = random_instance(rng)
    unit = with_switch(unit, rng)
    keys = constraint_keys([unit])
    nodes = list(state.topology.nodes)
    pods = []  # the same free capacity: rebuild with the running pods' demand
    fresh = ClusterState.from_nodes(nodes, list(state.topology.keys), keys=keys)
    fresh.free[:] = state.free[:, [state.topology.index[n.name] for n in fresh.topology.nodes]]
    del pods
    return fresh, unit


@pytest.mark.parametrize("seed", range(30))
def test_crossing_key_decisions_are_sound_and_complete(seed: int) -> None:
    state, unit = switch_instance(seed)
    assert not state.topology.nested(SWITCH)
    before = state.snapshot()
    d = place(unit, state)
    exact = solve(unit, before, time_limit=10.0, maximize=False)
    if d.admitted:
        assert verify(unit, before, d.assignments) == []
        assert exact.status != "infeasible"
    elif exact.status == "optimal":
        pytest.fail(f"rejected a unit the MILP places: {d.reason}")
