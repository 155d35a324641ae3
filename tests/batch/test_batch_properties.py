"""``place`` on a batch of random gang trees: every admitted workload's placement keeps
every rule of its tree (topology, minimums, filters), the admitted workloads together
never take more than the nodes had free, and a rejected workload holds nothing, with the
look-ahead, without it, and without minimum first."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangsched.batch import place_plan
from gangsched.bench.instances import LEVELS, random_instance, random_nodes
from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, PodSet, TreeNode, podsets
from gangsched.model import Plan, Workload
from gangsched.placement.verify import verify


def renamed(node: TreeNode, old: str, new: str) -> TreeNode:
    """The tree with its root path ``old`` (and its pods' names) changed to ``new``."""
    path = new + node.path[len(old):]
    if isinstance(node, PodSet):
        return replace(node, path=path, pods=tuple(p.replace(old, new, 1) for p in node.pods))
    assert isinstance(node, Group)
    return replace(node, path=path, name=path.rsplit("/", 1)[-1],
                   children=[renamed(c, old, new) for c in node.children])


@pytest.mark.parametrize("variant", [{}, {"lookahead": 0}, {"min_first": False}])
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 5))
def test_a_batch_is_sound_jointly(variant: dict[str, int | bool], seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    nodes, running = random_nodes(rng)
    trees = []
    for i in range(k):
        _, unit = random_instance(np.random.default_rng([seed, i]))
        trees.append(renamed(unit, unit.path, f"w{i}"))
    plan = Plan([Workload(t.path, "PodGroup", t) for t in trees], nodes, None, [])
    before = ClusterState.from_nodes(nodes, list(LEVELS), pods=running)
    state = ClusterState.from_nodes(nodes, list(LEVELS), pods=running)
    outcomes = place_plan(plan, state, **variant)  # type: ignore[arg-type]
    left = before.free.copy()
    index = before.topology.index
    for tree, out in zip(trees, outcomes, strict=True):
        if not out.admitted:
            assert not out.pods, f"{tree.path} was rejected but holds pods"
            continue
        assert verify(tree, before, out.pods) == []
        requests = {p: ps.requests for ps in podsets(tree) for p in ps.pods}
        for pod, node in out.pods.items():
            shape = before.shape(requests[pod])
            for r, a in zip(shape.index, shape.amount, strict=True):
                left[r, index[node]] -= a
    # a node may start overcommitted by running pods; placed pods never take it lower
    assert not ((left < 0) & (left < np.minimum(before.free, 0))).any()
    assert np.array_equal(left, state.free)  # the state holds exactly what was placed
