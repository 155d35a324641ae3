"""Helpers shared by the placement tests."""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np

from gangsched.api.types import Node, Taint
from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, PodSet, TreeNode, podsets
from gangsched.testing.builders import GPU, LEVEL_KEYS, levels_of, nodes


def pinned(node: TreeNode, state: ClusterState, rng: np.random.Generator) -> TreeNode:
    """The tree with about half of its required constraints pinned to a value their
    level has (nested pins may name disjoint domains: then nothing fits)."""
    topo = []
    for c in node.topology:
        lv = state.topology.level_for(c.key) if c.mode == "required" else None
        if lv is not None and rng.random() < 0.5:
            values = sorted({v for v, ok in zip(lv.values, lv.valid.tolist(), strict=True)
                             if ok})
            c = replace(c, value=values[int(rng.integers(len(values)))])
        topo.append(c)
    if isinstance(node, PodSet):
        return replace(node, topology=tuple(topo))
    return replace(node, topology=tuple(topo),
                   children=[pinned(ch, state, rng) for ch in node.children])


SHAPES = (
    (("zone", 2), ("block", 2), ("rack", 3), ("host", 5)),
    (("rack", 6), ("host", 8)),
    (("zone", 2), ("rack", 4), ("host", 40)),
)


def random_cluster(rng: np.random.Generator) -> ClusterState:
    """A regular topology with random background load, some nodes lacking their rack
    label, cordoned or tainted."""
    shape = SHAPES[int(rng.integers(len(SHAPES)))]
    ns = nodes(shape, {"cpu": 16_000, "memory": 1 << 36, GPU: 8, "pods": 20})
    out: list[Node] = []
    for nd in ns:
        r = rng.random()
        if r < 0.04:  # lacks its rack label
            nd.labels.pop(LEVEL_KEYS["rack"], None)
        elif r < 0.07:
            nd = Node(nd.name, nd.labels, nd.taints, nd.allocatable, unschedulable=True)
        elif r < 0.10:
            nd = Node(nd.name, nd.labels, (Taint("dedicated", "x", "NoSchedule"),),
                      nd.allocatable)
        out.append(nd)
    state = ClusterState.from_nodes(out, levels_of(shape))
    busy = rng.random(state.n_nodes) < 0.5
    gpus = rng.integers(0, 9, state.n_nodes) * busy
    cpus = rng.integers(0, 16, state.n_nodes) * 1000 * busy
    txn = state.begin()
    for j in np.flatnonzero(busy).tolist():
        shape_ = state.shape({GPU: int(gpus[j]), "cpu": int(cpus[j])})
        txn.place(np.array([j]), np.array([1]), shape_)
    txn.commit()
    return state


def decided(d: object) -> dict[str, object]:
    """A decision as a dict, with the order of its assignments."""
    out = asdict(d)  # type: ignore[call-overload]
    out["order"] = list(out["assignments"])  # the assignment order too
    return out


def cache_current(state: ClusterState, unit: Group) -> None:
    """The cached capacities of the unit's pod kinds (which a committed fast decision
    patches directly, :meth:`ClusterState.took`) are what a fresh copy computes."""
    fresh = state.snapshot()  # an empty cache
    for ps in podsets(unit):
        shape = state.shape(ps.requests)
        assert np.array_equal(state.capacity(shape, ps.requirements),
                              fresh.capacity(shape, ps.requirements))
        for lv in state.topology.levels:
            assert np.array_equal(state.domain_sums(shape, ps.requirements, None, lv),
                                  fresh.domain_sums(shape, ps.requirements, None, lv))
