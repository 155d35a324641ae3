"""Phase 4, reserve: a unit that waited too long reserves its best domain.

At most ``max_reservations`` units hold one at once (one by default: the head of the
queue among the units due, as EASY backfilling reserves only for the job at the head of
the queue). A reservation hides capacity from everyone behind it now, not at a planned
time, so each one more leaves more of the cluster idle; with one, every unit still gets
its turn, since the head moves on once it is admitted. A due unit ahead of a holder in
the queue (a higher priority) takes the reservation over; the holder waits its turn.

The domain is one of its widest required constraint's level (or the whole cluster when
it has none), the one where it comes closest to fitting: every resource its minimum needs
is allocatable there, and the most of it is free. Units behind it in the queue see that
capacity as used until it is admitted (:meth:`.Snapshot.hidden`); a reservation is
lifted when its unit leaves the queue.

Backfill (policies with ``backfill``): a reservation knows when its unit can expect to
start, the first moment the domain's free capacity plus what running pods there release
at the end of their run-time limits covers every resource of its minimum (refreshed every
cycle; never, when a pod there has no limit). A later unit with a run-time limit that ends
by then may use the domain: it is gone before the reserving unit could start, so it
never delays it. The estimate counts capacity, not packing, so it can only come early:
backfill stays on the safe side.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import replace

import numpy as np

from gangsched.cluster.state import ClusterState
from gangsched.gang import TreeNode
from gangsched.scheduler.actions import Event, Reserve, ReserveLater, Steps, Unreserve
from gangsched.scheduler.capacity import domain_nodes
from gangsched.scheduler.snapshot import Context
from gangsched.scheduler.tree import min_demand, required_constraints, widest_required
from gangsched.scheduler.unit import QUEUED, RUNNING, Reservation, Unit, ordered

CLUSTER = "cluster"


def reserve_due(u: Unit, reserve_after: float) -> float:
    """When a queued unit without a reservation reserves one."""
    return max(u.queue.pending_since + reserve_after, u.reservation.retry)


def reserve(ctx: Context) -> Steps:
    """Lift the reservations of units that left the queue; then units queued longer than
    ``reserve_after`` reserve their best domain, in queue order, while fewer than
    ``max_reservations`` hold one (a unit ahead of a holder takes its reservation over)."""
    snap = ctx.snap
    after = ctx.config.reserve_after
    now = ctx.now()
    reserves = getattr(ctx.policy, "reserve", True)
    for u in [x for x in snap.reserving() if not x.queued or not reserves]:
        yield Unreserve(u)
    if not reserves:
        return
    backfill = getattr(ctx.policy, "backfill", False)
    if backfill:  # when each reserving unit can expect to start, as running pods end
        for u in snap.reserving():
            r = u.reservation.reserved
            if u.queued and r is not None:
                start = expected_start(u, r.key, r.value, ctx)
                if start != r.start:
                    yield Reserve(u, replace(r, start=start))
    holders = ordered(x for x in snap.reserving() if x.reservation.reserved is not None)
    limit = ctx.config.max_reservations
    for u in ordered(x for x in ctx.registry.index.of(*QUEUED) if x.tree is not None
                     and x.reservation.reserved is None and reserve_due(x, after) <= now):
        assert u.tree is not None
        full = limit is not None and len(holders) >= limit
        if full and holders[-1].key < u.key:  # the units holding them all are ahead of it
            yield ReserveLater(u, now + after)
            continue
        choice = choose_domain(u.tree, snap.state, snap.taken(u))
        if choice is None:  # reserved ahead of it, or too small for it: look again later
            yield ReserveLater(u, now + after)
            continue
        if full:  # the last holder, behind it in the queue, gives its reservation up
            last = holders.pop()
            yield Unreserve(last)
            yield ReserveLater(last, now + after)
        key, value, label = choice
        start = expected_start(u, key, value, ctx) if backfill else math.inf
        yield Reserve(u, Reservation(u.name, key, value, label, now, start))
        holders = ordered([*holders, u])
        yield Event("Reserved", u, f"waited {now - u.queue.pending_since:g}s: reserves "
                    f"{label} against lower-priority and later units")


def expected_start(u: Unit, key: str | None, value: str | None, ctx: Context) -> float:
    """When ``u``'s minimum can expect to find its resources free in the domain: now, or
    the end of the run-time limit of the running unit whose pods there complete them
    (inf: never, as far as limits tell)."""
    st = ctx.snap.state
    now = ctx.now()
    nodes = domain_nodes(st, key, value)
    need = {st.rindex[r]: v for r, v in u.need().items() if r in st.rindex}
    if not need:
        return now
    ok = st.schedulable[nodes]
    have = {r: int(np.maximum(st.free[r, nodes[ok]], 0).sum()) for r in need}
    if all(have[r] >= v for r, v in need.items()):
        return now
    inside = set(nodes[ok].tolist())
    index = st.topology.index
    ends: list[tuple[float, dict[int, int]]] = []
    for o in ctx.registry.index.of(*RUNNING):
        freed: dict[int, int] = {}
        for pod, node in o.bound().items():
            if index.get(node) in inside:
                for name, v in o.pods.requests(pod).items():
                    j = st.rindex.get(name)
                    if j is not None and j in need:
                        freed[j] = freed.get(j, 0) + v
        if freed:
            started = o.life.admitted_at if o.life.admitted_at is not None else now
            end = started + o.limit if o.limit is not None else math.inf
            ends.append((max(end, now), freed))
    ends.sort(key=lambda e: e[0])
    for end, freed in ends:
        if end == math.inf:
            break
        for j, v in freed.items():
            have[j] += v
        if all(have[j] >= v for j, v in need.items()):
            return end
    return math.inf


def choose_domain(
    tree: TreeNode, state: ClusterState, taken: Collection[tuple[str | None, str | None]] = ()
) -> tuple[str | None, str | None, str] | None:
    """(key, value, label) of the domain to reserve, or None when every candidate is
    already reserved by a unit ahead, or none could hold the minimum even idle."""
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
    if not fits[d]:  # it could not start there even on idle nodes: holding it helps no one
        return None
    return best_key, level.values[d], topo.domain_path(level, d)
