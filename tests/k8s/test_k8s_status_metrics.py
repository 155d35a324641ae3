"""PodGroup status, Events, the Prometheus text format and the health server."""

from __future__ import annotations

import urllib.error
import urllib.request

from k8s_fakes import FakeAPI, err, pod_obj

from gangsched.api.types import Pod
from gangsched.k8s.api import EVENTS, PODS, VOLCANO_PODGROUPS
from gangsched.k8s.metrics import Counter, Gauge, HealthServer, Histogram, Metrics, Registry
from gangsched.k8s.status import (
    StatusWriter,
    TokenBucket,
    _EventItem,
    _StatusItem,
    podgroup_status,
)
from gangsched.scheduler.status import UnitState

POD = Pod(name="p", namespace="default", uid="u1")


def test_podgroup_status_like_volcano() -> None:
    running = podgroup_status([(UnitState.admitted, "", 4)], {})
    assert running["phase"] == "Running" and running["running"] == 4
    (cond,) = running["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "Scheduled", "True", "tasks in gang are ready to be scheduled")
    stuck = podgroup_status([(UnitState.pending, "needs 4 pods in one rack", 0)],
                            {"conditions": [cond, {"type": "Other", "status": "True"}]})
    assert stuck["phase"] == "Pending"
    assert [c["type"] for c in stuck["conditions"]] == ["Other", "Unschedulable"]
    assert stuck["conditions"][1]["reason"] == "NotEnoughResources"
    assert stuck["conditions"][1]["message"] == "needs 4 pods in one rack"
    waiting = podgroup_status([(UnitState.waiting, "waiting for pods: has 2 of 4", 0)], {})
    assert waiting["conditions"][0]["reason"] == "NotEnoughPods"
    degraded = podgroup_status([(UnitState.running_degraded, "lost 1 pod", 3)], {})
    assert degraded["phase"] == "Unknown"
    again = podgroup_status([(UnitState.pending, "x", 0)], stuck)
    assert again["conditions"][1]["lastTransitionTime"] == \
        stuck["conditions"][1]["lastTransitionTime"]


def test_events_are_created_then_aggregated() -> None:
    api = FakeAPI()
    t = [0.0]
    w = StatusWriter(api, component="gangsched", instance="me", aggregate_interval=60,
                     clock=lambda: t[0])
    item = _EventItem({"kind": "Pod", "namespace": "default", "name": "p", "uid": "u1"},
                      "Warning", "FailedScheduling", "gang g: does not fit")
    w.write_now(item)
    (ev,) = [o for (k, _), o in api.objects.items() if k == EVENTS.id]
    assert (ev["reason"], ev["type"], ev["count"], ev["source"]) == (
        "FailedScheduling", "Warning", 1, {"component": "gangsched"})
    assert ev["involvedObject"]["uid"] == "u1"
    w.write_now(item)  # within the interval: counted, not written
    assert api.count("patch") == 0
    t[0] = 61
    w.write_now(item)
    assert api.count("patch") == 1
    (ev,) = [o for (k, _), o in api.objects.items() if k == EVENTS.id]
    assert ev["count"] == 3


def test_status_falls_back_when_the_crd_has_no_status_subresource() -> None:
    api = FakeAPI()
    api.put(VOLCANO_PODGROUPS, {"metadata": {"name": "g", "namespace": "default"}})
    w = StatusWriter(api)
    api.fail[("patch", "g")] = [err(404)]
    w.write_now(_StatusItem(VOLCANO_PODGROUPS, "default", "g", {"phase": "Running"}))
    assert [c[0] for c in api.calls if c[0].startswith("patch")] == ["patch/status", "patch"]
    assert api.objects[(VOLCANO_PODGROUPS.id, "default/g")]["status"] == {"phase": "Running"}
    w.write_now(_StatusItem(VOLCANO_PODGROUPS, "default", "g", {"phase": "Pending"}))
    assert [c[0] for c in api.calls if c[0].startswith("patch")][-1] == "patch"


def test_the_writer_thread_only_writes_while_leading() -> None:
    api = FakeAPI()
    api.put(PODS, pod_obj("p"))
    leading = [False]
    w = StatusWriter(api, is_leader=lambda: leading[0]).start()
    try:
        w.pod_event(POD, "Normal", "Scheduled", "x")
        assert w.stats.skipped_not_leader == 1
        leading[0] = True
        w.pod_event(POD, "Normal", "Scheduled", "Successfully assigned default/p to n1")
        assert w.flush(2)
    finally:
        w.stop()
    assert w.stats.events == 1


def test_status_updates_and_events_take_turns() -> None:
    w = StatusWriter(FakeAPI())
    for i in range(3):
        w.status(VOLCANO_PODGROUPS, "default", f"g{i}", {"phase": "Running"})
        w.pod_event(POD, "Normal", "Scheduled", str(i))
    kinds = [type(w._next()).__name__ for _ in range(6)]
    assert kinds == ["_StatusItem", "_EventItem"] * 3 and w.backlog == 0


def test_the_queue_is_bounded() -> None:
    w = StatusWriter(FakeAPI(), max_queue=2)
    for i in range(5):
        w.pod_event(POD, "Normal", "Scheduled", str(i))
    assert (w.backlog, w.stats.dropped) == (2, 3)


def test_token_bucket() -> None:
    t = [0.0]
    b = TokenBucket(qps=10, burst=2, clock=lambda: t[0])
    assert [b.delay(), b.delay()] == [0.0, 0.0]
    assert abs(b.delay() - 0.1) < 1e-9
    t[0] = 10
    assert b.delay() == 0.0


def test_prometheus_text_format() -> None:
    r = Registry()
    c = r.register(Counter("x_total", "Things.", ["result"]))
    c.inc(result="ok")
    c.inc(2, result='we"ird\\')
    g = r.register(Gauge("y", "A level."))
    g.set(3.5)
    h = r.register(Histogram("z_seconds", "Time.", (0.1, 1.0)))
    for v in (0.05, 0.5, 0.5, 5):
        h.observe(v)
    text = r.render()
    assert text.splitlines() == [
        "# HELP x_total Things.", "# TYPE x_total counter",
        'x_total{result="ok"} 1', 'x_total{result="we\\"ird\\\\"} 2',
        "# HELP y A level.", "# TYPE y gauge", "y 3.5",
        "# HELP z_seconds Time.", "# TYPE z_seconds histogram",
        'z_seconds_bucket{le="0.1"} 1', 'z_seconds_bucket{le="1"} 3',
        'z_seconds_bucket{le="+Inf"} 4', "z_seconds_sum 6.05", "z_seconds_count 4"]


def test_health_server_endpoints() -> None:
    m = Metrics()
    m.attempts.inc(result="scheduled")
    ready = [False]
    srv = HealthServer(m, host="127.0.0.1", port=0, ready=lambda: (ready[0], "caches"))
    srv.start()
    base = f"http://127.0.0.1:{srv.port}"
    try:
        def get(path: str) -> tuple[int, str, str]:
            try:
                with urllib.request.urlopen(base + path, timeout=5) as resp:
                    return resp.status, resp.headers["Content-Type"], resp.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.headers["Content-Type"], e.read().decode()

        assert get("/healthz")[0] == 200
        assert get("/readyz")[0] == 503
        ready[0] = True
        assert get("/readyz")[0] == 200
        code, ctype, text = get("/metrics")
        assert code == 200 and ctype.startswith("text/plain; version=0.0.4")
        assert 'gangsched_schedule_attempts_total{result="scheduled"} 1' in text
        assert "# TYPE gangsched_scheduling_decision_duration_seconds histogram" in text
        assert get("/nope")[0] == 404
    finally:
        srv.stop()
