"""The scheduler: runs a cluster over time, one cycle at a time.

A cycle, in order:

1. **Sync.** Drain the backend's events: workloads added, changed (scaled) or removed;
   pods lost; nodes added, removed or changed (the only events that rebuild the
   ClusterState; everything else updates it incrementally). Events that can help a
   waiting unit (a node added or schedulable again, capacity released by others, a
   workload removed) reset the queue's backoff.
2. **Health.** Units that lost pods: ``all`` groups below a minimum go whole; a unit
   below its minimum is degraded and repaired in place, or evicted whole after
   ``stale_timeout`` (:mod:`.repair`).
3. **Reserve.** A unit queued longer than ``reserve_after`` reserves its best domain
   (:mod:`.reservation`); units behind it see that capacity as used.
4. **Queue.** Pending units by priority, then arrival, each tried whole; if it does not
   fit and the policy allows, workload-aware preemption (:mod:`.preemption`); failure
   backs off exponentially.
5. **Extras.** Running units retry their missing extras every ``extras_interval``,
   inside the domains their pods are pinned to.

Decisions are values (engine ``Decision``, ``Preemption``, ``Assessment``); applying
them happens in two methods, :meth:`Scheduler._bind` and :meth:`Scheduler._evict`.
Bound pods are assumed into the state when bound, like kube-scheduler's assume cache.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gangsched.api.types import Node
from gangsched.cluster.state import ClusterState
from gangsched.cluster.topology import HOSTNAME, derive_levels
from gangsched.gang import required_key
from gangsched.placement.decision import Decision
from gangsched.placement.describe import plural
from gangsched.scheduler.backend import (
    NODE_EVENTS,
    WORKLOAD_EVENTS,
    BindError,
    ClusterBackend,
    ClusterEvent,
)
from gangsched.scheduler.capacity import (
    assume,
    domain_nodes,
    hide,
    label_of,
    release,
)
from gangsched.scheduler.clock import Clock
from gangsched.scheduler.policy import GangschedPolicy, Policy
from gangsched.scheduler.preemption import Preemption, find_preemption
from gangsched.scheduler.queue import Unit, ordered
from gangsched.scheduler.registry import Registry
from gangsched.scheduler.repair import assess
from gangsched.scheduler.reservation import Reservation, choose_domain
from gangsched.scheduler.status import CycleReport, SchedEvent, UnitState, UnitStatus
from gangsched.scheduler.tree import TreeNode, residual, satisfied


@dataclass
class SchedulerConfig:
    backoff_initial: float = 1.0  # seconds before the first retry of an unschedulable unit
    backoff_max: float = 60.0
    stale_timeout: float = 120.0  # a degraded unit not repaired in this time goes whole
    reserve_after: float = 300.0  # a unit queued this long reserves its best domain
    extras_interval: float = 10.0  # how often running units retry their extras
    max_units_per_cycle: int | None = None  # queue attempts per cycle (None: all due)
    levels: Sequence[str] | None = None  # topology label keys, widest first (None: infer)
    preemption_budget: int = 64  # dry runs one preemption search may spend


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
        self._own_binds: set[str] = set()
        self._own_deletes: set[str] = set()
        self._dirty: set[str] = set()  # units that lost pods or changed shape
        self._reserving: dict[str, Unit] = {}  # units holding a reservation
        self._labelled: set[str] = set()  # label keys present on nodes
        self._levels_dirty = False
        self._victims: list[Unit] | None = None  # running units, per queue pass
        # capacity only shrinks between bumps of _freed: a unit that failed since the
        # last bump fails again (the engine is deterministic), so it is not re-run
        self._freed = 0  # bumped whenever capacity is released or reservations lifted
        self._placed = 0  # bumped on every bind
        self._placed_at: dict[int, int] = {}  # priority -> _placed at its last bind
        self._seq = 0
        self._levels: list[str] = []
        self._node_ok: dict[str, bool] = {}
        self._view_cache: tuple[tuple[object, ...], ClusterState] | None = None
        self._report = CycleReport()
        backend.subscribe(self._on_event)
        self.state = ClusterState.from_nodes([], [])
        self._sync_workloads()
        nodes = backend.nodes()
        self._node_ok = {n.name: n.schedulable for n in nodes}
        self._rebuild(nodes)
        self.registry.adopt(backend.pods(), clock.now())

    # -- public -------------------------------------------------------------------------

    def run_cycle(self) -> CycleReport:
        now = self.clock.now()
        self._report = rep = CycleReport(time=now)
        self._view_cache = None
        self._drain()
        self._check_health()
        self._repair()
        self._reserve()
        self._schedule_queue()
        self._grow_extras()
        self._drain()
        self._check_health()
        return rep

    def next_wakeup(self) -> float | None:
        """The earliest time a cycle has something to do: a unit's backoff ends, a
        reservation or stale timer fires, extras are due, or events wait."""
        cfg = self.config
        times: list[float] = []
        if self._inbox:
            times.append(self.clock.now())
        for u in self.units.values():
            if u.tree is None:
                continue
            if u.queued:
                times.append(u.next_try)
                if u.reserved is None:
                    times.append(self._reserve_due(u))
            elif u.state == UnitState.running_degraded:
                times.append(u.next_try)
                if u.degraded_since is not None:
                    times.append(u.degraded_since + cfg.stale_timeout)
            elif u.state == UnitState.admitted and u.extras_next is not None:
                times.append(u.extras_next)
        return min(times) if times else None

    def status(self) -> dict[str, UnitStatus]:
        return {name: u.status() for name, u in self.units.items()}

    # -- events -------------------------------------------------------------------------

    def _on_event(self, ev: ClusterEvent) -> None:
        self._inbox.append(ev)

    def _drain(self) -> None:
        if not self._inbox:
            return
        events, self._inbox = self._inbox, []
        kinds = {e.kind for e in events}
        helpful = False
        if kinds & WORKLOAD_EVENTS:
            removed = {e.name for e in events if e.kind == "WorkloadRemoved"}
            helpful |= self._sync_workloads(removed)
        rebuild = bool(kinds & NODE_EVENTS) or self._levels_dirty
        nodes: list[Node] | None = None
        if kinds & NODE_EVENTS:
            nodes = self.backend.nodes()
            new_ok = {n.name: n.schedulable for n in nodes}
            helpful |= any(ok and not self._node_ok.get(k, False) for k, ok in new_ok.items())
            self._node_ok = new_ok
        external: list[str] = []
        for e in events:
            if e.kind == "PodDeleted":
                helpful |= self._pod_deleted(e.name)
            elif e.kind == "PodBound":
                if e.name in self._own_binds:
                    self._own_binds.discard(e.name)
                elif e.name not in self.state.bound:
                    external.append(e.name)
        if rebuild:
            self._rebuild(nodes)
        if external:
            self._external_binds(set(external))
        if helpful:
            self._wake_queue()

    def _pod_deleted(self, key: str) -> bool:
        """A pod is gone. Returns whether that released capacity others may use."""
        if key in self._own_deletes:
            self._own_deletes.discard(key)
            return False
        u = self.registry.pod_unit.get(key)
        node = None
        if u is not None:
            node = u.node_of(key)
            if node is not None and u.remove(key):
                u.lost[key] = node
                self._dirty.add(u.name)
        entry = self.state.bound.get(key)
        if entry is not None:
            node = node or self.state.topology.names[entry[0]]
            self._release([key])
        return entry is not None and node is not None and self._node_ok.get(node, False)

    def _external_binds(self, keys: set[str]) -> None:
        """Pods bound by someone else: charge them (and track them if they are ours)."""
        for p in self.backend.pods():
            if p.key in keys and p.node_name is not None:
                assume(self.state, [(p.key, p.node_name, p.requests)])
                u = self.registry.pod_unit.get(p.key)
                if u is not None and u.add(p.key, p.node_name):
                    self._dirty.add(u.name)

    def _release(self, keys: Iterable[str]) -> None:
        if release(self.state, keys):
            self._freed += 1
            self._view_cache = None

    def _wake_queue(self) -> None:
        """Capacity appeared: queued units that could now fit (their minimum's resources
        are free inside one domain of their root's required level, or the cluster) and
        degraded units are tried at once, backoff reset."""
        now = self.clock.now()
        st = self.state
        free = np.where(st.schedulable, np.maximum(st.free, 0), 0)
        per_level: dict[str | None, np.ndarray] = {}  # free per domain of a level
        for u in self.units.values():
            if u.state == UnitState.running_degraded:
                u.wake(now)  # its repair may need only a little
                continue
            if not u.queued or u.tree is None:
                continue
            key = required_key(u.tree)  # the whole unit lies in one domain of it
            sums = per_level.get(key)
            if sums is None:
                level = st.topology.level_for(key) if key is not None else None
                sums = per_level[key] = (
                    free.sum(axis=1, keepdims=True) if level is None or not len(level)
                    else np.add.reduceat(free, level.starts, axis=1))
            ok = np.ones(sums.shape[1], dtype=bool)
            for r, v in u.need().items():
                j = st.rindex.get(r)
                if j is None:
                    ok[:] = False  # no node has it
                else:
                    ok &= sums[j] >= v
            if ok.any():
                u.wake(now)

    # -- workloads ----------------------------------------------------------------------

    @property
    def units(self) -> dict[str, Unit]:
        return self.registry.units

    def _sync_workloads(self, removed: set[str] | None = None) -> bool:
        """Bring units in line with the backend's workloads and apply what that takes;
        True when capacity was freed."""
        ch = self.registry.sync(self.backend.workloads(), removed or set(), self.clock.now())
        for name in ch.dropped:
            self._reserving.pop(name, None)
        self._release(ch.released)
        for u, pods, reason in ch.evict:
            self._evict(u, pods, reason)
        for kind, u, msg in ch.events:
            self._event(kind, u, msg)
        self._dirty |= ch.dirty
        if any(k in self._labelled and k not in self._levels and k != HOSTNAME
               for k in ch.new_keys):  # a new key may nest in the chain of levels
            self._levels_dirty = True
        return ch.freed

    # -- cluster state ------------------------------------------------------------------

    def _rebuild(self, nodes: Sequence[Node] | None = None) -> None:
        nodes = self.backend.nodes() if nodes is None else nodes
        self._labelled = {k for n in nodes for k in n.labels}
        self._levels = derive_levels(nodes, self.registry.keys, self.config.levels)
        self._levels_dirty = False
        bound = [p for p in self.backend.pods() if p.node_name]
        self.state = ClusterState.from_nodes(nodes, self._levels, bound)
        assume(self.state, [(p, n, u.requests(p)) for u in self.units.values()
                            for p, n in u.bound().items() if p not in self.state.bound])
        self._view_cache = None
        self._freed += 1

    def _domain_of(self, node: str, key: str) -> str | None:
        return label_of(self.state, node, key)

    def _hidden(self, u: Unit, extras: bool = False) -> np.ndarray:
        """Nodes reserved by units ahead of ``u`` (by every other unit, for extras)."""
        parts = [domain_nodes(self.state, o.reserved.key, o.reserved.value)
                 for o in self._reserving.values()
                 if o.reserved is not None and o is not u and (extras or o.key < u.key)]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(parts))

    def _view(self, hidden: np.ndarray) -> ClusterState:
        """The state as a unit may use it: reserved capacity hidden."""
        if len(hidden) == 0:
            return self.state
        key = (self.state.generation, id(self.state), hidden.tobytes())
        if self._view_cache is not None and self._view_cache[0] == key:
            return self._view_cache[1]
        view = self.state.snapshot()
        hide(view, hidden)
        self._view_cache = (key, view)
        return view

    # -- applying decisions (the one place that binds and evicts) -----------------------

    def _bind(self, u: Unit, assignments: Mapping[str, str], purpose: str) -> str | None:
        """Assume and bind every pod of a decision; on any failure roll the decision back
        (evict what was bound, release what was assumed). Returns the error, or None."""
        items = [(p, n) for p, n in assignments.items() if p in u.set_of]
        assume(self.state, [(p, n, u.requests(p)) for p, n in items])
        done: list[str] = []
        for p, n in items:
            self._own_binds.add(p)
            try:
                self.backend.bind(p, n)
            except BindError as err:
                self._own_binds.discard(p)
                self._release([q for q, _ in items[len(done):]])
                if done:
                    self._evict(u, done, f"rollback: bind of {p} failed")
                self._event("BindFailed", u, f"{purpose}: {err}; rolled back "
                            f"{len(done)} bound pods")
                return str(err)
            u.add(p, n)
            done.append(p)
        self._report.bound_pods += len(done)
        self._view_cache = None
        self._placed += 1
        self._placed_at[u.priority] = self._placed
        return None

    def _evict(self, u: Unit | None, pods: Iterable[str], reason: str) -> int:
        pods = list(pods)
        for p in pods:
            self._own_deletes.add(p)
            self.backend.evict(p, reason)
            if u is not None:
                u.remove(p)
        self._release(pods)
        self._report.evicted_pods += len(pods)
        return len(pods)

    def _requeue(self, u: Unit, kind: str, reason: str) -> None:
        """Evict the whole unit and queue it again, backoff reset."""
        now = self.clock.now()
        self._evict(u, list(u.bound()), reason)
        u.set_state(UnitState.evicted, reason, now)
        u.degraded_since = None
        u.extras_next = None
        u.domain = None
        u.lost.clear()
        u.failures = 0
        u.next_try = now
        self._event(kind, u, reason)

    def _event(self, kind: str, u: Unit, message: str) -> None:
        self.events.append(SchedEvent(self.clock.now(), kind, u.name, message))

    # -- health and repair --------------------------------------------------------------

    def _check_health(self) -> None:
        now = self.clock.now()
        for name in sorted(self._dirty):
            u = self.units.get(name)
            if u is None or u.tree is None:
                continue
            lost = dict(u.lost)
            u.lost.clear()
            if not u.running:
                continue
            a = assess(u, lost)
            if a.evict_whole:
                self._requeue(u, "Evicted", a.reason)
                continue
            for path, pods in a.evict:
                self._evict(u, pods, f"disruption all: {path} below its minimum")
            if a.degraded:
                if u.state == UnitState.admitted:
                    u.set_state(UnitState.running_degraded, a.reason, now)
                    u.degraded_since = now
                    u.failures = 0
                    u.next_try = now
                    self._event("Degraded", u, a.reason)
            elif u.state == UnitState.running_degraded:
                self._restored(u, "minimum restored")
            elif u.n_bound < u.desired:
                u.extras_next = now  # lost extras: place them again soon
        self._dirty.clear()

    def _restored(self, u: Unit, message: str) -> None:
        now = self.clock.now()
        u.set_state(UnitState.admitted, "", now)
        u.degraded_since = None
        u.failures = 0
        u.extras_next = now + self.config.extras_interval if u.n_bound < u.desired else None
        self._event("Repaired", u, message)
        self._report.repaired += 1

    def _repair(self) -> None:
        cfg = self.config
        now = self.clock.now()
        for u in ordered(x for x in self.units.values()
                         if x.state == UnitState.running_degraded):
            assert u.tree is not None and u.degraded_since is not None
            overdue = now >= u.degraded_since + cfg.stale_timeout
            if u.next_try > now and not overdue:
                continue
            tree = residual(u.tree, u.sets, self._domain_of)
            d = self._place(tree, self._view(self._hidden(u))) if tree is not None else None
            if d is not None and d.admitted and self._bind(u, d.assignments, "repair") is None \
                    and satisfied(u.tree, u.sets):
                self._restored(u, f"re-placed {len(d.assignments)} pods inside "
                               f"{u.domain or 'its domains'}")
                continue
            why = d.reason if d is not None and d.reason else "no room inside its domains"
            if overdue:
                self._requeue(u, "Evicted", f"not repaired within {cfg.stale_timeout:g}s "
                              f"({why}): evicted whole")
                continue
            u.set_state(UnitState.running_degraded, f"repair: {why}", now)
            u.failed(now, cfg.backoff_initial, cfg.backoff_max)

    # -- starvation ---------------------------------------------------------------------

    def _reserve_due(self, u: Unit) -> float:
        return max(u.pending_since + self.config.reserve_after, u.reserve_retry)

    def _unreserve(self, u: Unit) -> None:
        if u.reserved is not None:
            u.reserved = None
            self._reserving.pop(u.name, None)
            self._view_cache = None
            self._freed += 1

    def _reserve(self) -> None:
        now = self.clock.now()
        for u in [x for x in self._reserving.values() if not x.queued]:
            self._unreserve(u)
        for u in ordered(x for x in self.units.values() if x.queued and x.tree is not None
                         and x.reserved is None and self._reserve_due(x) <= now):
            assert u.tree is not None
            taken = [o.reserved.domain for o in self._reserving.values()
                     if o.reserved is not None and o.key < u.key]
            choice = choose_domain(u.tree, self.state, taken)
            if choice is None:  # every candidate is reserved ahead of it: look again later
                u.reserve_retry = now + self.config.reserve_after
                continue
            key, value, label = choice
            u.reserved = Reservation(u.name, key, value, label, now)
            self._reserving[u.name] = u
            self._view_cache = None
            self._event("Reserved", u, f"waited {now - u.pending_since:g}s: reserves {label} "
                        "against lower-priority and later units")

    # -- the queue ----------------------------------------------------------------------

    def _place(self, tree: TreeNode, state: ClusterState) -> Decision:
        return self.policy.place(tree, state)

    def _schedule_queue(self) -> None:
        now = self.clock.now()
        due = ordered(u for u in self.units.values()
                      if u.queued and u.tree is not None and u.next_try <= now)
        limit = self.config.max_units_per_cycle
        self._victims = None
        for u in due[:limit] if limit is not None else due:
            if u.queued:
                self._attempt(u)
        self._victims = None

    def _attempt(self, u: Unit) -> None:
        assert u.tree is not None
        cfg = self.config
        now = self.clock.now()
        rep = self._report
        u.attempts += 1
        rep.attempted += 1
        if u.failed_at == self._epoch(u):
            # nothing was freed (nor lower-priority pods, preemption victims, placed)
            # since it last failed
            u.set_state(UnitState.pending, u.reason, now)
            u.failed(now, cfg.backoff_initial, cfg.backoff_max)
            self._event("Unschedulable", u, u.reason)
            return
        start = time.perf_counter()
        tree = u.tree if not u.n_bound else residual(u.tree, u.sets, self._domain_of)
        if tree is None:
            self._admit(u, None, None)
            return
        hidden = self._hidden(u)
        d = self._place(tree, self._view(hidden))
        plan: Preemption | None = None
        note = ""
        if not d.admitted and self.policy.preemption:
            # units admitted later in this pass rank at least as high: the list holds
            if self._victims is None:
                self._victims = sorted((x for x in self.units.values() if x.running),
                                       key=lambda x: x.priority)
            lower = [x for x in self._victims if x.priority < u.priority and x.running]
            search = find_preemption(tree, u.priority, lower, self.state, self._place,
                                     hidden, cfg.preemption_budget)
            plan = search.plan
            note = "; ".join(search.notes)
            if plan is not None:
                self._preempt(u, plan)
                d = self._place(tree, self._view(hidden))
        rep.decision_seconds.append(time.perf_counter() - start)
        if d.admitted:
            err = self._bind(u, d.assignments, "admit")
            if err is None:
                self._admit(u, d, plan)
                return
            u.set_state(UnitState.pending, f"bind failed: {err}", now)
        else:
            u.set_state(UnitState.pending, d.reason, now)
            self._event("Unschedulable", u, d.reason + (f" (preemption: {note})" if note else ""))
            u.failed_at = self._epoch(u)
        u.failed(now, cfg.backoff_initial, cfg.backoff_max)

    def _epoch(self, u: Unit) -> tuple[int, int]:
        """What a failed attempt of ``u`` depends on: capacity released, and (with
        preemption) lower-priority pods placed since."""
        victims = 0
        if self.policy.preemption:
            victims = max((v for p, v in self._placed_at.items() if p < u.priority), default=0)
        return (self._freed, victims)

    def _preempt(self, u: Unit, plan: Preemption) -> None:
        now = self.clock.now()
        for v in plan.victims:
            victim = self.units.get(v.unit)
            if victim is None:
                continue
            victim.preemptions += 1
            self._report.preempted += 1
            msg = (f"preempted by {u.name} (priority {u.priority}) to make room in "
                   f"{plan.domain}")
            if v.whole:
                self._requeue(victim, "Preempted", msg)
            else:
                self._evict(victim, v.pods, msg)
                victim.extras_next = now + self.config.extras_interval
                self._event("Preempted", victim, f"{len(v.pods)} pods above its minimum {msg}")

    def _admit(self, u: Unit, d: Decision | None, plan: Preemption | None) -> None:
        now = self.clock.now()
        root = d.groups[0] if d is not None and d.groups else None
        u.domain = root.domain if root is not None else u.domain
        u.admitted_at = now
        u.failures = 0
        u.degraded_since = None
        self._unreserve(u)
        self._view_cache = None
        u.set_state(UnitState.admitted, "", now)
        u.extras_next = now + self.config.extras_interval if u.n_bound < u.desired else None
        nodes = len(set(u.bound().values()))
        msg = f"{u.n_bound}/{u.desired} pods on {plural(nodes, 'node')}"
        if u.domain:
            msg += f" in {u.domain}"
        if plan is not None:
            msg += f", after preempting {', '.join(sorted({v.unit for v in plan.victims}))}"
        self._event("Admitted", u, msg)
        self._report.admitted += 1

    # -- extras -------------------------------------------------------------------------

    def _grow_extras(self) -> None:
        now = self.clock.now()
        interval = self.config.extras_interval
        for u in ordered(x for x in self.units.values() if x.state == UnitState.admitted
                         and x.extras_next is not None and x.extras_next <= now):
            assert u.tree is not None
            missing = u.n_bound < u.desired and u.extras_at != self._freed
            tree = residual(u.tree, u.sets, self._domain_of) if missing else None
            if tree is not None:
                d = self._place(tree, self._view(self._hidden(u, extras=True)))
                if d.admitted and d.assignments and \
                        self._bind(u, d.assignments, "extras") is None:
                    self._event("Extras", u, f"placed {len(d.assignments)} more pods "
                                f"({u.n_bound}/{u.desired})")
                u.extras_at = self._freed  # what is still missing does not fit now
            u.extras_next = now + interval if u.n_bound < u.desired else None
