"""The one place that acts: binds and evicts through the backend, and keeps the
scheduler's mirror of the cluster (:class:`~.snapshot.Mirror`) and the units in step.

Phases yield actions (:mod:`.actions`); :meth:`Applier.run` performs each one as it is
yielded and sends back its outcome. A :class:`~.actions.Bind` is all or nothing: its pods
are assumed into the state first (kube-scheduler's assume cache), and when any bind
fails the pods already bound are evicted and the rest released again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gangsched.cluster.state import ClusterState
from gangsched.cluster.topology import derive_levels
from gangsched.scheduler.actions import (
    Action,
    Admit,
    Bind,
    Check,
    Checked,
    Decided,
    Degrade,
    Event,
    Evict,
    ExternalBind,
    ExtrasDue,
    ExtrasTried,
    Forget,
    LevelsStale,
    NodesSeen,
    Outcome,
    PodLost,
    Preempted,
    Rebuild,
    Release,
    Requeue,
    Reserve,
    ReserveLater,
    Restore,
    Retry,
    Seen,
    Steps,
    Tried,
    Unreserve,
    Wake,
)
from gangsched.scheduler.backend import BindError, ClusterBackend
from gangsched.scheduler.capacity import assume, release
from gangsched.scheduler.clock import Clock
from gangsched.scheduler.config import SchedulerConfig
from gangsched.scheduler.registry import Registry
from gangsched.scheduler.snapshot import Mirror
from gangsched.scheduler.status import CycleReport, SchedEvent, UnitState
from gangsched.scheduler.unit import Unit


class Applier:
    def __init__(self, backend: ClusterBackend, clock: Clock, config: SchedulerConfig,
                 registry: Registry, mirror: Mirror, events: list[SchedEvent]) -> None:
        self.backend = backend
        self.clock = clock
        self.config = config
        self.registry = registry
        self.mirror = mirror
        self.events = events
        self.report = CycleReport()  # the running cycle's
        self._do: dict[type, Callable[[Any], Outcome]] = {
            Bind: self._bind, Evict: self._evict, Requeue: self._requeue,
            Release: self._release, ExternalBind: self._external_bind,
            PodLost: self._pod_lost, Seen: self._seen, NodesSeen: self._nodes_seen,
            Rebuild: self._rebuild, LevelsStale: self._levels_stale, Forget: self._forget,
            Check: self._check, Checked: self._checked, Event: self._event,
            Tried: self._tried, Decided: self._decided, Retry: self._retry,
            Wake: self._wake, Admit: self._admit, Degrade: self._degrade,
            Restore: self._restore, Preempted: self._preempted, ExtrasDue: self._extras_due,
            ExtrasTried: self._extras_tried, Reserve: self._reserve,
            Unreserve: self._unreserve, ReserveLater: self._reserve_later,
        }

    def run(self, steps: Steps) -> None:
        """Perform every action of a phase, in order, sending back each outcome."""
        outcome: Outcome = None
        try:
            while True:
                outcome = self.apply(steps.send(outcome))
        except StopIteration:
            pass

    def apply(self, action: Action) -> Outcome:
        return self._do[type(action)](action)

    # -- shared ---------------------------------------------------------------------------

    def _free(self, pods: Iterable[str]) -> None:
        """Give back the capacity of charged pods: the capacity epoch moves."""
        m = self.mirror
        if release(m.state, pods):
            m.epochs.freed += 1
            m.version += 1

    def _evict_pods(self, u: Unit | None, pods: Iterable[str], reason: str) -> None:
        pods = list(pods)
        for p in pods:
            self.mirror.own_deletes.add(p)
            self.backend.evict(p, reason)
            if u is not None:
                u.pods.remove(p)
        self._free(pods)
        self.report.evicted_pods += len(pods)

    def _log(self, kind: str, u: Unit, message: str) -> None:
        self.events.append(SchedEvent(self.clock.now(), kind, u.name, message))

    def _backoff(self, u: Unit, now: float) -> None:
        u.queue.failed(now, self.config.backoff_initial, self.config.backoff_max)

    # -- the cluster ----------------------------------------------------------------------

    def _bind(self, a: Bind) -> Outcome:
        """Assume and bind every pod of a decision; on any failure roll the decision back
        (evict what was bound, release what was assumed). Returns the error, or None."""
        u, m = a.unit, self.mirror
        items = [(p, n) for p, n in a.assignments.items() if p in u.pods.set_of]
        if u.tree is not None:
            m.state.note_exclusive(u.tree)  # its pods hold their exclusive domains
        assume(m.state, [(p, n, u.pods.requests(p)) for p, n in items])
        done: list[str] = []
        for p, n in items:
            m.own_binds.add(p)
            try:
                self.backend.bind(p, n)
            except BindError as err:
                m.own_binds.discard(p)
                self._free([q for q, _ in items[len(done):]])
                if done:
                    self._evict_pods(u, done, f"rollback: bind of {p} failed")
                self._log("BindFailed", u, f"{a.purpose}: {err}; rolled back "
                          f"{len(done)} bound pods")
                return str(err)
            u.pods.add(p, n)
            done.append(p)
        self.report.bound_pods += len(done)
        m.version += 1
        m.epochs.placed += 1
        m.epochs.placed_at[u.priority] = m.epochs.placed
        return None

    def _evict(self, a: Evict) -> Outcome:
        self._evict_pods(a.unit, a.pods, a.reason)
        return None

    def _requeue(self, a: Requeue) -> Outcome:
        u = a.unit
        self._evict_pods(u, list(u.pods.bound()), a.reason)
        u.set_state(UnitState.evicted, a.reason, a.at)
        u.repair.since = None
        u.extras.next = None
        u.life.domain = None
        u.queue.failures = 0
        u.queue.next_try = a.at
        self._log(a.kind, u, a.reason)
        return None

    # -- the mirror -----------------------------------------------------------------------

    def _release(self, a: Release) -> Outcome:
        self._free(a.pods)
        return None

    def _external_bind(self, a: ExternalBind) -> Outcome:
        if a.unit is not None and a.unit.tree is not None:
            self.mirror.state.note_exclusive(a.unit.tree)
        assume(self.mirror.state, [(a.pod, a.node, a.requests)])
        if a.unit is not None and a.unit.pods.add(a.pod, a.node):
            self.mirror.to_check.setdefault(a.unit.name, {})
        return None

    def _pod_lost(self, a: PodLost) -> Outcome:
        if a.unit.pods.remove(a.pod):
            self.mirror.to_check.setdefault(a.unit.name, {})[a.pod] = a.node
        return None

    def _seen(self, a: Seen) -> Outcome:
        (self.mirror.own_binds if a.bind else self.mirror.own_deletes).discard(a.pod)
        return None

    def _nodes_seen(self, a: NodesSeen) -> Outcome:
        self.mirror.node_ok = a.schedulable
        return None

    def _rebuild(self, a: Rebuild) -> Outcome:
        m, backend = self.mirror, self.backend
        nodes = backend.nodes() if a.nodes is None else a.nodes
        m.labelled = {k for n in nodes for k in n.labels}
        m.levels = derive_levels(nodes, self.registry.keys, self.config.levels)
        m.levels_stale = False
        bound = [p for p in backend.pods() if p.node_name]
        m.state = ClusterState.from_nodes(nodes, m.levels, bound)
        for u in self.registry.units.values():
            if u.tree is not None:
                m.state.note_exclusive(u.tree)  # bound pods hold their exclusive domains
        assume(m.state, [(p, n, u.pods.requests(p)) for u in self.registry.units.values()
                         for p, n in u.pods.bound().items() if p not in m.state.bound])
        m.version += 1
        m.epochs.freed += 1
        return None

    def _levels_stale(self, a: LevelsStale) -> Outcome:
        self.mirror.levels_stale = True
        return None

    def _forget(self, a: Forget) -> Outcome:
        self.mirror.reserving.pop(a.unit, None)
        return None

    def _check(self, a: Check) -> Outcome:
        self.mirror.to_check.setdefault(a.unit, {})
        return None

    def _checked(self, a: Checked) -> Outcome:
        self.mirror.to_check.clear()
        return None

    # -- units ----------------------------------------------------------------------------

    def _event(self, a: Event) -> Outcome:
        self._log(a.kind, a.unit, a.message)
        return None

    def _tried(self, a: Tried) -> Outcome:
        a.unit.queue.attempts += 1
        self.report.attempted += 1
        return None

    def _decided(self, a: Decided) -> Outcome:
        self.report.decision_seconds.append(a.seconds)
        return None

    def _retry(self, a: Retry) -> Outcome:
        a.unit.set_state(a.state, a.reason, a.at)
        if a.epoch is not None:
            a.unit.queue.failed_at = a.epoch
        self._backoff(a.unit, a.at)
        return None

    def _wake(self, a: Wake) -> Outcome:
        a.unit.queue.wake(a.at)
        return None

    def _admit(self, a: Admit) -> Outcome:
        u = a.unit
        u.life.domain = a.domain
        u.life.admitted_at = a.at
        u.queue.failures = 0
        u.repair.since = None
        self._lift(u)
        self.mirror.version += 1
        u.set_state(UnitState.admitted, "", a.at)
        u.extras.next = a.extras_next
        self.report.admitted += 1
        return None

    def _degrade(self, a: Degrade) -> Outcome:
        u = a.unit
        u.set_state(UnitState.running_degraded, a.reason, a.at)
        u.repair.since = a.at
        u.queue.failures = 0
        u.queue.next_try = a.at
        return None

    def _restore(self, a: Restore) -> Outcome:
        u = a.unit
        u.set_state(UnitState.admitted, "", a.at)
        u.repair.since = None
        u.queue.failures = 0
        u.extras.next = a.extras_next
        self.report.repaired += 1
        return None

    def _preempted(self, a: Preempted) -> Outcome:
        a.unit.life.preemptions += 1
        self.report.preempted += 1
        return None

    def _extras_due(self, a: ExtrasDue) -> Outcome:
        a.unit.extras.next = a.at
        return None

    def _extras_tried(self, a: ExtrasTried) -> Outcome:
        a.unit.extras.tried_at = a.freed
        return None

    def _reserve(self, a: Reserve) -> Outcome:
        a.unit.reservation.reserved = a.reservation
        self.mirror.reserving[a.unit.name] = a.unit
        self.mirror.version += 1
        return None

    def _unreserve(self, a: Unreserve) -> Outcome:
        self._lift(a.unit)
        return None

    def _lift(self, u: Unit) -> None:
        """Lift a reservation: the capacity behind it is free for others again."""
        if u.reservation.reserved is not None:
            u.reservation.reserved = None
            self.mirror.reserving.pop(u.name, None)
            self.mirror.version += 1
            self.mirror.epochs.freed += 1

    def _reserve_later(self, a: ReserveLater) -> Outcome:
        a.unit.reservation.retry = a.at
        return None
