"""Starvation protection: a unit that waited too long reserves its best domain.

The domain is one of its widest required constraint's level (or the whole cluster when
it has none), the one where it comes closest to fitting: every resource its minimum needs
is allocatable there, and the most of it is free. Units behind it in the queue see that
capacity as used until it is admitted.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from gangsched.cluster.state import ClusterState
from gangsched.scheduler.tree import TreeNode, min_demand, required_constraints, widest_required

CLUSTER = "cluster"


@dataclass(frozen=True)
class Reservation:
    unit: str
    key: str | None  # label key of the reserved domain; None: the whole cluster
    value: str | None
    label: str  # readable domain name
    since: float

    @property
    def domain(self) -> tuple[str | None, str | None]:
        return (self.key, self.value)


def choose_domain(
    tree: TreeNode, state: ClusterState, taken: Collection[tuple[str | None, str | None]] = ()
) -> tuple[str | None, str | None, str] | None:
    """(key, value, label) of the domain to reserve, or None when every candidate is
    already reserved by a unit ahead."""
    topo = state.topology
    best_key = widest_required(tree, topo)
    pinned = next((c.value for _, c in required_constraints(tree)
                   if c.key == best_key and c.value), None)
    if best_key is None:
        return None if (None, None) in taken else (None, None, CLUSTER)
    level = topo.level_for(best_key)
    if level is None or len(level) == 0:
        return None if (None, None) in taken else (None, None, CLUSTER)
    need = {state.rindex[r]: v for r, v in min_demand(tree).items() if r in state.rindex}
    sched = state.schedulable
    n = len(level)
    fits = np.ones(n, dtype=bool)
    score = np.ones(n, dtype=float)
    for r, v in need.items():
        alloc = np.add.reduceat(np.where(sched, state.alloc[r], 0), level.starts)
        free = np.add.reduceat(np.where(sched, np.maximum(state.free[r], 0), 0), level.starts)
        fits &= alloc >= v
        np.minimum(score, np.minimum(free / v, 1.0), out=score)
    ok = level.valid.copy()
    for key, value in taken:
        if key == best_key:
            ok &= np.asarray([x != value for x in level.values], dtype=bool)
    if pinned is not None:
        ok &= np.asarray([x == pinned for x in level.values], dtype=bool)
    ids = np.flatnonzero(ok)
    if len(ids) == 0:
        return None
    # feasible first, then the most of the minimum free, then topology order
    order = np.lexsort((ids, -score[ids], ~fits[ids]))
    d = int(ids[order[0]])
    return best_key, level.values[d], topo.domain_path(level, d)
