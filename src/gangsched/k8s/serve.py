"""``gangsched serve``: the scheduler as a Kubernetes secondary scheduler.

Threads: one reflector per watched resource, the leader elector, the status writer,
the health/metrics server, and the main loop (this module), which alone touches the
scheduler and the cluster view:

1. wait until every cache has listed once (then ``/readyz`` answers 200);
2. repeat: apply the queued watch deltas to the view (events to the scheduler); retry
   failed deletes; if leading, run a scheduling cycle and publish status and metrics;
   sleep until a delta arrives or the scheduler's next wakeup, at most ``max_wait``.

Becoming leader, it lists every resource afresh (so that binds of the previous leader
are seen), but for those whose last list began after it took the lease (it campaigns
once before its first lists), and builds a new
:class:`~gangsched.scheduler.scheduler.Scheduler` from the API's state: bound pods
(``spec.nodeName``) are adopted, never bound again, and gangs left partial by a crashed
leader are repaired or evicted by the scheduler's health checks. Losing the lease, it
drops the scheduler at once and waits as a standby (its caches stay warm). SIGTERM or
SIGINT: stop the loop, flush status briefly, release the lease, stop the watches.

Logs are JSON lines on stderr (``ts``, ``level``, ``logger``, ``msg`` and fields).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import logging
import os
import signal
import socket
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from gangsched.api.errors import GangschedError
from gangsched.api.loader import Kinds
from gangsched.api.types import Pod
from gangsched.frontends import KINDS
from gangsched.k8s.api import (
    NODES,
    PODS,
    VOLCANO_PODGROUPS,
    WORKLOAD_GROUP,
    Kind,
    KubeAPI,
    KubeError,
    Obj,
    version_priority,
)
from gangsched.k8s.backend import ClusterView, KubeBackend
from gangsched.k8s.binder import Binder, BindPool, Deleter
from gangsched.k8s.cache import DeltaQueue, Reflector
from gangsched.k8s.leader import AlwaysLeader, LeaderElector, LeaseConfig
from gangsched.k8s.metrics import HealthServer, Metrics
from gangsched.k8s.secure import DelegatedAuth, in_cluster, self_signed, server_context
from gangsched.k8s.status import StatusTracker, StatusWriter
from gangsched.scheduler.backend import BindError
from gangsched.scheduler.clock import RealClock
from gangsched.scheduler.policy import GangschedPolicy, Policy
from gangsched.scheduler.scheduler import Scheduler, SchedulerConfig
from gangsched.scheduler.status import CycleReport, SchedEvent, UnitState

log = logging.getLogger("gangsched.k8s.serve")


def default_identity() -> str:
    """``<hostname>_<random>``, as kube-scheduler names its lease holders."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class ServeConfig:
    kubeconfig: str | None = None
    context: str | None = None
    scheduler_name: str = "gangsched"
    leader_elect: bool = True
    lease_name: str = "gangsched"
    lease_namespace: str = "kube-system"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_host: str | None = None  # None: 0.0.0.0 in a cluster, else 127.0.0.1
    metrics_port: int | None = 10259  # None: no health/metrics server; 0: any free port
    secure: bool = True  # HTTPS (False: plain HTTP, for tests and local debugging)
    cert_file: str | None = None  # PEM certificate and key; None: self-signed
    key_file: str | None = None
    cert_dir: str | None = None  # where a self-signed pair is written (None: a temp dir)
    authenticate: bool | None = None  # bearer tokens via TokenReview/SAR; None: in a cluster
    dashboard: bool = False  # serve the live view at /dashboard
    topology: Sequence[str] | None = None  # node label keys, widest first
    bind_workers: int = 8  # binds on the wire at once (0: one at a time, in the loop)
    events_qps: float = 50.0
    events_burst: int = 100
    sync_timeout: float = 120.0  # seconds to wait for the first lists before giving up
    max_wait: float = 1.0  # longest idle sleep of the main loop
    watch_timeout: tuple[int, int] = (240, 360)
    discovery_interval: float = 60.0  # seconds between looks for newly served kinds
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)


