"""``gangsched serve`` under faults, end to end over loopback: API errors (some after the
write applied), dropped watches, binds that fail mid-gang or fail after applying, and a
leader killed mid-run. Invariants: every gang ends fully bound or fully unbound, no pod
is bound twice, nothing is lost."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import NEEDS_CLIENT
from k8s_helpers import (
    Controller,
    binds_per_uid,
    bound_count,
    chunks,
    create_all,
    fast_config,
    gang,
    gang_states,
    rack_nodes,
    start_replica,
    wait_for,
)

from gangsched.k8s.api import PODS, Kind, KubeError, Obj
from gangsched.testing.apiserver import FaultConfig, TestAPIServer

pytest.importorskip("kubernetes", reason=NEEDS_CLIENT)

WAIT = 300  # seconds: a bound on waiting for a condition, never a performance budget


def _gang_states(store: Any, names: list[str]) -> dict[str, tuple[int, int]]:
    states = gang_states(store)
    return {g: states.get(g, (0, 0)) for g in names}


def _settled(store: Any, names: list[str], full: int) -> bool:
    states = _gang_states(store, names)
    whole = all(b in (0, n) for b, n in states.values())
    return whole and sum(1 for b, n in states.values() if b == n and n) == full


def test_api_errors_and_dropped_watches_while_scheduling_200_gangs(
        server: TestAPIServer, kubeconfig: Path) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=40, per_rack=4, cpu="2"))  # 4 gangs per rack: 160
    names = [f"job-{i:03d}" for i in range(200)]
    objects = {g: gang(g, 4, "500m") for g in names}
    first, rest = names[:100], names[100:]
    controller = Controller(store)  # recreates pods deleted by rollbacks
    for g in first:
        create_all(store, objects[g])
        controller.add(objects[g])
    server.faults.configure(FaultConfig(
        error_rate=0.1, error_scope="all", error_codes=(500, 503, 429), error_after_apply=0.3,
        watch_drop_probability=0.02, watch_drop_mode="abort", seed=7))
    controller.start()
    replica = start_replica(fast_config(kubeconfig))
    try:
        for batch in chunks(rest, 20):
            time.sleep(0.2)
            for g in batch:
                create_all(store, objects[g])
                controller.add(objects[g])
        try:
            wait_for(lambda: _settled(store, names, 160), WAIT, interval=0.3,
                     what="160 gangs bound whole, 40 unbound")
        except AssertionError as err:
            sched = replica.server.scheduler
            units = Counter(u.state.value for u in sched.units.values()) if sched else None
            raise AssertionError(f"{err}: gangs {Counter(_gang_states(store, names).values())}"
                                 f", units {units}, leading {replica.server.leading()}") from None
        time.sleep(0.5)  # nothing moves afterwards
        assert _settled(store, names, 160)

        def without_phase() -> list[str]:
            return [pg["metadata"]["name"] for pg in store.list("podgroups.scheduling.volcano.sh")
                    if not (pg.get("status") or {}).get("phase")]

        # status writes that failed under the faults are retried, and reconciled
        wait_for(lambda: not without_phase(), WAIT, interval=0.5,
                 what="a status.phase on every PodGroup")
        stats = server.faults.snapshot()["stats"]
    finally:
        replica.stop()
        controller.stop()
    assert stats["injected_errors"] > 100, stats
    assert stats["injected_after_apply"] > 10, stats
    assert stats.get("dropped_watches", 0) > 5, stats
    states = _gang_states(store, names)
    assert all(b in (0, n) for b, n in states.values()), states  # all-or-nothing
    assert all(n == 4 for _, n in states.values())  # nothing lost
    assert store.count("podgroups.scheduling.volcano.sh") == 200
    assert all(count == 1 for count in binds_per_uid(store).values())  # never bound twice
    view = replica.server.view
    for p in store.list("pods"):
        key = f"default/{p['metadata']['name']}"
        if key in view.pods:
            assert view.pods[key].node_name == p["spec"].get("nodeName"), key


class _Wrapped:
    """The real client, with ``bind`` intercepted."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)


