"""``/healthz``, ``/readyz`` and ``/metrics`` on one small HTTP server.

The Prometheus text exposition format (version 0.0.4) is written here directly (no
``prometheus_client`` dependency): counters, gauges and histograms with labels, ``# HELP``
and ``# TYPE`` lines, escaped label values, cumulative ``_bucket{le=...}`` series with
``+Inf``, ``_sum`` and ``_count``.

Metrics under kube-scheduler's names (same name, type and labels, so its dashboards and
alerts work; ``profile`` is the scheduler name):

* ``scheduler_schedule_attempts_total{result,profile}``: pods whose scheduling attempt
  ended ``scheduled``, ``unschedulable`` or ``error`` (a gang's attempt counts each pod);
* ``scheduler_scheduling_attempt_duration_seconds{result,profile}``: the attempt's time;
* ``scheduler_pending_pods{queue}``: pending pods by queue (``active``: due now,
  ``backoff``: waiting for a retry, ``gated``: their gang is not ready to try);
* ``scheduler_pod_scheduling_sli_duration_seconds``: from a gang entering the queue to
  its admission;
* ``scheduler_preemption_victims`` (pods deleted by a preemption) and
  ``scheduler_preemption_attempts_total``.

gangsched's own metrics (all prefixed ``gangsched_``):

* ``schedule_attempts_total{result}``: unit placement attempts by result
  (``scheduled``, ``unschedulable``, ``error``);
* ``scheduling_decision_duration_seconds``: wall time of one placement decision;
* ``pending_units``: units waiting in the queue; ``units{state}``: units by state;
* ``binds_total``, ``bind_errors_total{reason}``, ``evictions_total``;
* ``cycle_duration_seconds``, ``leader`` (1 when leading), ``cache_synced``,
  ``watch_errors_total{resource}``, ``events_dropped_total``,
  ``status_writes_total``, ``api_deletes_pending``.
"""

from __future__ import annotations

import contextlib
import math
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DEFAULT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0)

Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels, extra: Labels = ()) -> str:
    items = labels + extra
    if not items:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in items) + "}"


