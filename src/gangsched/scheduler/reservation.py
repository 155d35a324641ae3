"""Phase 4, reserve: a unit that waited too long reserves its best domain.

The domain is one of its widest required constraint's level (or the whole cluster when
it has none), the one where it comes closest to fitting: every resource its minimum needs
is allocatable there, and the most of it is free. Units behind it in the queue see that
capacity as used until it is admitted (:meth:`.Snapshot.hidden`); a reservation is
lifted when its unit leaves the queue.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from gangsched.cluster.state import ClusterState
from gangsched.gang import TreeNode
from gangsched.scheduler.actions import Event, Reserve, ReserveLater, Steps, Unreserve
from gangsched.scheduler.snapshot import Context
from gangsched.scheduler.tree import min_demand, required_constraints, widest_required
from gangsched.scheduler.unit import QUEUED, Reservation, Unit, ordered

CLUSTER = "cluster"


def reserve_due(u: Unit, reserve_after: float) -> float:
    """When a queued unit without a reservation reserves one."""
    return max(u.queue.pending_since + reserve_after, u.reservation.retry)


def reserve(ctx: Context) -> Steps:
    """Lift the reservations of units that left the queue; then units queued longer than
    ``reserve_after`` reserve their best domain, in queue order."""
    snap = ctx.snap
    after = ctx.config.reserve_after
    now = ctx.now()
    for u in [x for x in snap.reserving() if not x.queued]:
        yield Unreserve(u)
    for u in ordered(x for x in ctx.registry.index.of(*QUEUED) if x.tree is not None
                     and x.reservation.reserved is None and reserve_due(x, after) <= now):
        assert u.tree is not None
        choice = choose_domain(u.tree, snap.state, snap.taken(u))
        if choice is None:  # every candidate is reserved ahead of it: look again later
            yield ReserveLater(u, now + after)
            continue
        key, value, label = choice
        yield Reserve(u, Reservation(u.name, key, value, label, now))
        yield Event("Reserved", u, f"waited {now - u.queue.pending_since:g}s: reserves "
                    f"{label} against lower-priority and later units")


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