class _JSONFormatter(logging.Formatter):
    _STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
        "message", "asctime", "taskName"}

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for k, v in record.__dict__.items():
            if k not in self._STANDARD and not k.startswith("_"):
                out[k] = v if isinstance(v, str | int | float | bool | type(None)) else str(v)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, separators=(",", ":"))


def setup_logging(level: str = "info") -> Callable[[], None]:
    """JSON lines on stderr for the ``gangsched`` loggers; returns a function that puts
    the previous configuration back."""
    handler = logging.StreamHandler()
    handler.setFormatter(_JSONFormatter())
    root = logging.getLogger("gangsched")
    saved = (list(root.handlers), root.level, root.propagate)
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False

    def restore() -> None:
        root.handlers[:], root.level, root.propagate = saved[0], saved[1], saved[2]

    return restore


class _Discovery:
    """Discovery answers, one request per group version (retried on server errors)."""

    def __init__(self, api: KubeAPI, attempts: int = 4) -> None:
        self.api = api
        self.attempts = attempts
        self.failed: list[str] = []  # group versions that could not be discovered
        self._cache: dict[tuple[str, str], dict[str, Obj]] = {}

    def kinds(self, group: str, version: str) -> dict[str, Obj]:
        """Kind -> its APIResource entry, for what ``group/version`` serves."""
        key = (group, version)
        if key not in self._cache:
            found: list[Obj] | None = None
            for attempt in range(self.attempts):
                try:
                    found = self.api.resources(group, version)
                    break
                except KubeError as err:
                    if not err.retriable or attempt == self.attempts - 1:
                        gv = f"{group}/{version}" if group else version
                        log.warning("cannot discover %s: %s; not watched for now", gv, err,
                                    extra={"group_version": gv})
                        self.failed.append(gv)
                        break
                    time.sleep(min(2.0, 0.2 * 2 ** attempt))
            self._cache[key] = {str(r.get("kind")): r for r in found or []
                                if isinstance(r, dict) and r.get("kind") and r.get("name")}
        return self._cache[key]


def watched_kinds(api: KubeAPI, kinds: Kinds = KINDS,
                  discovery: _Discovery | None = None) -> list[Kind]:
    """Nodes and pods, and every other kind the front-ends read (``kinds``: the
    composition root's) that the server serves, each in the version the server serves
    it in that Kubernetes prefers (GA, then beta, then alpha): kube-apiserver 1.37
    serves Workload and PodGroup in v1beta1 and v1alpha3 (one storage: the versions are
    views of the same objects) but CompositePodGroup only in v1alpha3. The plural and
    scope come from discovery. Kinds not served (a CRD not installed, an API group not
    enabled) are skipped; :class:`Server` looks again now and then."""
    found = discovery or _Discovery(api)
    out = [NODES, PODS]
    versions: dict[tuple[str, str], list[str]] = {}
    for entry in kinds.entries:
        for api_version in entry.api_versions or ():
            group, _, version = api_version.rpartition("/")
            if group or entry.kind not in (NODES.kind, PODS.kind):
                versions.setdefault((group, entry.kind), []).append(version)
    for (group, kind), listed in versions.items():
        for version in sorted(set(listed), key=version_priority):
            resource = found.kinds(group, version).get(kind)
            if resource is not None:
                out.append(Kind(group, version, str(resource["name"]), kind,
                                namespaced=bool(resource.get("namespaced", True))))
                break
        else:
            log.debug("%s (%s) is not served; not watched", kind,
                      ", ".join(f"{group}/{v}" if group else v for v in listed),
                      extra={"kind": kind, "group": group})
    return out


