"""Exclusive domains on random instances, the engine against the exact MILP.

Two families:

* the random trees of :func:`gangsched.bench.instances.random_instance` with some of
  their required constraints made exclusive (two sets) and some domains already held by
  owners elsewhere: whatever the engine admits passes the verifier and the MILP finds
  feasible; whatever the MILP proves infeasible the engine rejects; the MILP's own
  placements verify;
* LeaderWorkerSet-like units (identical replicas, each owning a rack or block) with
  domains held elsewhere: there the engine's search is complete, so engine and MILP agree
  on feasibility both ways.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gangsched.bench.instances import BLOCK, GPU, RACK, ZONE, random_instance, random_nodes
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, PodSet, TreeNode, validate
from gangsched.placement import place
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify

seeds = st.integers(min_value=0, max_value=2**32 - 1)
SETS = ("lws/group-key", "lws/subgroup-key")


def _exclusive(node: TreeNode, rng: np.random.Generator,
               above: frozenset[tuple[str, str]]) -> TreeNode:
    """``node`` with some required, unpinned constraints made exclusive (never an owner
    inside an owner of the same set and key)."""
    topo: list[Constraint] = []
    mine = set(above)
    for c in node.topology:
        if c.mode == "required" and c.value is None and rng.random() < 0.6:
            s = SETS[int(rng.integers(len(SETS)))]
            if (s, c.key) not in mine:
                mine.add((s, c.key))
                c = replace(c, exclusive=s)
        topo.append(c)
    if isinstance(node, PodSet):
        return replace(node, topology=tuple(topo))
    kids = [_exclusive(ch, rng, frozenset(mine)) for ch in node.children]
    return replace(node, topology=tuple(topo), children=kids)


def _hold_some(state: ClusterState, rng: np.random.Generator) -> None:
    """Some domains already held by owners elsewhere (running units)."""
    for key in (ZONE, BLOCK, RACK):
        values = sorted({v for n in state.topology.nodes if (v := n.labels.get(key))})
        for v in values:
            if rng.random() < 0.25:
                s = SETS[int(rng.integers(len(SETS)))]
                state.hold([(s, key, v, f"elsewhere/{v}", 1)])


def mixed(seed: int) -> tuple[ClusterState, TreeNode]:
    rng = np.random.default_rng(seed)
    state, unit = random_instance(rng)
    tree = _exclusive(unit, rng, frozenset())
    validate(tree)
    _hold_some(state, rng)
    return state, tree


def replicas(seed: int) -> tuple[ClusterState, Group]:
    rng = np.random.default_rng(seed)
    nodes, used = random_nodes(rng)
    state = ClusterState.from_nodes(nodes, [ZONE, BLOCK, RACK], pods=used)
    key = RACK if rng.random() < 0.7 else BLOCK
    count = int(rng.integers(1, 6))
    pods = int(rng.integers(1, 5))
    gpu = int(rng.choice([1, 2, 4, 8]))
    kids: list[Group | PodSet] = []
    for i in range(count):
        path = f"lws/g{i}"
        ps = PodSet("pods", f"{path}/pods", tuple(f"ns/lws-{i}-{k}" for k in range(pods)),
                    {"cpu": 1000, GPU: gpu, "pods": 1}, min_pods=pods)
        kids.append(Group(f"g{i}", path, [ps], min_groups=1,
                          topology=(Constraint(key, exclusive=SETS[0]),)))
    need = int(rng.integers(1, count + 1))
    unit = Group("lws", "lws", kids, min_groups=need)
    validate(unit)
    _hold_some(state, rng)
    return state, unit


@settings(max_examples=80, deadline=None)
@given(seeds)
def test_mixed_trees_engine_is_sound_and_never_beats_the_milp(seed: int) -> None:
    state, unit = mixed(seed)
    before = state.snapshot()
    d = place(unit, state)
    exact = solve(unit, before, time_limit=5.0, maximize=False)
    if exact.assignments is not None:
        assert verify(unit, before, exact.assignments) == []  # the MILP is sound
    if not d.admitted:
        assert d.reason
        return
    assert verify(unit, before, d.assignments) == []
    assert exact.status != "infeasible", f"engine admitted what the MILP proves infeasible: {d}"


@settings(max_examples=80, deadline=None)
@given(seeds)
def test_owned_replicas_engine_and_milp_agree(seed: int) -> None:
    state, unit = replicas(seed)
    before = state.snapshot()
    d = place(unit, state)
    exact = solve(unit, before, time_limit=5.0, maximize=False)
    assert exact.status in ("optimal", "infeasible"), exact.status
    assert d.admitted == exact.feasible, (d.reason, exact.status)
    if d.admitted:
        assert verify(unit, before, d.assignments) == []
        held = set()
        for i in range(len(unit.children)):
            nodes = {n for p, n in d.assignments.items() if p.startswith(f"ns/lws-{i}-")}
            key = unit.children[i].topology[0].key
            values = {v for nd in before.topology.nodes if nd.name in nodes
                      if (v := nd.labels.get(key)) is not None}
            assert len(values) <= 1
            assert not values & held
            held |= values