class FailThirdBind(_Wrapped):
    """The third bind of gang ``victim`` is refused (once)."""

    def __init__(self, api: Any) -> None:
        super().__init__(api)
        self.calls: list[str] = []
        self.failed: str | None = None

    def bind(self, namespace: str, name: str, node: str, uid: str | None) -> None:
        with self.lock:
            if name.startswith("victim-") and self.failed is None:
                self.calls.append(name)
                if len(self.calls) == 3:
                    self.failed = name
                    raise KubeError(422, f"injected: binding {name} refused", reason="Invalid")
        self.api.bind(namespace, name, node, uid)


@pytest.mark.parametrize("workers", [0, 4], ids=["one-at-a-time", "concurrent"])
def test_a_bind_failure_mid_gang_leaves_no_pod_of_the_gang_bound(
        server: TestAPIServer, kubeconfig: Path, workers: int) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=2, per_rack=2, cpu="2"))
    objects = gang("victim", 4, "500m")
    create_all(store, objects)
    from gangsched.k8s.client import connect

    api = FailThirdBind(connect(str(kubeconfig)))
    replica = start_replica(fast_config(kubeconfig, bind_workers=workers), api)
    controller = Controller(store, objects[1:])
    try:
        wait_for(lambda: api.failed is not None, WAIT, what="the injected bind failure")
        # concurrently, the gang's four binds are on the wire together: the three that
        # went through are deleted once the last one finished; one at a time, the two
        # bound before the failure are (the last one is never tried)
        pods = {f"victim-{i}" for i in range(4)}
        bound = pods - {api.failed} if workers else set(api.calls[:2])
        # the pods bound are deleted (their controller would recreate them); none of
        # the gang stays bound
        wait_for(lambda: len(store.list("pods")) == 4 - len(bound), WAIT,
                 what="rollback deletes")
        assert bound_count(store, "victim") == (0, 4 - len(bound))
        deleted = {e.obj.obj["metadata"]["name"] for e in store.history()
                   if e.resource.plural == "pods" and e.type == "DELETED"}
        assert deleted == bound
        assert store.find("pods", api.failed, "default") is not None  # not deleted
        assert replica.server.metrics.bind_errors.value(reason="api_error") == 1
        controller.start()  # the pods come back, and the gang is bound whole
        wait_for(lambda: bound_count(store, "victim") == (4, 4), WAIT, what="gang bound")
    finally:
        controller.stop()
        replica.stop()
    assert all(count == 1 for count in binds_per_uid(store).values())


def test_concurrent_binding_a_gang_whose_one_bind_keeps_failing_is_rolled_back_whole(
        server: TestAPIServer, kubeconfig: Path) -> None:
    """The API server refuses every bind of one pod (500, through its fault hooks) while
    the gang's four binds are on the wire together: the three that went through are
    deleted, no pod of the gang stays bound, and once the faults stop the gang is bound
    whole."""
    store = server.store
    create_all(store, rack_nodes(racks=2, per_rack=2, cpu="2"))
    objects = gang("victim", 4, "500m")
    create_all(store, objects)
    server.faults.configure(FaultConfig(
        error_rate=1.0, error_codes=(500,), error_resources=("pods/binding",),
        error_names=("victim-2",), seed=3))
    replica = start_replica(fast_config(kubeconfig, bind_workers=4))
    try:
        others = {"victim-0", "victim-1", "victim-3"}

        def deleted() -> set[str]:
            return {e.obj.obj["metadata"]["name"] for e in store.history()
                    if e.resource.plural == "pods" and e.type == "DELETED"}

        wait_for(lambda: deleted() == others, WAIT, what="the three bound pods deleted")
        assert bound_count(store, "victim") == (0, 1)  # victim-2 alone, never bound
        assert server.faults.snapshot()["stats"]["injected_errors"] >= \
            replica.server.binder.attempts
        assert replica.server.metrics.bind_errors.value(reason="api_error") >= 1
        assert replica.server.binder.stats.binds == 3
        server.faults.reset()
        Controller(store, objects[1:]).start()  # the deleted pods come back
        wait_for(lambda: bound_count(store, "victim") == (4, 4), WAIT, what="gang bound")
    finally:
        replica.stop()
    assert all(count == 1 for count in binds_per_uid(store).values())
    assert replica.server.backend.binding == 0


