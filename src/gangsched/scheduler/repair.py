"""Phases 2 and 3, health and repair: what a unit that lost pods needs.

Below a minimum, an ``all`` group is useless: what is left of it goes. When that is the
unit's root, the unit goes whole and is requeued. Otherwise a unit below its minimum is
degraded and repaired in place: its residual tree (the lost pods, with the minimum
restored where it is violated, pinned to the domains its running pods are in) is placed
like any unit; after ``stale_timeout`` without success it goes whole.

:func:`assess` decides for one unit (a value); :func:`health` and :func:`repair` are the
phases, yielding actions for the applier.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from gangsched.placement.describe import plural
from gangsched.scheduler.actions import (
    Action,
    Bind,
    Checked,
    Degrade,
    Event,
    Evict,
    ExtrasDue,
    Requeue,
    Restore,
    Retry,
    Steps,
)
from gangsched.scheduler.snapshot import Context
from gangsched.scheduler.status import UnitState
from gangsched.scheduler.tree import bound_in, broken_all_groups, residual, satisfied
from gangsched.scheduler.unit import Unit, ordered


@dataclass
class Assessment:
    evict_whole: bool = False  # evict everything and requeue the unit
    evict: list[tuple[str, list[str]]] = field(default_factory=list)  # (group path, pods)
    degraded: bool = False  # below its minimum: repair in place
    reason: str = ""


def assess(u: Unit, lost: Mapping[str, str]) -> Assessment:
    """Decide what to do with a running unit after it lost pods (pod -> node)."""
    out = Assessment()
    nodes = sorted(set(lost.values()))
    what = f"lost {plural(len(lost), 'pod')}" + (f" on {', '.join(nodes)}" if nodes else "")
    if u.tree is None:
        return out
    sets = u.pods.sets
    broken = broken_all_groups(u.tree, sets)
    below = not satisfied(u.tree, sets)
    if any(g is u.tree for g in broken) or (below and u.disruption == "all"):
        out.evict_whole = True
        out.reason = (f"{what}; below the minimum of {u.tree.name} "
                      "(disruption all): evicted whole")
        return out
    for g in broken:
        out.evict.append((g.path, bound_in(g, sets)))
    evicted = {p for _, pods in out.evict for p in pods}
    if evicted:
        sets = {k: {p: n for p, n in v.items() if p not in evicted} for k, v in sets.items()}
        below = not satisfied(u.tree, sets)
    if below:
        out.degraded = True
        out.reason = f"{what}; below the minimum: repairing in place"
    return out


def health(ctx: Context) -> Steps:
    """Units that lost pods or changed shape since the last check: ``all`` groups below a
    minimum go whole; a unit below its minimum is degraded (or requeued whole)."""
    now = ctx.now()
    to_check = ctx.snap.mirror.to_check
    for name in sorted(to_check):
        u = ctx.units.get(name)
        if u is None or u.tree is None or not u.running:
            continue
        a = assess(u, to_check[name])
        if a.evict_whole:
            yield Requeue(u, "Evicted", a.reason, ctx.now())
            continue
        for path, pods in a.evict:
            yield Evict(u, pods, f"disruption all: {path} below its minimum")
        if a.degraded:
            if u.life.state == UnitState.admitted:
                yield Degrade(u, a.reason, now)
                yield Event("Degraded", u, a.reason)
        elif u.life.state == UnitState.running_degraded:
            yield from _restore(u, "minimum restored", ctx)
        elif u.n_bound < u.desired:
            yield ExtrasDue(u, now)  # lost extras: place them again soon
    yield Checked()


def repair(ctx: Context) -> Steps:
    """Degraded units whose retry is due: place the residual tree inside their domains;
    not repaired within ``stale_timeout``: evicted whole."""
    cfg, snap = ctx.config, ctx.snap
    now = ctx.now()
    for u in ordered(ctx.registry.index.of(UnitState.running_degraded)):
        assert u.tree is not None and u.repair.since is not None
        overdue = now >= u.repair.since + cfg.stale_timeout
        if u.queue.next_try > now and not overdue:
            continue
        tree = residual(u.tree, u.pods.sets, snap.pins_of)
        d = ctx.place(tree, snap.view_for(u)) if tree is not None else None
        if d is not None and d.admitted:
            err = yield Bind(u, d.assignments, "repair")
            if err is None and satisfied(u.tree, u.pods.sets):
                yield from _restore(u, f"re-placed {len(d.assignments)} pods inside "
                                    f"{u.life.domain or 'its domains'}", ctx)
                continue
        why = d.reason if d is not None and d.reason else "no room inside its domains"
        if overdue:
            yield Requeue(u, "Evicted", f"not repaired within {cfg.stale_timeout:g}s "
                          f"({why}): evicted whole", ctx.now())
            continue
        yield Retry(u, UnitState.running_degraded, f"repair: {why}", now)


def _restore(u: Unit, message: str, ctx: Context) -> Iterator[Action]:
    now = ctx.now()
    extras = now + ctx.config.extras_interval if u.n_bound < u.desired else None
    yield Restore(u, now, extras)
    yield Event("Repaired", u, message)