def _number(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(float(v))


class _Metric:
    type = "untyped"

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        self.name = name
        self.help = help
        self.labelnames = tuple(labelnames)
        self._lock = threading.Lock()

    def _key(self, labels: dict[str, str]) -> Labels:
        if set(labels) != set(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {sorted(labels)}")
        return tuple((k, str(labels[k])) for k in self.labelnames)

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {self.help.replace(chr(92), chr(92) * 2)}",
                f"# TYPE {self.name} {self.type}"]

    def samples(self) -> list[str]:
        raise NotImplementedError


class Counter(_Metric):
    type = "counter"

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        super().__init__(name, help, labelnames)
        self._values: dict[Labels, float] = {} if labelnames else {(): 0.0}

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        return self._values.get(self._key(labels), 0.0)

    def catch_up(self, total: float, **labels: str) -> None:
        """Raise the counter to ``total`` (a count kept elsewhere); never lowers it."""
        key = self._key(labels)
        with self._lock:
            self._values[key] = max(self._values.get(key, 0.0), float(total))

    def samples(self) -> list[str]:
        with self._lock:
            items = sorted(self._values.items())
        return [f"{self.name}{_labels(k)} {_number(v)}" for k, v in items]


class Gauge(_Metric):
    type = "gauge"

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        super().__init__(name, help, labelnames)
        self._values: dict[Labels, float] = {} if labelnames else {(): 0.0}
        self._fn: Callable[[], float] | None = None

    def set(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = float(value)

    def set_function(self, fn: Callable[[], float]) -> None:
        """Read the value from ``fn`` at scrape time (unlabelled gauges)."""
        self._fn = fn

    def replace(self, values: Iterable[tuple[dict[str, str], float]]) -> None:
        """Set every labelled series at once (series not given disappear)."""
        new = {self._key(labels): float(v) for labels, v in values}
        with self._lock:
            self._values = new

    def value(self, **labels: str) -> float:
        if self._fn is not None and not labels:
            return float(self._fn())
        return self._values.get(self._key(labels), 0.0)

    def samples(self) -> list[str]:
        if self._fn is not None:
            try:
                return [f"{self.name} {_number(float(self._fn()))}"]
            except Exception:
                return [f"{self.name} NaN"]
        with self._lock:
            items = sorted(self._values.items())
        return [f"{self.name}{_labels(k)} {_number(v)}" for k, v in items]


class Histogram(_Metric):
    type = "histogram"

    def __init__(self, name: str, help: str, buckets: Sequence[float] = DEFAULT_BUCKETS,
                 labelnames: Sequence[str] = ()) -> None:
        super().__init__(name, help, labelnames)
        self.buckets = tuple(sorted(buckets))
        # labels -> (bucket counts, sum, count)
        self._series: dict[Labels, tuple[list[int], float, int]] = {} if labelnames else {
            (): ([0] * len(self.buckets), 0.0, 0)}

    def observe(self, value: float, amount: int = 1, **labels: str) -> None:
        """Record ``value`` (``amount`` times: the attempt of a gang of pods)."""
        key = self._key(labels)
        with self._lock:
            counts, total, n = self._series.get(key) or ([0] * len(self.buckets), 0.0, 0)
            for i, b in enumerate(self.buckets):
                if value <= b:
                    counts[i] += amount
                    break
            self._series[key] = (counts, total + value * amount, n + amount)

    def count_of(self, **labels: str) -> int:
        series = self._series.get(self._key(labels))
        return series[2] if series else 0

    @property
    def count(self) -> int:
        return sum(n for _, _, n in self._series.values())

    @property
    def total(self) -> float:
        """The sum of every observed value, over all series."""
        return sum(t for _, t, _ in self._series.values())

    def samples(self) -> list[str]:
        with self._lock:
            items = sorted((k, (list(c), t, n)) for k, (c, t, n) in self._series.items())
        out = []
        for key, (counts, total, n) in items:
            running = 0
            for b, c in zip(self.buckets, counts, strict=True):
                running += c
                out.append(f"{self.name}_bucket{_labels(key, (('le', _number(b)),))} "
                           f"{running}")
            out.append(f"{self.name}_bucket{_labels(key, (('le', '+Inf'),))} {n}")
            out.append(f"{self.name}_sum{_labels(key)} {_number(total)}")
            out.append(f"{self.name}_count{_labels(key)} {n}")
        return out


class Registry:
    def __init__(self) -> None:
        self._metrics: list[_Metric] = []

    def register(self, metric: _Metric) -> Any:
        if any(m.name == metric.name for m in self._metrics):
            raise ValueError(f"metric {metric.name} registered twice")
        self._metrics.append(metric)
        return metric

    def render(self) -> str:
        lines: list[str] = []
        for m in self._metrics:
            lines.extend(m.header())
            lines.extend(m.samples())
        return "\n".join(lines) + "\n"


class Metrics:
    """The scheduler's metrics."""

    def __init__(self, profile: str = "gangsched") -> None:
        r = self.registry = Registry()
        self.profile = profile
        self.k_attempts: Counter = r.register(Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a "
            "pod could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"]))
        self.k_attempt_duration: Histogram = r.register(Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            tuple(0.001 * 2 ** i for i in range(15)), ["result", "profile"]))
        self.k_pending: Gauge = r.register(Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'gated' is the number "
            "of pods whose gang is not ready to be tried.", ["queue"]))
        self.k_sli: Histogram = r.register(Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue (for a gang: the gang) until it is bound.",
            tuple(0.01 * 2 ** i for i in range(20))))
        self.k_victims: Histogram = r.register(Histogram(
            "scheduler_preemption_victims", "Number of selected preemption victims",
            (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)))
        self.k_preemptions: Counter = r.register(Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now"))
        self.attempts: Counter = r.register(Counter(
            "gangsched_schedule_attempts_total",
            "Scheduling attempts of gang units, by result.", ["result"]))
        self.decision: Histogram = r.register(Histogram(
            "gangsched_scheduling_decision_duration_seconds",
            "Wall time of one placement decision (engine and preemption search)."))
        self.cycle: Histogram = r.register(Histogram(
            "gangsched_cycle_duration_seconds",
            "Wall time of one scheduling cycle, binding included.",
            (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30)))
        self.pending: Gauge = r.register(Gauge(
            "gangsched_pending_units", "Gang units waiting in the queue."))
        self.units: Gauge = r.register(Gauge(
            "gangsched_units", "Gang units by state.", ["state"]))
        self.binds: Counter = r.register(Counter(
            "gangsched_binds_total", "Pods bound through pods/binding."))
        self.bind_errors: Counter = r.register(Counter(
            "gangsched_bind_errors_total", "Binds that failed, by reason.", ["reason"]))
        self.evictions: Counter = r.register(Counter(
            "gangsched_evictions_total", "Pods deleted (preemption, repair, rollback)."))
        self.leader: Gauge = r.register(Gauge(
            "gangsched_leader", "1 when this replica holds the lease."))
        self.synced: Gauge = r.register(Gauge(
            "gangsched_cache_synced", "1 once every watch cache has listed."))
        self.watch_errors: Counter = r.register(Counter(
            "gangsched_watch_errors_total", "List or watch failures, by resource.",
            ["resource"]))
        self.events_dropped: Counter = r.register(Counter(
            "gangsched_events_dropped_total",
            "Events not written because the writer's queue was full."))
        self.status_writes: Counter = r.register(Counter(
            "gangsched_status_writes_total", "PodGroup status updates written."))
        self.deletes_pending: Gauge = r.register(Gauge(
            "gangsched_api_deletes_pending", "Pod deletes waiting for a retry."))
        self.pod_conditions: Counter = r.register(Counter(
            "gangsched_pod_unschedulable_conditions_total",
            "PodScheduled=False/Unschedulable conditions written on pods."))
        self.node_evictions: Counter = r.register(Counter(
            "gangsched_node_failure_evictions_total",
            "Bound pods deleted because their node was deleted, NotReady or tainted "
            "NoExecute, by cause.", ["cause"]))

    def attempt(self, result: str, seconds: float, pods: int) -> None:
        """One gang's scheduling attempt of ``pods`` pods, in kube-scheduler's metrics."""
        if pods <= 0:
            return
        self.k_attempts.inc(pods, result=result, profile=self.profile)
        self.k_attempt_duration.observe(seconds, pods, result=result, profile=self.profile)


Page = Callable[[str], tuple[int, bytes, str]]  # query string -> (status, body, type)
Auth = Callable[[str | None, str], tuple[int, str] | None]  # (Authorization, path)


class HealthServer:
    """Serves ``/healthz``, ``/readyz`` and ``/metrics`` (and any ``pages``, e.g. the
    dashboard) on a daemon thread; over TLS when given an ``ssl_context``, checking each
    request with ``auth`` when given one (see :mod:`gangsched.k8s.secure`)."""

    def __init__(self, metrics: Metrics, *, host: str = "127.0.0.1", port: int = 10259,
                 healthy: Callable[[], tuple[bool, str]] = lambda: (True, "ok"),
                 ready: Callable[[], tuple[bool, str]] = lambda: (True, "ok"),
                 ssl_context: ssl.SSLContext | None = None, auth: Auth | None = None,
                 pages: dict[str, Page] | None = None) -> None:
        self.metrics = metrics
        self.healthy = healthy
        self.ready = ready
        self.auth = auth
        self.pages = dict(pages or {})
        self.scheme = "https" if ssl_context is not None else "http"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "gangsched"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                path = path.rstrip("/") or "/"
                if outer.auth is not None:
                    denied = outer.auth(self.headers.get("Authorization"), path)
                    if denied is not None:
                        self._reply(denied[0], denied[1] + "\n")
                        return
                page = outer.pages.get(path)
                if page is not None:
                    code, body, ctype = page(query)
                    self._send(code, body, ctype)
                elif path == "/metrics":
                    self._reply(200, outer.metrics.registry.render(), CONTENT_TYPE)
                elif path in ("/healthz", "/livez"):
                    ok, why = outer.healthy()
                    self._reply(200 if ok else 500, why + "\n")
                elif path == "/readyz":
                    ok, why = outer.ready()
                    self._reply(200 if ok else 503, why + "\n")
                else:
                    self._reply(404, "not found\n")

            def _reply(self, code: int, text: str,
                       ctype: str = "text/plain; charset=utf-8") -> None:
                self._send(code, text.encode(), ctype)

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        if ":" in host.strip("[]"):
            Server.address_family = socket.AF_INET6
        self._httpd = Server((host.strip("[]"), port), Handler)
        if ssl_context is not None:
            self._httpd.socket = ssl_context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> HealthServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.2}, name="health-server",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(2)