class LostBindReply(_Wrapped):
    """The second bind of gang ``ghost`` applies, but the reply is lost and the pod can
    not be read back for a while: the scheduler cannot know it is bound."""

    def __init__(self, api: Any) -> None:
        super().__init__(api)
        self.calls: list[str] = []
        self.ghost: str | None = None
        self.blind_until = 0.0

    def bind(self, namespace: str, name: str, node: str, uid: str | None) -> None:
        with self.lock:
            if name.startswith("ghost-") and self.ghost is None:
                self.calls.append(name)
                if len(self.calls) == 2:
                    self.ghost = name
                    self.blind_until = time.monotonic() + 1.0
                    self.api.bind(namespace, name, node, uid)
                    raise KubeError(None, "injected: connection reset after the write")
            blind = name == self.ghost and time.monotonic() < self.blind_until
        if blind:
            raise KubeError(None, "injected: connection refused")
        self.api.bind(namespace, name, node, uid)

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        if kind == PODS and name == self.ghost and time.monotonic() < self.blind_until:
            raise KubeError(None, "injected: connection refused")
        result: Obj = self.api.get(kind, namespace, name)
        return result


@pytest.mark.parametrize("workers", [0, 4], ids=["one-at-a-time", "concurrent"])
def test_a_bind_that_applied_but_reported_failure_is_rolled_back(
        server: TestAPIServer, kubeconfig: Path, workers: int) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=1, per_rack=2, cpu="2"))
    objects = gang("ghost", 4, "500m")
    create_all(store, objects)
    from gangsched.k8s.client import connect

    api = LostBindReply(connect(str(kubeconfig)))
    replica = start_replica(fast_config(kubeconfig, bind_workers=workers), api)
    try:
        wait_for(lambda: api.ghost is not None, WAIT, what="the lost reply")
        # one at a time: the first pod is rolled back at once, the last two are never
        # tried; concurrently: the other three went through. The ghost, once seen
        # bound, is deleted too.
        left = 0 if workers else 2
        wait_for(lambda: len(store.list("pods")) == left, WAIT, what="rollback of all bound")
        assert bound_count(store, "ghost") == (0, left)
        assert store.find("pods", api.ghost, "default") is None
        assert store.find("pods", api.calls[0], "default") is None
        Controller(store, objects[1:]).start()
        wait_for(lambda: bound_count(store, "ghost") == (4, 4), WAIT, what="gang bound")
    finally:
        replica.stop()
    assert all(count == 1 for count in binds_per_uid(store).values())


def test_killing_the_leader_mid_run_the_standby_takes_over(
        server: TestAPIServer, kubeconfig: Path) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=30, per_rack=4, cpu="2"))  # room for 120 gangs
    names = [f"lw-{i:03d}" for i in range(100)]
    objects = {g: gang(g, 4, "500m") for g in names}
    server.faults.configure(latency_ms=1.0)  # binds take a while: the kill lands mid-gang
    a = start_replica(fast_config(kubeconfig, identity="replica-a"))
    wait_for(lambda: a.server.leading(), WAIT, what="replica-a leading")
    b = start_replica(fast_config(kubeconfig, identity="replica-b"))
    try:
        wait_for(lambda: b.server.ready, WAIT, what="replica-b synced")
        assert not b.server.leading()
        for batch in chunks(names, 10):
            for g in batch:
                create_all(store, objects[g])
            time.sleep(0.05)
        wait_for(lambda: sum(1 for b, _ in gang_states(store).values() if b) >= 30, WAIT,
                 interval=0.01, what="a third of the gangs bound")
        a.kill()  # no lease release, no rollback: as if the process died
        wait_for(lambda: b.server.leading(), WAIT, what="replica-b leading")
        wait_for(lambda: _settled(store, names, 100), WAIT, interval=0.2,
                 what="every gang bound whole")
    finally:
        b.stop()
        a.stop()
    lease = store.get("leases.coordination.k8s.io", "gangsched", "default")
    assert lease["spec"]["leaseTransitions"] >= 1  # the standby took over (no timing bound)
    assert all(count == 1 for count in binds_per_uid(store).values())
    assert sum(binds_per_uid(store).values()) == 400