class Server:
    """One replica of the scheduler. :meth:`run` blocks until :meth:`stop`."""

    def __init__(self, config: ServeConfig, api: KubeAPI | None = None,
                 policy: Policy | None = None) -> None:
        if api is None:
            from gangsched.k8s.client import connect

            api = connect(config.kubeconfig, context=config.context)
        self.config = config
        self.api = api
        self.policy = policy or GangschedPolicy()
        self.identity = config.identity or default_identity()
        self.clock = RealClock()
        self.metrics = Metrics(config.scheduler_name)
        self.queue = DeltaQueue()
        self._stop = threading.Event()
        self._killed = False
        self._heartbeat = time.monotonic()
        self.ready = False
        self.kinds = watched_kinds(api)
        self.reflectors = [self._reflector(k) for k in self.kinds]
        self._next_discovery = time.monotonic() + config.discovery_interval
        self.leader: LeaderElector | AlwaysLeader
        if config.leader_elect:
            self.leader = LeaderElector(api, LeaseConfig(
                namespace=config.lease_namespace, name=config.lease_name,
                identity=self.identity, lease_duration=config.lease_duration,
                renew_deadline=config.renew_deadline, retry_period=config.retry_period),
                on_change=lambda _leading: self.queue.wake())
        else:
            self.leader = AlwaysLeader()
        self.view = ClusterView(config.scheduler_name, config.topology)
        self.binder = Binder(api)
        self.bind_pool = BindPool(self.binder, workers=config.bind_workers,
                                  on_done=self.queue.wake) if config.bind_workers > 0 else None
        self.deleter = Deleter(api)
        self.writer = StatusWriter(api, component=config.scheduler_name,
                                   instance=self.identity, qps=config.events_qps,
                                   burst=config.events_burst, is_leader=self.leading)
        self.backend = KubeBackend(self.view, self.clock, binder=self.binder,
                                   deleter=self.deleter, is_leader=self.leading,
                                   pool=self.bind_pool)
        self.backend.on_bound.append(self._bound)
        self.backend.on_evicted.append(self._evicted)
        self.backend.on_bind_error.append(self._bind_failed)
        self.backend.on_node_failure.append(
            lambda _pod, cause: self.metrics.node_evictions.inc(cause=cause))
        self.scheduler: Scheduler | None = None
        self.tracker: StatusTracker | None = None
        self.health: HealthServer | None = None
        self._cert_tmp: tempfile.TemporaryDirectory[str] | None = None
        self.dashboard: Any = None
        if config.metrics_port is not None:
            self.health = self._health_server()
        self.metrics.leader.set_function(lambda: 1.0 if self.leading() else 0.0)
        self.metrics.synced.set_function(lambda: 1.0 if self.ready else 0.0)
        self.metrics.deletes_pending.set_function(lambda: float(len(self.deleter.pending)))
        self.cycles = 0
        self._gc_paused = False  # run() turned the collector off until the caches are built

    def _health_server(self) -> HealthServer:
        """The secure port: /healthz, /readyz, /livez, /metrics (and the dashboard)."""
        cfg = self.config
        host = cfg.metrics_host or ("0.0.0.0" if in_cluster() else "127.0.0.1")
        context = None
        if cfg.secure:
            if cfg.cert_file and cfg.key_file:
                cert, key = Path(cfg.cert_file), Path(cfg.key_file)
            else:
                if cfg.cert_dir:
                    where = Path(cfg.cert_dir)
                else:
                    self._cert_tmp = tempfile.TemporaryDirectory(prefix="gangsched-certs-")
                    where = Path(self._cert_tmp.name)
                cert, key = self_signed(where)
                log.info("serving HTTPS with a self-signed certificate", extra={
                    "cert": str(cert)})
            try:
                context = server_context(cert, key)
            except (OSError, ssl.SSLError) as err:
                raise GangschedError(f"cannot load the serving certificate {cert} and key "
                                     f"{key}: {err}") from None
        check = cfg.authenticate if cfg.authenticate is not None else in_cluster()
        auth = DelegatedAuth(self.api).check if check else None
        pages = {}
        if cfg.dashboard:
            from gangsched.k8s.dashboard import Dashboard

            self.dashboard = Dashboard(self)
            pages = self.dashboard.pages()
        try:
            return HealthServer(self.metrics, host=host, port=cfg.metrics_port or 0,
                                healthy=self._healthy, ready=self._ready,
                                ssl_context=context, auth=auth, pages=pages)
        except OSError as err:
            raise GangschedError(f"cannot listen on {host}:{cfg.metrics_port}: "
                                 f"{err.strerror or err}") from None

    def _reflector(self, kind: Kind) -> Reflector:
        return Reflector(self.api, kind, self.queue, watch_timeout=self.config.watch_timeout,
                         on_error=lambda k, _op: self.metrics.watch_errors.inc(resource=k.id))

    def _rediscover(self) -> None:
        """Watch the kinds the server has started serving since (a CRD installed later,
        a group version that could not be discovered)."""
        self._next_discovery = time.monotonic() + self.config.discovery_interval
        known = {(k.group, k.kind) for k in self.kinds}
        for kind in watched_kinds(self.api):
            if (kind.group, kind.kind) in known:
                continue
            log.info("now served: watching %s", kind.id, extra={"resource": kind.id})
            reflector = self._reflector(kind)
            self.kinds.append(kind)
            self.reflectors.append(reflector)
            reflector.start()

    def kind_of(self, group: str, kind: str) -> Kind | None:
        """The watched resource of ``kind`` in ``group``, if any."""
        return next((k for k in self.kinds if k.group == group and k.kind == kind), None)

    # -- control --------------------------------------------------------------------------

    def leading(self) -> bool:
        return not self._killed and self.leader.is_leader()

    def stop(self) -> None:
        """Graceful stop (SIGTERM): :meth:`run` returns after releasing the lease."""
        self._stop.set()
        self.queue.wake()

    def kill(self) -> None:
        """Stop at once without releasing anything, as if the process died (tests)."""
        self._killed = True
        self._stop.set()
        self.queue.wake()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def _healthy(self) -> tuple[bool, str]:
        if not self.leader.healthy():
            return False, "leader election: not renewed within the renew deadline"
        stuck = time.monotonic() - self._heartbeat
        if stuck > 300:
            return False, f"main loop stuck for {stuck:.0f}s"
        dead = [r.kind.id for r in self.reflectors if not r.alive and not self._stop.is_set()
                and self.ready]
        if dead:
            return False, f"watch threads stopped: {', '.join(dead)}"
        return True, "ok"

    def _ready(self) -> tuple[bool, str]:
        if not self.ready:
            waiting = [r.kind.id for r in self.reflectors if not r.synced.is_set()]
            return False, f"caches not synced: {', '.join(waiting)}"
        return True, "ok" + (" (leader)" if self.leading() else " (standby)")

    # -- hooks ----------------------------------------------------------------------------

    def _bound(self, pod: Pod, node: str) -> None:
        self.metrics.binds.inc()
        self.writer.pod_event(pod, "Normal", "Scheduled",
                              f"Successfully assigned {pod.namespace}/{pod.name} to {node}")

    def _evicted(self, pod: Pod, reason: str) -> None:
        self.metrics.evictions.inc()
        kind = "Preempted" if reason.startswith("preempted") else "Evicted"
        self.writer.pod_event(pod, "Normal" if kind == "Preempted" else "Warning", kind,
                              f"Deleted by {self.config.scheduler_name}: {reason}")

    def _bind_failed(self, pod: Pod, node: str, err: BindError) -> None:
        text = str(err)
        reason = ("not_leader" if "leader" in text else "not_found" if "not found" in text
                  else "conflict" if "already bound" in text or "replaced" in text
                  else "uncertain" if getattr(err, "uncertain", False) else "api_error")
        self.metrics.bind_errors.inc(reason=reason)

    def _podgroup(self, workload: str) -> tuple[Kind, str, str, Mapping[str, Any]] | None:
        """The object whose status tells how ``workload`` is doing: a Volcano PodGroup,
        or the Workload API's PodGroup or CompositePodGroup at the root of its tree."""
        ns, _, name = workload.partition("/")
        for group, kind in ((VOLCANO_PODGROUPS.group, "PodGroup"),
                            (WORKLOAD_GROUP, "PodGroup"), (WORKLOAD_GROUP, "CompositePodGroup")):
            watched = self.kind_of(group, kind)
            if watched is None:
                continue
            ident = (watched.id, workload)
            if ident in self.view.objects:
                return watched, ns, name, self.view.statuses.get(ident, {})
        return None

    def _tree_groups(self, workload: str) -> list[tuple[Kind, str, str, Mapping[str, Any]]]:
        """The Workload API groups inside ``workload``'s tree below its root (a
        CompositePodGroup's child PodGroups and CompositePodGroups)."""
        w = self.view.workloads.get(workload)
        if w is None or w.tree is None:
            return []
        out: list[tuple[Kind, str, str, Mapping[str, Any]]] = []
        stack = [c for c in getattr(w.tree, "children", [])]
        while stack:
            node = stack.pop()
            stack.extend(getattr(node, "children", []))
            kind_name = getattr(node, "kind", "")
            source = getattr(node, "source", "")
            watched = self.kind_of(WORKLOAD_GROUP, kind_name) if kind_name in (
                "PodGroup", "CompositePodGroup") else None
            if watched is None or not source or source == workload:
                continue
            ident = (watched.id, source)
            if ident in self.view.objects:
                ns, _, name = source.partition("/")
                out.append((watched, ns, name, self.view.statuses.get(ident, {})))
        return out

    # -- running --------------------------------------------------------------------------

    def start(self) -> None:
        if self.health is not None:
            self.health.start()
        # The first campaign goes before the first lists (for a moment at most): a
        # replica that wins it lists after taking the lease and need not list again.
        self.leader.start()
        self.leader.attempted.wait(min(2.0, self.config.retry_period))
        for r in self.reflectors:
            r.start()
        self.writer.start()

    def run(self) -> int:
        """Serve until stopped; returns the exit status."""
        self.start()
        # The first lists fill the caches with objects that live on: the collector's
        # full passes over them while they grow find nothing to free (three passes, 0.37 s
        # of the 1.2 s it takes to sync 17,500 objects in benchmarks/serve_load.py). It is
        # off until they are frozen (_lead) or, on a replica that does not lead, synced.
        self._gc_paused = gc.isenabled()
        gc.disable()
        try:
            if not self._sync():
                if self._stop.is_set():
                    return 0
                log.error("caches did not sync within %.0fs", self.config.sync_timeout)
                return 1
            log.info("caches synced", extra={
                "nodes": len(self.view.nodes), "pods": len(self.view.pods),
                "workloads": len(self.view.workloads), "identity": self.identity})
            self._loop()
            return 0
        finally:
            self._resume_gc()
            self.shutdown()

    def _resume_gc(self) -> None:
        if self._gc_paused:
            self._gc_paused = False
            gc.enable()

    def _sync(self) -> bool:
        deadline = time.monotonic() + self.config.sync_timeout
        while not self._stop.is_set():
            # the trees are assembled once, when every first list is in
            self.backend.apply(self.queue.drain(), assemble=False)
            if all(r.synced.is_set() for r in self.reflectors):
                self.backend.apply(self.queue.drain())
                self.ready = True
                return True
            if time.monotonic() > deadline:
                return False
            self.queue.wait(0.1)
        return False

    def _loop(self) -> None:
        cfg = self.config
        while not self._stop.is_set():
            self._heartbeat = time.monotonic()
            deltas = self.queue.drain()
            if deltas:
                self.backend.apply(deltas)
            self.backend.settle()  # binds finished on the wire (rollbacks of failed gangs)
            if self.deleter.pending and self.leading():
                self.deleter.flush()
            leading = self.leading()
            if not leading:
                self._resume_gc()  # waiting for the lease
            if leading and self.scheduler is None:
                self._lead()
                continue
            if not leading and self.scheduler is not None:
                self._step_down()
            wait = cfg.max_wait
            if self.scheduler is not None:
                self._cycle(self.scheduler)
                wake = self.scheduler.next_wakeup()
                if wake is not None:
                    wait = min(wait, max(0.0, wake - self.clock.now()))
            if time.monotonic() >= self._next_discovery:
                self._rediscover()
            due = self.deleter.next_due()
            if due is not None:
                wait = min(wait, max(0.0, due - time.monotonic()))
            if wait > 0:
                self.queue.wait(wait)

    def _lead(self) -> None:
        """Just became leader: catch up with the API, then build a scheduler."""
        # What a previous leader bound must be in the cache: every resource is listed
        # afresh, unless its last list began after the lease was ours (a replica that
        # won the lease before its first lists).
        acquired = self.leader.acquired_at
        stale = [r for r in self.reflectors if acquired is None or r.listed_at is None
                 or r.listed_at < acquired]
        log.info("leading: relisting before scheduling", extra={
            "identity": self.identity, "relisted": len(stale),
            "fresh": len(self.reflectors) - len(stale)})
        done = [r.relist() for r in stale]
        deadline = time.monotonic() + 30
        for ev in done:
            while not ev.is_set() and not self._stop.is_set() and time.monotonic() < deadline:
                ev.wait(0.1)
        if self._stop.is_set():
            return
        self.backend.apply(self.queue.drain())
        if not self.leading():
            return
        start = time.perf_counter()
        self.backend.unsubscribe_all()
        self.scheduler = Scheduler(self.backend, self.clock, self._scheduler_config(),
                                   self.policy)
        self.tracker = StatusTracker(self.writer, self._podgroup, self.view.pods.get,
                                     raw_pod=self.view.raw_pods.get,
                                     members=self._tree_groups)
        self.backend.check_nodes()  # pods on nodes that failed while no one was leading
        # the caches, the cluster state and the units live as long as the leadership:
        # out of the collector's passes, which otherwise rescan them all every few
        # thousand allocations (1.4 s of 4.8 s binding 10,000 pods, benchmarks/serve_load.py).
        # Frozen objects are still freed by reference counting; only a reference cycle
        # among what exists now would stay once unused, so the cost is bounded by this
        # moment's state (what is created later is collected as usual)
        gc.collect()
        gc.freeze()
        self._resume_gc()
        units = self.scheduler.units.values()
        log.info("scheduler built from the API state", extra={
            "units": len(units), "running": sum(1 for u in units if u.running),
            "seconds": round(time.perf_counter() - start, 3)})

    def _scheduler_config(self) -> SchedulerConfig:
        """Topology levels: ``--topology``, else what the objects define (a Kueue
        Topology, HyperNode tiers), else guessed by the scheduler from the nodes."""
        cfg = self.config.scheduler
        levels = self.config.topology or self.view.plan_levels
        if levels and cfg.levels is None:
            cfg = dataclasses.replace(cfg, levels=list(levels))
        return cfg

    def _step_down(self) -> None:
        log.warning("lost leadership: stopped scheduling", extra={"identity": self.identity})
        self.backend.unsubscribe_all()
        self.scheduler = None
        self.tracker = None

    def _cycle(self, sched: Scheduler) -> CycleReport:
        start = time.perf_counter()
        report = sched.run_cycle()
        self.cycles += 1
        m = self.metrics
        seconds = time.perf_counter() - start
        m.cycle.observe(seconds)
        for s in report.decision_seconds:
            m.decision.observe(s)
        per_attempt = (sum(report.decision_seconds) / len(report.decision_seconds)
                       if report.decision_seconds else seconds)
        if self.tracker is not None:
            for ev in self.tracker.after_cycle(sched):
                self._decided(sched, ev, per_attempt)
        states: dict[str, int] = {s.value: 0 for s in UnitState}
        pending = 0
        queues = {"active": 0, "backoff": 0, "gated": 0}
        now = self.clock.now()
        for u in sched.units.values():
            states[u.state.value] = states.get(u.state.value, 0) + 1
            pending += u.queued and u.tree is not None
            if u.state == UnitState.waiting:
                queues["gated"] += len(u.set_of) - len(u.bound())
            elif u.queued:
                queue = "backoff" if u.queue.next_try > now else "active"
                queues[queue] += len(u.set_of) - len(u.bound())
        m.pending.set(pending)
        m.k_pending.replace(({"queue": k}, v) for k, v in queues.items())
        m.units.replace(({"state": k}, v) for k, v in states.items())
        m.events_dropped.catch_up(self.writer.stats.dropped)
        m.status_writes.catch_up(self.writer.stats.status_writes)
        m.pod_conditions.catch_up(self.writer.stats.pod_conditions)
        if report.attempted or report.evicted_pods:
            log.debug("cycle", extra={"attempted": report.attempted,
                                      "admitted": report.admitted,
                                      "evicted_pods": report.evicted_pods})
        return report

    def _decided(self, sched: Scheduler, ev: SchedEvent, attempt_seconds: float) -> None:
        """Metrics and one log line for a scheduler event of the last cycle."""
        m = self.metrics
        u = sched.units.get(ev.unit)
        pods = len(u.set_of) if u is not None else 0
        latency = round(max(0.0, ev.time - u.queue.pending_since), 3) if u is not None \
            else None
        fields: dict[str, Any] = {"unit": ev.unit, "outcome": ev.kind, "pods": pods}
        if ev.kind == "Admitted":
            m.attempts.inc(result="scheduled")
            m.attempt("scheduled", attempt_seconds, pods)
            if latency is not None:
                m.k_sli.observe(latency, pods)
            nodes = sorted(set(u.bound().values())) if u is not None else []
            log.info("scheduled %s on %s", ev.unit, ", ".join(nodes[:20]) + (
                f" and {len(nodes) - 20} more" if len(nodes) > 20 else ""), extra={
                **fields, "nodes": ",".join(nodes), "latency_s": latency})
        elif ev.kind == "Unschedulable":
            m.attempts.inc(result="unschedulable")
            m.attempt("unschedulable", attempt_seconds, pods - len(u.bound()) if u else 0)
            log.info("unschedulable %s: %s", ev.unit, ev.message,
                     extra={**fields, "reason": ev.message, "latency_s": latency})
        elif ev.kind == "BindFailed":
            m.attempts.inc(result="error")
            m.attempt("error", attempt_seconds, pods)
            log.warning("binding %s failed: %s", ev.unit, ev.message,
                        extra={**fields, "reason": ev.message})
        elif ev.kind == "Preempted":
            m.k_preemptions.inc()
            m.k_victims.observe(pods)
            log.info("preempted %s: %s", ev.unit, ev.message,
                     extra={**fields, "reason": ev.message})
        elif ev.kind in ("Evicted", "Degraded", "Repaired"):
            log.info("%s %s: %s", ev.kind.lower(), ev.unit, ev.message,
                     extra={**fields, "reason": ev.message})
        else:
            log.debug("%s %s: %s", ev.kind, ev.unit, ev.message,
                      extra={**fields, "reason": ev.message})

    def shutdown(self) -> None:
        """Stop every thread; release the lease unless killed."""
        self._stop.set()
        if not self._killed:
            # binds on the wire finish, and a gang whose bind failed is rolled back,
            # before the lease is released
            if not self.backend.drain(10.0):
                log.warning("binds still unfinished at shutdown", extra={
                    "binding": self.backend.binding})
            self.writer.flush(2.0)
        if self.bind_pool is not None:
            self.bind_pool.close()
        self.writer.stop()
        self.leader.stop(release=not self._killed)
        for r in self.reflectors:
            r.stop(timeout=2.0)
        if self.health is not None:
            with contextlib.suppress(Exception):
                self.health.stop()
        if self._cert_tmp is not None:
            with contextlib.suppress(OSError):
                self._cert_tmp.cleanup()
        self.scheduler = None
        log.info("stopped", extra={"identity": self.identity, "killed": self._killed})


def serve(config: ServeConfig, *, log_level: str = "info") -> int:
    """Run until SIGTERM/SIGINT; returns the exit status."""
    restore = setup_logging(os.environ.get("GANGSCHED_LOG_LEVEL", log_level))
    try:
        server = Server(config)

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info("signal %s: shutting down", signal.Signals(signum).name)
            server.stop()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            return server.run()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    finally:
        restore()
