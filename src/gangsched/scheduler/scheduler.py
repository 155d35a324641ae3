"""The scheduler: runs a cluster over time, one cycle at a time.

A cycle takes a :class:`~.snapshot.Snapshot` of what it reads (the cluster state, the
reserved domains and the views with reserved capacity hidden, the epoch counters), then
runs its phases in order. Each phase is a generator of actions (:mod:`.actions`: bind,
evict, requeue, event, status changes); one applier (:mod:`.applier`) performs them as
they come, against the backend and the scheduler's mirror of the cluster, so each phase
sees what the ones before it did. Bound pods are assumed into the state when bound, like
kube-scheduler's assume cache; a bind is all or nothing (rolled back on any failure).

1. **Sync** (:mod:`.sync`). Drain the backend's events: workloads added, changed
   (scaled) or removed (the registry follows them, :mod:`.registry`); pods lost; nodes
   added, removed or changed (the only events that rebuild the ClusterState; everything
   else updates it incrementally). Events that can help a waiting unit (a node added or
   schedulable again, capacity released by others, a workload removed) reset the
   queue's backoff.
2. **Health** (:func:`.repair.health`). Units that lost pods: ``all`` groups below a
   minimum go whole; a unit below its minimum is degraded, or evicted whole when its
   root is ``all``.
3. **Repair** (:func:`.repair.repair`). Degraded units are repaired in place, or
   evicted whole after ``stale_timeout``.
4. **Reserve** (:mod:`.reservation`). A unit queued longer than ``reserve_after``
   reserves its best domain; units behind it see that capacity as used.
5. **Queue** (:mod:`.queue`). Pending units by priority, then arrival, each tried whole;
   if it does not fit and the policy allows, workload-aware preemption
   (:mod:`.preemption`); failure backs off exponentially, and a unit that failed since
   the last capacity release is not re-run. Extras decided with a minimum are bound at
   the end of the pass, unless a later minimum needed their room (:mod:`.plans`).
6. **Extras** (:mod:`.extras`). Running units retry their missing extras every
   ``extras_interval``, inside the domains their pods are pinned to.
7. **Sync and health** again, for what the cycle's own binds and evictions caused.
"""

from __future__ import annotations

from gangsched.cluster.state import ClusterState
from gangsched.scheduler.applier import Applier
from gangsched.scheduler.backend import WORKLOAD_EVENTS, ClusterBackend, ClusterEvent
from gangsched.scheduler.clock import Clock
from gangsched.scheduler.config import SchedulerConfig
from gangsched.scheduler.extras import grow
from gangsched.scheduler.policy import GangschedPolicy, Policy
from gangsched.scheduler.queue import QueuePass
from gangsched.scheduler.registry import Registry
from gangsched.scheduler.repair import health, repair
from gangsched.scheduler.reservation import reserve, reserve_due
from gangsched.scheduler.snapshot import Context, Mirror, Snapshot
from gangsched.scheduler.status import CycleReport, SchedEvent, UnitState, UnitStatus
from gangsched.scheduler.sync import drain, start
from gangsched.scheduler.unit import QUEUED, Unit

__all__ = ["Scheduler", "SchedulerConfig"]


class Scheduler:
    def __init__(
        self,
        backend: ClusterBackend,
        clock: Clock,
        config: SchedulerConfig | None = None,
        policy: Policy | None = None,
    ) -> None:
        self.backend = backend
        self.clock = clock
        self.config = config or SchedulerConfig()
        self.policy: Policy = policy or GangschedPolicy()
        self.events: list[SchedEvent] = []
        self.registry = Registry(self.policy)
        self._inbox: list[ClusterEvent] = []
        self._mirror = Mirror(ClusterState.from_nodes([], []))
        self._applier = Applier(backend, clock, self.config, self.registry, self._mirror,
                                self.events)
        backend.subscribe(self._on_event)
        changes = self.registry.sync(backend.workloads(), set(), clock.now())
        self._applier.run(start(changes, self._context()))
        self.registry.adopt(backend.pods(), clock.now())

    # -- public -------------------------------------------------------------------------

    @property
    def units(self) -> dict[str, Unit]:
        return self.registry.units

    @property
    def state(self) -> ClusterState:
        """The cluster state, with the scheduler's own binds assumed."""
        return self._mirror.state

    def run_cycle(self) -> CycleReport:
        run = self._applier.run
        self._applier.report = report = CycleReport(time=self.clock.now())
        ctx = self._context()
        self._sync(ctx)
        run(health(ctx))
        run(repair(ctx))
        run(reserve(ctx))
        run(QueuePass(ctx).run())
        run(grow(ctx))
        self._sync(ctx)
        run(health(ctx))
        return report

    def next_wakeup(self) -> float | None:
        """The earliest time a cycle has something to do: a unit's backoff ends, a
        reservation or stale timer fires, extras are due, or events wait."""
        cfg = self.config
        times: list[float] = []
        if self._inbox:
            times.append(self.clock.now())
        index = self.registry.index
        reserves = getattr(self.policy, "reserve", True)
        for u in index.of(*QUEUED):
            if u.tree is not None:
                times.append(u.queue.next_try)
                if reserves and u.reservation.reserved is None:
                    times.append(reserve_due(u, cfg.reserve_after))
        for u in index.of(UnitState.running_degraded):
            if u.tree is not None:
                times.append(u.queue.next_try)
                if u.repair.since is not None:
                    times.append(u.repair.since + cfg.stale_timeout)
        times.extend(u.extras.next for u in index.of(UnitState.admitted)
                     if u.tree is not None and u.extras.next is not None)
        return min(times) if times else None

    def status(self) -> dict[str, UnitStatus]:
        return {name: u.status() for name, u in self.units.items()}

    # -- internals ------------------------------------------------------------------------

    def _on_event(self, ev: ClusterEvent) -> None:
        self._inbox.append(ev)

    def _context(self) -> Context:
        """A snapshot for a new cycle, with what else its phases read."""
        return Context(Snapshot(self._mirror), self.registry, self.backend, self.config,
                       self.policy, self.clock)

    def _sync(self, ctx: Context) -> None:
        """Phase 1: the registry follows the backend's workloads, then the events since
        the last drain (and what the registry changed) are applied."""
        if not self._inbox:
            return
        events, self._inbox = self._inbox, []
        changes = None
        if any(e.kind in WORKLOAD_EVENTS for e in events):
            removed = {e.name for e in events if e.kind == "WorkloadRemoved"}
            changes = self.registry.sync(self.backend.workloads(), removed, self.clock.now())
        self._applier.run(drain(events, changes, ctx))
