"""Phase 6, extras: running units retry their missing extras every ``extras_interval``,
inside the domains their pods are pinned to, on the state with every other unit's
reservation hidden. What is still missing after a try that placed nothing is not tried
again until capacity is released (the capacity epoch moves); after one that placed pods,
it is tried again at the next interval."""

from __future__ import annotations

from gangsched.scheduler.actions import Bind, Event, ExtrasDue, ExtrasTried, Steps
from gangsched.scheduler.snapshot import Context
from gangsched.scheduler.status import UnitState
from gangsched.scheduler.tree import residual
from gangsched.scheduler.unit import ordered


def grow(ctx: Context) -> Steps:
    snap = ctx.snap
    now = ctx.now()
    interval = ctx.config.extras_interval
    for u in ordered(x for x in ctx.registry.index.of(UnitState.admitted)
                     if x.extras.next is not None and x.extras.next <= now):
        assert u.tree is not None
        missing = u.n_bound < u.desired and u.extras.tried_at != snap.epochs.freed
        tree = residual(u.tree, u.pods.sets, snap.pins_of) if missing else None
        if tree is not None:
            d = ctx.place(tree, snap.view_for(u, extras=True))
            grew = False
            if d.admitted and d.assignments:
                err = yield Bind(u, d.assignments, "extras")
                if err is None:
                    grew = True
                    yield Event("Extras", u, f"placed {len(d.assignments)} more pods "
                                f"({u.n_bound}/{u.desired})")
            if not grew:  # what is still missing does not fit now
                yield ExtrasTried(u, snap.epochs.freed)
            # a try that placed pods may not have placed all that fit (a residual leaves a
            # sibling satisfied by nothing for later): tried again at the next interval
        yield ExtrasDue(u, now + interval if u.n_bound < u.desired else None)
