"""``gangsched serve`` end to end, over loopback with the real ``kubernetes`` client
against the test API server: gangs bound all-or-nothing, FailedScheduling with the
gang's reason, PodGroup status, probes and metrics, restart without double binding."""

from __future__ import annotations

import gc
import ssl
import urllib.request
from pathlib import Path

import pytest
from conftest import NEEDS_CLIENT
from k8s_helpers import (
    Replica,
    binds_per_uid,
    bound_count,
    create_all,
    fast_config,
    gang,
    kthena_objects,
    node,
    pods_of,
    rack_nodes,
    start_replica,
    wait_for,
)

from gangsched.testing.apiserver import TestAPIServer

pytest.importorskip("kubernetes", reason=NEEDS_CLIENT)



def _get(url: str, token: str | None = None) -> tuple[int, str]:
    """GET over HTTPS, trusting serve's self-signed certificate."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=5, context=ctx) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_kthena_seed_example_is_bound_whole(server: TestAPIServer, kubeconfig: Path) -> None:
    store = server.store
    create_all(store, [node(f"n{i}", "1") for i in range(2)])
    objects = kthena_objects()
    create_all(store, objects)
    replica = start_replica(fast_config(kubeconfig))
    try:
        health = replica.server.health
        assert health is not None
        base = f"https://127.0.0.1:{health.port}"
        wait_for(lambda: bound_count(store, "sample-0")[0] == 8, 15, what="8 pods bound")
        # minMember 6 of 8 and room for all: the gang and its extras, all bound
        pg = store.get("podgroups.scheduling.volcano.sh", "sample-0", "default")
        wait_for(lambda: (store.get("podgroups.scheduling.volcano.sh", "sample-0", "default")
                          .get("status") or {}).get("phase") == "Running", 5,
                 what="PodGroup Running")
        pg = store.get("podgroups.scheduling.volcano.sh", "sample-0", "default")
        conditions = {c["type"]: c for c in pg["status"]["conditions"]}
        assert conditions["Scheduled"]["status"] == "True"
        assert pg["status"]["running"] == 8
        wait_for(lambda: sum(1 for e in store.list("events") if e["reason"] == "Scheduled")
                 == 8, 5, what="Scheduled events")
        msgs = {e["involvedObject"]["name"]: e["message"] for e in store.list("events")}
        node_of = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in store.list("pods")}
        for name, where in node_of.items():
            assert msgs[name] == f"Successfully assigned default/{name} to {where}"
        assert _get(base + "/readyz")[0] == 200
        assert _get(base + "/healthz") == (200, "ok\n")
        code, text = _get(base + "/metrics")
        assert code == 200
        assert 'gangsched_schedule_attempts_total{result="scheduled"} 1' in text
        assert "gangsched_binds_total 8" in text
        assert "gangsched_leader 1" in text
        assert "gangsched_scheduling_decision_duration_seconds_count 1" in text
    finally:
        replica.stop()
    assert replica.exit_code == [0]
    lease = store.get("leases.coordination.k8s.io", "gangsched", "default")
    assert lease["spec"]["holderIdentity"] == ""  # released on a graceful stop


def test_kthena_gang_below_its_minimum_capacity_stays_unbound(
        server: TestAPIServer, kubeconfig: Path) -> None:
    store = server.store
    create_all(store, [node("small", "500m")])  # 5 pods of 100m; minMember is 6
    create_all(store, kthena_objects())
    replica = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: any(e["reason"] == "FailedScheduling" for e in store.list("events")),
                 10, what="FailedScheduling")
        assert bound_count(store, "sample-0") == (0, 8)
        wait_for(lambda: (store.get("podgroups.scheduling.volcano.sh", "sample-0", "default")
                          .get("status") or {}).get("conditions"), 5, what="PodGroup status")
    finally:
        replica.stop()
    assert bound_count(store, "sample-0") == (0, 8)
    pg = store.get("podgroups.scheduling.volcano.sh", "sample-0", "default")
    cond = pg["status"]["conditions"][-1]
    assert pg["status"]["phase"] == "Pending"
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "Unschedulable", "True", "NotEnoughResources")
    assert "cpu" in cond["message"]


def test_gang_that_does_not_fit_gets_failed_scheduling_with_the_reason(
        server: TestAPIServer, kubeconfig: Path) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=2, per_rack=2, cpu="2"))  # 4 CPU per rack
    create_all(store, gang("fits", 4, "1"))  # 4 CPU in one rack
    create_all(store, gang("toobig", 6, "1"))  # 6 CPU in one rack: never
    replica = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: bound_count(store, "fits") == (4, 4), 10, what="'fits' bound")
        wait_for(lambda: {e["involvedObject"]["name"] for e in store.list("events")
                          if e["reason"] == "FailedScheduling"}
                 >= {f"toobig-{i}" for i in range(6)}, 10, what="FailedScheduling events")
    finally:
        replica.stop()
    assert bound_count(store, "toobig") == (0, 6)
    events = [e for e in store.list("events") if e["reason"] == "FailedScheduling"]
    assert {e["type"] for e in events} == {"Warning"}
    message = events[0]["message"]
    assert message.startswith("gang default/toobig: ")
    # rack-0 is full with "fits"; the best rack holds 4 of the 6 one-CPU pods
    assert "needs 6 pods x 1 cpu (pods) inside one rack; the best rack (rack-1) holds 4" \
        in message, message
    assert {e["source"]["component"] for e in events} == {"gangsched"}


def test_pods_of_other_schedulers_only_take_capacity(server: TestAPIServer,
                                                     kubeconfig: Path) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=1, per_rack=2, cpu="2"))
    other = gang("theirs", 2, "1")
    for obj in other[1:]:
        obj["spec"]["schedulerName"] = "default-scheduler"
    create_all(store, other[1:])
    store.bind("theirs-0", "n-0-0")
    store.bind("theirs-1", "n-0-0")  # n-0-0 is full
    create_all(store, gang("ours", 2, "1"))
    replica = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: bound_count(store, "ours") == (2, 2), 10, what="'ours' bound")
    finally:
        replica.stop()
    nodes = {p["spec"]["nodeName"] for p in pods_of(store, "ours")}
    assert nodes == {"n-0-1"}
    assert store.get("pods", "theirs-1", "default")["spec"]["nodeName"] == "n-0-0"


def test_restarted_scheduler_rebuilds_its_state_and_never_binds_twice(
        server: TestAPIServer, kubeconfig: Path) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=4, per_rack=2, cpu="2"))  # 4 gangs of 4 x 1 CPU
    for i in range(2):
        create_all(store, gang(f"g{i}", 4, "1"))
    first = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: all(bound_count(store, f"g{i}") == (4, 4) for i in range(2)), 10,
                 what="first gangs bound")
    finally:
        first.stop()
    for i in range(2, 5):
        create_all(store, gang(f"g{i}", 4, "1"))  # only two more fit
    second = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: sum(bound_count(store, f"g{i}") == (4, 4) for i in range(5)) == 4,
                 10, what="two more gangs bound")
        wait_for(lambda: second.server.scheduler is not None and all(
            u.state.value in ("admitted", "pending") for u in
            second.server.scheduler.units.values()), 5, what="units settled")
        sched = second.server.scheduler
        assert sched is not None
        states = {u.workload: u.state.value for u in sched.units.values()}
    finally:
        second.stop()
    assert states["default/g0"] == states["default/g1"] == "admitted"  # adopted
    assert sorted(states.values()).count("admitted") == 4
    assert all(n == 1 for n in binds_per_uid(store).values())
    assert len(binds_per_uid(store)) == 16
    for i in range(5):
        assert bound_count(store, f"g{i}")[0] in (0, 4)


def test_the_collector_is_off_while_syncing_and_back_on_for_leader_and_standby(
        server: TestAPIServer, kubeconfig: Path) -> None:
    """serve turns the garbage collector off while its first lists fill the caches; it
    must come back on once the leader has built its scheduler, on a standby once its
    caches are synced, and when serve stops."""
    store = server.store
    create_all(store, rack_nodes(racks=2, per_rack=2, cpu="2"))
    create_all(store, gang("g0", 4, "1"))
    assert gc.isenabled()
    leader = start_replica(fast_config(kubeconfig))
    standby: Replica | None = None
    try:
        wait_for(lambda: bound_count(store, "g0") == (4, 4), 10, what="the gang bound")
        assert leader.server.scheduler is not None and gc.isenabled()
        standby = start_replica(fast_config(kubeconfig))  # turns it off for the process
        wait_for(lambda: standby is not None and standby.server.ready, 10,
                 what="the standby synced")
        wait_for(gc.isenabled, 5, what="the collector back on while the standby waits")
        assert not standby.server.leading() and standby.server.scheduler is None
    finally:
        if standby is not None:
            standby.stop()
        leader.stop()
    assert gc.isenabled()
