"""ClusterState and its transactions: property tests over random clusters and changes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangsched.api.types import NodeRequirements, Pod
from gangsched.cluster.state import _SHAPES, ClusterState, _distinct
from gangsched.scheduler.capacity import domain_nodes, pins_of
from gangsched.testing.builders import GPU, HOST, RACK, cluster, levels_of, nodes
from gangsched.testing.builders import node as make_node

SHAPE = (("zone", 2), ("rack", 2), ("host", 3))


def fresh() -> ClusterState:
    return ClusterState.from_nodes(nodes(SHAPE), levels_of(SHAPE))


# a change: (node index, pods, gpus per pod)
changes = st.lists(
    st.tuples(st.integers(0, 11), st.integers(1, 4), st.integers(0, 8)), max_size=12
)


def apply_fitting(state: ClusterState, txn_changes: list[tuple[int, int, int]]) -> None:
    """Take pods only where they fit, as the engine does (the fit count says how many)."""
    txn = state.begin()
    for node, count, gpu in txn_changes:
        shape = state.shape({"cpu": 1000, GPU: gpu, "pods": 1})
        fit = int(state.fit(shape)[node])
        take = min(count, fit)
        if take:
            txn.place(np.array([node]), np.array([take]), shape)
    txn.commit()


@settings(max_examples=60, deadline=None)
@given(changes)
def test_free_never_goes_negative(cs: list[tuple[int, int, int]]) -> None:
    state = fresh()
    apply_fitting(state, cs)
    assert (state.free >= 0).all()
    assert (state.free <= state.alloc).all()


@settings(max_examples=60, deadline=None)
@given(changes)
def test_discard_restores_the_exact_state_and_caches(cs: list[tuple[int, int, int]]) -> None:
    state = fresh()
    shape = state.shape({GPU: 8, "pods": 1})
    rack = state.topology.level(RACK)
    assert rack is not None
    before = state.free.copy()
    sums = state.domain_sums(shape, NodeRequirements(), None, rack).copy()
    txn = state.begin()
    for node, count, gpu in cs:
        txn.place(np.array([node]), np.array([count]), state.shape({GPU: gpu, "pods": 1}))
    txn.discard()
    assert np.array_equal(state.free, before)
    assert np.array_equal(state.domain_sums(shape, NodeRequirements(), None, rack), sums)


@settings(max_examples=60, deadline=None)
@given(changes, changes)
def test_commit_then_discard_of_a_later_transaction_keeps_the_first(
    first: list[tuple[int, int, int]], second: list[tuple[int, int, int]]
) -> None:
    state = fresh()
    apply_fitting(state, first)
    after_first = state.free.copy()
    txn = state.begin()
    for node, count, gpu in second:
        txn.place(np.array([node]), np.array([count]), state.shape({GPU: gpu, "pods": 1}))
    txn.discard()
    assert np.array_equal(state.free, after_first)


@settings(max_examples=40, deadline=None)
@given(changes)
def test_cached_capacity_matches_a_fresh_computation(cs: list[tuple[int, int, int]]) -> None:
    state = fresh()
    shape = state.shape({"cpu": 1000, GPU: 2, "pods": 1})
    state.fit(shape)  # cache it, then change the cluster under it
    apply_fitting(state, cs)
    expected = np.minimum.reduce([state.free[state.rindex[r]] // a for r, a in
                                  (("cpu", 1000), (GPU, 2), ("pods", 1))])
    assert np.array_equal(state.fit(shape), np.maximum(expected, 0))


@given(st.lists(st.lists(st.integers(0, 499), min_size=1, max_size=300), min_size=2,
                max_size=4))
def test_distinct_nodes_of_a_journal_are_np_unique(arrays: list[list[int]]) -> None:
    """The nodes a cache catches up on: each once, ascending, on every path (a set for a
    few, a mark per node for many, a sort otherwise)."""
    parts = [np.array(a, dtype=np.int64) for a in arrays]
    expected = np.unique(np.concatenate(parts))
    for n in (500, 10_000, 1_000_000):
        assert np.array_equal(_distinct(parts, n), expected)


def test_savepoints_roll_back_only_later_changes() -> None:
    state = cluster(SHAPE)
    shape = state.shape({GPU: 2, "pods": 1})
    txn = state.begin()
    txn.place(np.array([0]), np.array([1]), shape)
    mark = txn.mark()
    txn.place(np.array([1]), np.array([2]), shape)
    txn.rollback_to(mark)
    g = state.rindex[GPU]
    assert state.free[g, 0] == 6 and state.free[g, 1] == 8


def test_bound_pods_are_charged_and_released() -> None:
    ns = nodes(SHAPE)
    pod = Pod("p", requests={GPU: 4, "pods": 1}, node_name=ns[0].name)
    state = ClusterState.from_nodes(ns, levels_of(SHAPE), [pod])
    j = state.topology.index[ns[0].name]
    assert state.free[state.rindex[GPU], j] == 4
    state.release(pod.key)
    assert state.free[state.rindex[GPU], j] == 8



def test_a_shape_is_the_same_however_often_and_in_whatever_order_it_is_asked_for() -> None:
    """``shape`` is memoized by the requests: equal requests give equal shapes (the same
    object when asked for in the same order), nothing requested or an unknown resource
    gives what a fresh computation gives, and a full memo starts over without changing
    any answer."""
    cs = ClusterState.from_nodes(nodes((("rack", 2), ("host", 2)),
                                       {"cpu": 8_000, GPU: 8, "pods": 110}))
    a = cs.shape({"cpu": 1_000, GPU: 8, "pods": 1})
    assert cs.shape({"cpu": 1_000, GPU: 8, "pods": 1}) is a
    assert cs.shape({GPU: 8, "pods": 1, "cpu": 1_000}) == a
    assert a.index == (cs.rindex["cpu"], cs.rindex[GPU], cs.rindex["pods"])
    assert a.amount == (1_000, 8, 1) and not a.impossible
    assert cs.shape({"cpu": 0, "pods": 1}).index == (cs.rindex["pods"],)
    assert cs.shape({"example.com/fpga": 1, "pods": 1}).impossible
    for i in range(_SHAPES + 10):  # fills the memo past its bound
        got = cs.shape({"cpu": i + 1})
        assert got.amount == (i + 1,)
    assert cs.shape({"cpu": 1_000, GPU: 8, "pods": 1}) == a


@pytest.mark.parametrize("levels", [[RACK], [RACK, HOST]])
def test_a_hosts_nodes_and_pins_name_it_as_the_engine_does(levels: list[str]) -> None:
    """node-a's hostname label is host-a: the engine's host is node-a unless hostname is
    a level of the chain (then host-a); the scheduler's pins and a reserved host's nodes
    agree with it either way."""
    st_ = ClusterState.from_nodes([make_node("node-a", {HOST: "host-a", RACK: "r0"}),
                                   make_node("node-b", {RACK: "r0"})], levels)
    host = "host-a" if HOST in levels else "node-a"
    assert pins_of(st_, "node-a", HOST)[-1] == (HOST, host)
    assert domain_nodes(st_, HOST, host).tolist() == [0]
    assert domain_nodes(st_, HOST, "node-b").tolist() == [1]  # no label: its name
    lv = st_.topology.level_for(HOST)
    assert lv is not None and lv.values[int(lv.node_domain[0])] == host
