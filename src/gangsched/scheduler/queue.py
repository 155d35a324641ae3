"""Phase 5, the queue: pending units by priority, then arrival, each tried whole.

An attempt places the unit (its residual tree, when some pods still run) on the state
with the capacity reserved by units ahead of it hidden. Without ``min_first`` a unit is
bound as decided, extras and all. Under ``min_first`` only its minimum is bound at
admission: with ``whole`` (gangsched) the extras decided beside it are held as a plan
and bound at the end of the pass unless a later minimum needed their room
(:mod:`.plans`); without it the minimum is placed alone and the extras grow after the
queue (:mod:`.extras`). When a unit does not fit and the policy reclaims, it takes back
*extras* of running units of its own or lower priority (never their minimums: reclaim,
:func:`~.preemption.find_preemption` with ``surplus_only``). If it still does not fit
and the policy allows, workload-aware preemption picks lower-priority victims; they are
evicted and the unit is placed again.
Failure backs off exponentially; an engine rejection is remembered with the epochs it
saw, and while they have not moved (nothing freed, no pods placed it could take) the unit
is not re-run: it would fail again.

Queue order: priority (higher first), then arrival (the order units entered the
registry); a unit in backoff waits for its retry time or for an event that may help it
(capacity released where its minimum could fit).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator

from gangsched.placement.decision import Decision
from gangsched.placement.describe import plural
from gangsched.scheduler.actions import (
    Action,
    Admit,
    Bind,
    Decided,
    Event,
    Evict,
    ExtrasDue,
    Preempted,
    Requeue,
    Retry,
    Steps,
    Tried,
)
from gangsched.scheduler.plans import Plans, plannable, split
from gangsched.scheduler.preemption import Preemption, find_preemption
from gangsched.scheduler.snapshot import Context
from gangsched.scheduler.status import UnitState
from gangsched.scheduler.tree import residual
from gangsched.scheduler.unit import QUEUED, RUNNING, Unit, ordered


class QueuePass:
    """One pass over the units due in the queue."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._running: list[Unit] | None = None  # running units by priority, this pass
        # extras decided with their unit's minimum, bound after the pass (:mod:`.plans`)
        self.plans = Plans()
        self._whole = ctx.policy.min_first and getattr(ctx.policy, "whole", False)
        self._priorities: list[int] = []
        self._least_surplus: int | None = None  # of the running above their minimum

    def run(self) -> Steps:
        ctx = self.ctx
        now = ctx.now()
        due = ordered(u for u in ctx.registry.index.of(*QUEUED)
                      if u.tree is not None and u.queue.next_try <= now)
        limit = ctx.config.max_units_per_cycle
        for u in due[:limit] if limit is not None else due:
            if u.queued:
                yield from self.attempt(u)
        yield from self._bind_plans()

    def _bind_plans(self) -> Steps:
        """Every due unit's minimum was tried: bind the planned extras that still fit."""
        for plan in self.plans.take(self.ctx.snap.state):
            u = plan.unit
            err = yield Bind(u, plan.pods, "extras")
            if err is None:
                yield Event("Extras", u, f"placed {len(plan.pods)} more pods "
                            f"({u.n_bound}/{u.desired})")

    def attempt(self, u: Unit) -> Steps:
        assert u.tree is not None
        ctx = self.ctx
        snap = ctx.snap
        preemption = ctx.policy.preemption
        reclaim = ctx.policy.reclaim
        now = ctx.now()
        yield Tried(u)
        if u.queue.failed_at == snap.epoch(u, preemption, reclaim):
            # nothing was freed (nor lower-priority pods, preemption victims, placed)
            # since it last failed
            yield Retry(u, UnitState.pending, u.reason, now)
            yield Event("Unschedulable", u, u.reason)
            return
        start = time.perf_counter()
        tree = u.tree if not u.n_bound else residual(u.tree, u.pods.sets, snap.pins_of)
        if tree is None:
            yield from self._admit(u, None, None)
            return
        hidden = snap.hidden(u, backfill_at=now if getattr(ctx.policy, "backfill", False)
                             else None)
        view = snap.view(hidden)
        planned = self.plans.view(snap.state, view, hidden) if self.plans else None
        d = ctx.place(tree, planned if planned is not None else view)
        if not d.admitted and planned is not None:
            d = ctx.place(tree, view)  # planned extras give way to a minimum
        plan: Preemption | None = None
        note = ""
        if not d.admitted and reclaim and self._surplus_below(u.priority + 1):
            peers = [x for x in self._at_most(u.priority + 1) if x.running and x is not u]
            found = find_preemption(tree, u.priority + 1, peers, snap.state, ctx.place,
                                    hidden, ctx.config.preemption_budget, surplus_only=True)
            if found.plan is not None:
                yield from self._reclaim(u, found.plan)
                d = ctx.place(tree, snap.view(hidden))
        if not d.admitted and preemption:
            lower = [x for x in self._at_most(u.priority) if x.running]
            search = find_preemption(tree, u.priority, lower, snap.state, ctx.place,
                                     hidden, ctx.config.preemption_budget)
            plan = search.plan
            note = "; ".join(search.notes)
            if plan is not None:
                yield from self._preempt(u, plan)
                d = ctx.place(tree, snap.view(hidden))
        yield Decided(time.perf_counter() - start)
        if d.admitted:
            now_pods: dict[str, str] = dict(d.assignments)
            extras: dict[str, str] = {}
            if self._whole and d.extra_pods and d.minimum_pods:
                # the extras wait for the end of the pass (a unit without a minimum, one
                # placed pod by pod, is bound as decided, as under minimum-alone)
                now_pods, extras = split(u, d.assignments)
            err = yield Bind(u, now_pods, "admit")
            if err is None:
                if plannable(u):
                    self.plans.add(u, extras)
                yield from self._admit(u, d, plan)
                return
            yield Retry(u, UnitState.pending, f"bind failed: {err}", now)
            return
        yield Retry(u, UnitState.pending, d.reason, now,
                    epoch=snap.epoch(u, preemption, reclaim))
        yield Event("Unschedulable", u, d.reason + (f" (preemption: {note})" if note else ""))

    def _at_most(self, priority: int) -> list[Unit]:
        """Units running at the start of the pass with a priority below ``priority``
        (units admitted later in the pass rank at least as high: the list holds)."""
        self._start()
        assert self._running is not None
        return self._running[:bisect_left(self._priorities, priority)]

    def _surplus_below(self, priority: int) -> bool:
        """Whether a unit of :meth:`_at_most` held pods above its minimum at the start of
        the pass: if none did, none does (a running unit gains pods in a pass only from
        the plans bound after it), and reclaiming has nothing to look at. Without this
        gate every unit that failed walked every running unit: most of the time of a
        replay whose queue never drains."""
        self._start()
        return self._least_surplus is not None and self._least_surplus < priority

    def _start(self) -> None:
        """The running units by priority, as the pass found them (once a pass)."""
        if self._running is None:
            self._running = sorted(self.ctx.registry.index.of(*RUNNING),
                                   key=lambda x: x.priority)
            self._priorities = [x.priority for x in self._running]
            self._least_surplus = next(
                (x.priority for x in self._running if x.has_surplus), None)

    def _preempt(self, u: Unit, plan: Preemption) -> Iterator[Action]:
        ctx = self.ctx
        now = ctx.now()
        for v in plan.victims:
            victim = ctx.units.get(v.unit)
            if victim is None:
                continue
            yield Preempted(victim)
            msg = (f"preempted by {u.name} (priority {u.priority}) to make room in "
                   f"{plan.domain}")
            if v.whole:
                yield Requeue(victim, "Preempted", msg, ctx.now())
            else:
                yield Evict(victim, v.pods, msg)
                yield ExtrasDue(victim, now + ctx.config.extras_interval)
                yield Event("Preempted", victim, f"{len(v.pods)} pods above its minimum {msg}")

    def _reclaim(self, u: Unit, plan: Preemption) -> Iterator[Action]:
        """Extras of running units given back so ``u``'s minimum fits."""
        now = self.ctx.now()
        for v in plan.victims:
            victim = self.ctx.units.get(v.unit)
            if victim is None:
                continue
            msg = f"{len(v.pods)} pods above its minimum given back to {u.name}"
            yield Evict(victim, v.pods, f"reclaimed by {u.name}: minimums before extras")
            yield ExtrasDue(victim, now + self.ctx.config.extras_interval)
            yield Event("Reclaimed", victim, msg)

    def _admit(self, u: Unit, d: Decision | None, plan: Preemption | None) -> Iterator[Action]:
        now = self.ctx.now()
        root = d.groups[0] if d is not None and d.groups else None
        domain = root.domain if root is not None else u.life.domain
        later = now if self.ctx.policy.min_first else (
            now + self.ctx.config.extras_interval)  # min first: after this cycle's queue
        extras = later if u.n_bound < u.desired else None
        yield Admit(u, domain, now, extras)
        nodes = len(set(u.bound().values()))
        msg = f"{u.n_bound}/{u.desired} pods on {plural(nodes, 'node')}"
        if domain:
            msg += f" in {domain}"
        if plan is not None:
            msg += f", after preempting {', '.join(sorted({v.unit for v in plan.victims}))}"
        yield Event("Admitted", u, msg)
