"""What the scheduler tells the cluster: pod Events and PodGroup status, like Volcano.

* Pod Events (core ``v1``): ``Scheduled`` ("Successfully assigned ns/pod to node", as
  kube-scheduler says it) on every bind; ``FailedScheduling`` with the gang's reason
  on every pending pod of a unit that does not fit (or whose bind was rolled back);
  ``Preempted``/``Evicted`` on pods deleted by preemption, repair or rollback.
  Repeats of one (pod, reason, message) are aggregated as kube's event correlator does:
  one Event whose ``count`` and ``lastTimestamp`` are patched at most every
  ``aggregate_interval`` seconds.
* Volcano PodGroup status: ``phase`` ``Pending`` / ``Running`` / ``Unknown`` (some pods
  run but the gang is below its minimum), ``running`` (pods bound), and the conditions
  ``Unschedulable`` (reason ``NotEnoughResources`` or ``NotEnoughPods``, message: the
  engine's reason) or ``Scheduled`` (reason "tasks in gang are ready to be scheduled").
  Written only when it changes, through the ``status`` subresource (falling back to
  the object when the CRD has none).
* Workload API PodGroup and CompositePodGroup status (KEP-5832): the condition
  ``PodGroupScheduled``, ``True`` (reason ``Scheduled``) once the gang is admitted,
  ``False`` with reason ``Unschedulable`` (message: the engine's reason) when it does not
  fit, ``False`` with reason ``Waiting`` while the group is not ready.
* Pods of a gang that cannot be placed: ``PodScheduled=False``, reason
  ``Unschedulable``, the gang's reason as message, as kube-scheduler writes it (the
  condition cluster-autoscaler and Karpenter act on).

A status write that fails (a server error, throttling, a conflict) is retried until it
lands, with backoff, unless a newer status for the object replaced it; every
``reconcile_interval`` seconds the tracker also compares each group's watched status
with what it should be and writes again where they differ.

Writes go through a :class:`StatusWriter` thread with a token bucket and a bounded
queue, so that status never slows binding down; only the leader writes; when the queue
is full, events are dropped (and counted), status updates are coalesced per object.
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gangsched.api.types import Pod
from gangsched.k8s.api import EVENTS, PODS, Kind, KubeAPI, KubeError, Obj
from gangsched.scheduler.scheduler import Scheduler
from gangsched.scheduler.status import SchedEvent, UnitState

log = logging.getLogger("gangsched.k8s.status")

MAX_MESSAGE = 1024
SCHEDULED_REASON = "tasks in gang are ready to be scheduled"
WORKLOAD_GROUP = "scheduling.k8s.io"
PODGROUP_SCHEDULED = "PodGroupScheduled"


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_ref(pod: Pod) -> Obj:
    ref: Obj = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace,
                "name": pod.name}
    if pod.uid:
        ref["uid"] = pod.uid
    return ref


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.qps = qps
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._t = clock()

    def delay(self) -> float:
        """Take a token; seconds to wait before using it (0 when one was there)."""
        now = self.clock()
        self._tokens = min(self.burst, self._tokens + (now - self._t) * self.qps)
        self._t = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps


@dataclass
class _Aggregate:
    name: str  # the Event object's name
    namespace: str
    count: int
    sent_count: int
    last_sent: float
    last_seen: float


@dataclass
class WriterStats:
    events: int = 0
    event_patches: int = 0
    status_writes: int = 0
    dropped: int = 0
    errors: int = 0
    retries: int = 0
    pod_conditions: int = 0
    skipped_not_leader: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _EventItem:
    involved: Obj
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class _StatusItem:
    kind: Kind
    namespace: str
    name: str
    status: Obj


class StatusWriter:
    """A thread that writes Events and status, rate-limited; only while leader."""

    def __init__(
        self,
        api: KubeAPI,
        *,
        component: str = "gangsched",
        instance: str = "",
        qps: float = 50.0,
        burst: int = 100,
        max_queue: int = 10_000,
        aggregate_interval: float = 60.0,
        aggregate_ttl: float = 600.0,
        is_leader: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.component = component
        self.instance = instance
        self.bucket = TokenBucket(qps, burst, clock)
        self.max_queue = max_queue
        self.aggregate_interval = aggregate_interval
        self.aggregate_ttl = aggregate_ttl
        self.is_leader = is_leader
        self.clock = clock
        self.stats = WriterStats()
        self._events: collections.deque[_EventItem] = collections.deque()
        self._statuses: dict[tuple[str, str, str], _StatusItem] = {}
        self._aggregates: dict[tuple[str, str, str, str, str], _Aggregate] = {}
        self._no_status_subresource: set[str] = set()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._event_turn = False  # with both queued, status updates and events alternate
        self._thread: threading.Thread | None = None
        self._last_prune = clock()
        self._failures = 0  # status writes failed in a row: the retry backoff

    # -- producers (main thread) ----------------------------------------------------------

    def event(self, involved: Obj, type_: str, reason: str, message: str) -> None:
        if not self.is_leader():
            self.stats.skipped_not_leader += 1
            return
        with self._cond:
            if len(self._events) >= self.max_queue:
                self.stats.dropped += 1
                return
            self._events.append(_EventItem(involved, type_, reason, message[:MAX_MESSAGE]))
            self._cond.notify()

    def pod_event(self, pod: Pod, type_: str, reason: str, message: str) -> None:
        self.event(pod_ref(pod), type_, reason, message)

    def status(self, kind: Kind, namespace: str, name: str, status: Obj) -> None:
        """Write ``status`` (a merge patch of ``.status``); a newer call for the same
        object replaces an unwritten older one."""
        if not self.is_leader():
            self.stats.skipped_not_leader += 1
            return
        with self._cond:
            self._statuses[(kind.id, namespace, name)] = _StatusItem(kind, namespace, name,
                                                                    status)
            self._cond.notify()

    @property
    def backlog(self) -> int:
        with self._cond:
            return len(self._events) + len(self._statuses)

    # -- the thread -----------------------------------------------------------------------

    def start(self) -> StatusWriter:
        self._thread = threading.Thread(target=self._run, name="status-writer", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def flush(self, timeout: float) -> bool:
        """Wait until the queue is empty (tests, graceful shutdown)."""
        deadline = time.monotonic() + timeout
        while self.backlog and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self.backlog

    def _next(self) -> _EventItem | _StatusItem | None:
        with self._cond:
            while not self._stop.is_set() and not self._events and not self._statuses:
                self._cond.wait(0.5)
            # take turns when both wait: a steady stream of status updates (a large gang
            # binding) must not hold every event back, nor events the statuses
            if self._events and (self._event_turn or not self._statuses):
                self._event_turn = False
                return self._events.popleft()
            if self._statuses:
                self._event_turn = True
                key = next(iter(self._statuses))
                return self._statuses.pop(key)
            return None

    def _run(self) -> None:
        while not self._stop.is_set():
            item = self._next()
            if item is None:
                continue
            if not self.is_leader():
                self.stats.skipped_not_leader += 1
                continue
            wait = self.bucket.delay()
            if wait > 0 and self._stop.wait(wait):
                break
            try:
                if isinstance(item, _StatusItem):
                    self._write_status(item)
                    self._failures = 0
                else:
                    self._write_event(item)
            except KubeError as err:
                self.stats.errors += 1
                log.debug("status write failed: %s", err)
                if isinstance(item, _StatusItem) and (err.retriable or err.status == 409):
                    self._retry(item)
            except Exception:
                self.stats.errors += 1
                log.exception("status write failed")
            self._prune()

    def _retry(self, item: _StatusItem) -> None:
        """Put a failed status write back (unless a newer one for the object came), and
        back off before the next write."""
        self.stats.retries += 1
        self._failures += 1
        with self._cond:
            self._statuses.setdefault((item.kind.id, item.namespace, item.name), item)
        self._stop.wait(min(2.0, 0.02 * 2 ** min(self._failures, 8)))

    def write_now(self, item: _EventItem | _StatusItem) -> None:
        """Write one item on the calling thread (tests)."""
        if isinstance(item, _StatusItem):
            self._write_status(item)
        else:
            self._write_event(item)

    def _write_status(self, item: _StatusItem) -> None:
        body = {"status": item.status}
        if item.kind.id not in self._no_status_subresource:
            try:
                self.api.merge_patch(item.kind, item.namespace, item.name, body,
                                     subresource="status")
                self.stats.status_writes += 1
                return
            except KubeError as err:
                if err.status != 404:
                    raise
                try:  # the object or the subresource is missing: which one?
                    self.api.get(item.kind, item.namespace, item.name)
                except KubeError as gone:
                    if gone.status == 404:
                        return
                    raise
                self._no_status_subresource.add(item.kind.id)
        try:
            self.api.merge_patch(item.kind, item.namespace, item.name, body)
        except KubeError as err:
            if err.status != 404:
                raise
            return
        self.stats.status_writes += 1

    def _write_event(self, item: _EventItem) -> None:
        inv = item.involved
        ns = str(inv.get("namespace") or "default")
        key = (ns, str(inv.get("name")), str(inv.get("uid") or ""), item.reason, item.message)
        now = self.clock()
        agg = self._aggregates.get(key)
        stamp = now_rfc3339()
        if agg is not None:
            agg.count += 1
            agg.last_seen = now
            if now - agg.last_sent < self.aggregate_interval:
                return
            try:
                self.api.merge_patch(EVENTS, agg.namespace, agg.name,
                                     {"count": agg.count, "lastTimestamp": stamp})
                agg.sent_count, agg.last_sent = agg.count, now
                self.stats.event_patches += 1
                return
            except KubeError as err:
                if err.status != 404:
                    raise
                del self._aggregates[key]  # expired on the server: create a new one
        name = f"{inv.get('name')}.{secrets.token_hex(8)}"
        body: Obj = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": inv, "reason": item.reason, "message": item.message,
            "type": item.type, "count": 1, "firstTimestamp": stamp, "lastTimestamp": stamp,
            "source": {"component": self.component},
            "reportingComponent": self.component, "reportingInstance": self.instance,
        }
        self.api.create(EVENTS, ns, body)
        self._aggregates[key] = _Aggregate(name, ns, 1, 1, now, now)
        self.stats.events += 1
        self.stats.by_reason[item.reason] = self.stats.by_reason.get(item.reason, 0) + 1

    def _prune(self) -> None:
        now = self.clock()
        if now - self._last_prune < 30:
            return
        self._last_prune = now
        old = [k for k, a in self._aggregates.items() if now - a.last_seen > self.aggregate_ttl]
        for k in old:
            del self._aggregates[k]


# -- from scheduler events to writes ---------------------------------------------------------


def _condition(type_: str, reason: str, message: str, previous: list[Any]) -> Obj:
    old = next((c for c in previous if isinstance(c, Mapping) and c.get("type") == type_
                and c.get("status") == "True"), None)
    since = str(old.get("lastTransitionTime")) if old is not None else now_rfc3339()
    return {"type": type_, "status": "True", "reason": reason, "message": message[:MAX_MESSAGE],
            "lastTransitionTime": since}


def podgroup_status(states: list[tuple[UnitState, str, int]], current: Mapping[str, Any]
                    ) -> Obj:
    """The Volcano status for a PodGroup whose units are in ``states`` (state, reason,
    pods bound), keeping conditions of other types from ``current``."""
    bound = sum(n for _, _, n in states)
    admitted = bool(states) and all(s == UnitState.admitted for s, _, _ in states)
    previous = list(current.get("conditions") or [])
    if admitted:
        phase = "Running"
        cond = _condition("Scheduled", SCHEDULED_REASON, "", previous)
    else:
        blocked = next(((s, r) for s, r, _ in states if s != UnitState.admitted), None)
        state, reason = blocked if blocked is not None else (UnitState.waiting, "")
        if state == UnitState.running_degraded:
            phase = "Unknown"
        else:
            phase = "Running" if bound and state != UnitState.waiting else "Pending"
        why = "NotEnoughPods" if state == UnitState.waiting else "NotEnoughResources"
        cond = _condition("Unschedulable", why, reason or str(state), previous)
    others = [c for c in previous if isinstance(c, Mapping)
              and c.get("type") not in ("Scheduled", "Unschedulable")]
    return {"phase": phase, "running": bound, "conditions": [*others, cond]}


def _workload_condition(status: str, reason: str, message: str, previous: list[Any],
                        generation: int | None) -> Obj:
    old = next((c for c in previous if isinstance(c, Mapping)
                and c.get("type") == PODGROUP_SCHEDULED), None)
    since = (str(old.get("lastTransitionTime")) if old is not None
             and old.get("status") == status and old.get("lastTransitionTime")
             else now_rfc3339())
    cond: Obj = {"type": PODGROUP_SCHEDULED, "status": status, "reason": reason,
                 "message": message[:MAX_MESSAGE], "lastTransitionTime": since}
    if generation is not None:
        cond["observedGeneration"] = generation
    return cond


def workload_group_status(states: list[tuple[UnitState, str, int]],
                          current: Mapping[str, Any], generation: int | None = None) -> Obj:
    """The Workload API status (KEP-5832) of a PodGroup or CompositePodGroup whose units
    are in ``states``: the ``PodGroupScheduled`` condition, other conditions kept."""
    previous = list(current.get("conditions") or [])
    if states and all(s == UnitState.admitted for s, _, _ in states):
        cond = _workload_condition("True", "Scheduled", "", previous, generation)
    else:
        blocked = next(((s, r) for s, r, _ in states if s != UnitState.admitted), None)
        state, reason = blocked if blocked is not None else (UnitState.waiting, "")
        if state == UnitState.running_degraded:
            cond = _workload_condition("False", "Degraded", reason or str(state), previous,
                                       generation)
        elif state == UnitState.waiting:
            cond = _workload_condition("False", "Waiting", reason or str(state), previous,
                                       generation)
        else:
            cond = _workload_condition("False", "Unschedulable", reason or str(state),
                                       previous, generation)
    others = [c for c in previous if isinstance(c, Mapping)
              and c.get("type") != PODGROUP_SCHEDULED]
    return {"conditions": [*others, cond]}


def pod_unschedulable_conditions(current: Mapping[str, Any] | None, message: str
                                 ) -> list[Obj] | None:
    """The pod's conditions with ``PodScheduled=False/Unschedulable`` and ``message``,
    as kube-scheduler writes them; None when the pod already says exactly that."""
    status = (current or {}).get("status")
    previous = list(status.get("conditions") or []) if isinstance(status, Mapping) else []
    message = message[:MAX_MESSAGE]
    old = next((c for c in previous if isinstance(c, Mapping)
                and c.get("type") == "PodScheduled"), None)
    if old is not None and old.get("status") == "False" and \
            old.get("reason") == "Unschedulable" and old.get("message") == message:
        return None
    since = (str(old.get("lastTransitionTime")) if old is not None
             and old.get("status") == "False" and old.get("lastTransitionTime")
             else now_rfc3339())
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message, "lastProbeTime": None, "lastTransitionTime": since}
    others: list[Obj] = [dict(c) for c in previous if isinstance(c, Mapping)
                         and c.get("type") != "PodScheduled"]
    return [*others, cond]


def _same_status(want: Mapping[str, Any], have: Mapping[str, Any]) -> bool:
    if want.get("phase") != have.get("phase") or want.get("running") != have.get("running"):
        return False

    def conds(s: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        return sorted((c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
                      for c in s.get("conditions") or [] if isinstance(c, Mapping))

    return conds(want) == conds(have)


def _same_conditions(want: Mapping[str, Any], have: Mapping[str, Any]) -> bool:
    def conds(s: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        return sorted((c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
                      for c in s.get("conditions") or [] if isinstance(c, Mapping))

    return conds(want) == conds(have)


class StatusTracker:
    """Turns a scheduler's events and unit states into Events and PodGroup status.

    ``podgroups(workload)`` says whether a workload is a Volcano PodGroup and returns
    ``(kind, namespace, name, current status)``; ``pod(key)`` finds a pod.
    """

    def __init__(self, writer: StatusWriter,
                 podgroup: Callable[[str], tuple[Kind, str, str, Mapping[str, Any]] | None],
                 pod: Callable[[str], Pod | None], *, keep_events: int = 1000,
                 raw_pod: Callable[[str], Mapping[str, Any] | None] | None = None,
                 reconcile_interval: float = 30.0,
                 members: Callable[[str], list[tuple[Kind, str, str, Mapping[str, Any]]]]
                 | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.writer = writer
        self.podgroup = podgroup
        self.members = members  # groups inside a workload's tree (a composite's children)
        self.pod = pod
        self.raw_pod = raw_pod
        self.keep_events = keep_events
        self.reconcile_interval = reconcile_interval
        self.clock = clock
        self._seen = 0
        self._written: dict[str, Obj] = {}  # workload -> last status written
        self._pod_messages: dict[str, str] = {}  # pod -> Unschedulable message written
        self._dirty: set[str] = set()
        self._first = True
        self._next_reconcile = clock() + reconcile_interval

    def after_cycle(self, sched: Scheduler) -> list[SchedEvent]:
        """Write what the last cycle changed; returns its new scheduler events."""
        events = sched.events[self._seen:]
        self._seen = len(sched.events)
        for ev in events:
            u = sched.units.get(ev.unit)
            if u is None:
                continue
            self._dirty.add(u.workload)
            if ev.kind in ("Unschedulable", "BindFailed"):
                bound = u.bound()
                msg = f"gang {u.name}: {ev.message}"
                for key in u.set_of:
                    if key not in bound:
                        pod = self.pod(key)
                        if pod is not None:
                            self.writer.pod_event(pod, "Warning", "FailedScheduling", msg)
                            if ev.kind == "Unschedulable":
                                self._pod_unschedulable(pod, msg)
        reconcile = self.clock() >= self._next_reconcile
        if self._first or reconcile:  # a new leader, or now and then: every group's status
            self._first = False
            self._next_reconcile = self.clock() + self.reconcile_interval
            if reconcile:
                self._written.clear()  # compare with what the API shows, not what we sent
            self._dirty.update(sched.registry.by_workload)
        for name in sorted(self._dirty):
            self._update(sched, name)
        self._dirty.clear()
        if len(sched.events) > self.keep_events:  # the scheduler's log is ours to bound
            del sched.events[: len(sched.events) - self.keep_events]
            self._seen = len(sched.events)
        return events

    def _pod_unschedulable(self, pod: Pod, message: str) -> None:
        if self._pod_messages.get(pod.key) == message:
            return
        raw = self.raw_pod(pod.key) if self.raw_pod is not None else None
        conditions = pod_unschedulable_conditions(raw, message)
        self._pod_messages[pod.key] = message
        if len(self._pod_messages) > 100_000:  # forget the oldest
            for key in list(self._pod_messages)[:50_000]:
                del self._pod_messages[key]
        if conditions is None:
            return
        self.writer.stats.pod_conditions += 1
        self.writer.status(PODS, pod.namespace, pod.name, {"conditions": conditions})

    def _update(self, sched: Scheduler, workload: str) -> None:
        target = self.podgroup(workload)
        if target is None:
            return
        kind, ns, name, current = target
        states = [(u.state, u.reason, u.n_bound) for n in sched.registry.by_workload.get(
            workload, []) if (u := sched.units.get(n)) is not None]
        if kind.group == WORKLOAD_GROUP:
            targets = [target, *(self.members(workload) if self.members else [])]
            for kind, ns, name, current in targets:
                want = workload_group_status(states, current)
                key = f"{kind.kind}:{ns}/{name}"
                if _same_conditions(want, current) or \
                        _same_conditions(want, self._written.get(key, {})):
                    continue
                self._written[key] = want
                self.writer.status(kind, ns, name, want)
            return
        want = podgroup_status(states, current)
        if _same_status(want, current) or _same_status(want, self._written.get(workload, {})):
            return
        self._written[workload] = want
        self.writer.status(kind, ns, name, want)

    def mark(self, workload: str) -> None:
        self._dirty.add(workload)
