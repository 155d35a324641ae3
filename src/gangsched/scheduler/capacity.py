"""Batch changes to a ClusterState: assume bound pods, release them, hide nodes.

All go through the state's public transaction API, one vectorized change per pod shape,
so the per-shape fit caches stay in sync.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from gangsched.cluster.state import ClusterState, Shape


def assume(state: ClusterState, pods: Iterable[tuple[str, str, Mapping[str, int]]]) -> None:
    """Charge pods ``(key, node name, requests)`` as bound (kube-scheduler's assume);
    pods already charged or on unknown nodes are skipped."""
    groups: dict[Shape, list[tuple[str, int]]] = {}
    index = state.topology.index
    for key, node, requests in pods:
        if key in state.bound:
            continue
        j = index.get(node)
        if j is None:
            continue
        groups.setdefault(state.shape(requests), []).append((key, j))
    txn = state.begin()
    for shape, items in groups.items():
        nodes, counts = tally(j for _, j in items)
        txn.place(nodes, counts, shape)
        for key, j in items:
            state.bound[key] = (j, shape)
            state.pod_held(key, j, +1)  # its exclusive domains, if any
    txn.commit()


def tally(nodes: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct node indices and how often each occurs (a dict, not np.unique: a
    gang's few pods cost ~1 us here against ~12 us there)."""
    counts: dict[int, int] = {}
    for j in nodes:
        counts[j] = counts.get(j, 0) + 1
    n = len(counts)
    return (np.fromiter(counts, dtype=np.int64, count=n),
            np.fromiter(counts.values(), dtype=np.int64, count=n))


def release(state: ClusterState, keys: Iterable[str]) -> int:
    """Give back the capacity of charged pods; returns how many were charged."""
    groups: dict[Shape, list[int]] = {}
    for key in keys:
        entry = state.bound.pop(key, None)
        if entry is not None:
            groups.setdefault(entry[1], []).append(entry[0])
            state.pod_held(key, entry[0], -1)
    txn = state.begin()
    n = 0
    for shape, js in groups.items():
        nodes, counts = tally(js)
        txn.place(nodes, -counts, shape)  # a negative take gives back
        n += len(js)
    txn.commit()
    return n


def hide(state: ClusterState, nodes: np.ndarray) -> None:
    """Make every resource of ``nodes`` look used up (a reservation others may not take)."""
    if len(nodes) == 0:
        return
    txn = state.begin()
    for r in range(len(state.resources)):
        take = np.maximum(state.free[r, nodes], 0)
        if take.any():
            txn.place(nodes, take, Shape((r,), (1,)))
    txn.commit()


def domain_nodes(state: ClusterState, key: str | None, value: str | None) -> np.ndarray:
    """Node indices of the domain whose ``key`` label is ``value`` (all nodes for None)."""
    if key is None:
        return np.arange(state.n_nodes, dtype=np.int64)
    if value is None:
        return np.zeros(0, dtype=np.int64)
    return state.topology.nodes_with(key, value)


def pins_of(state: ClusterState, node: str, key: str) -> tuple[tuple[str, str | None], ...]:
    """The (key, value) pins naming the domain of ``key`` that holds ``node``, widest
    first: its value, after those of the wider levels needed to tell it from domains
    named alike (a rack r0 in two blocks: block=b1, rack=r0, as the engine's domains are
    paths). A wider label the node lacks is pinned to None: the nodes lacking it (a rack
    below no block is apart from the racks of that name in blocks). () when the node
    lacks the key."""
    v = label_of(state, node, key)
    if v is None:
        return ()
    topo = state.topology
    lv = topo.level(key)
    if lv is None or lv.unique:  # hostname too: a chain may have two hosts named alike
        return ((key, v),)
    chain = topo.levels
    li = next(i for i, x in enumerate(chain) if x is lv)
    d = int(lv.node_domain[topo.index[node]])
    out: list[tuple[str, str | None]] = [(key, v)]
    while not chain[li].unique and li > 0:
        d, li = int(chain[li].parent[d]), li - 1
        wider = chain[li]
        out.append((wider.key, wider.values[d] if wider.valid[d] else None))
    return tuple(reversed(out))


def label_of(state: ClusterState, node: str, key: str) -> str | None:
    """The node's domain of a topology key, as the engine names it
    (:func:`~gangsched.cluster.topology.domain_of`: for the hostname key, its name unless
    hostname is a level of the chain)."""
    j = state.topology.index.get(node)
    return None if j is None else state.domain_value(j, key)


