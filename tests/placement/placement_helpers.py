"""Helpers shared by the placement tests."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gangsched.cluster.state import ClusterState
from gangsched.gang import PodSet, TreeNode


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
