"""What ``gangsched serve`` tells the cluster, end to end on the test API server: the
Workload API example (v1alpha3, one storage with v1beta1) scheduled whole with
``PodGroupScheduled`` on every group, ``PodScheduled=False/Unschedulable`` on the pods of a
gang that cannot be placed (what autoscalers read), kube-scheduler's metric names, one log
line per decision, and nodes: cordoned or NotReady ones get no new pods, a NoExecute
taint, a NotReady or deleted node has our pods deleted and their gangs repaired."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import NEEDS_CLIENT
from k8s_helpers import (
    Controller,
    bound_count,
    create_all,
    fast_config,
    gang,
    gang_states,
    node,
    pods_of,
    rack_nodes,
    start_replica,
    wait_for,
)

from gangsched.testing.apiserver import TestAPIServer

pytest.importorskip("kubernetes", reason=NEEDS_CLIENT)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BLOCK = "gangsched.io/block"
GRACK = "gangsched.io/rack"
WAIT = 60  # generous bounds: conditions, not timing budgets


def _gpu_nodes() -> list[dict[str, Any]]:
    out = []
    for r in range(2):
        for h in range(2):
            n = node(f"g-{r}-{h}", "64", {GRACK: f"rack-{r}", BLOCK: "block-0"})
            n["status"]["allocatable"]["nvidia.com/gpu"] = "8"
            n["status"]["allocatable"]["memory"] = "512Gi"
            out.append(n)
    return out


def _example(name: str) -> list[dict[str, Any]]:
    out = []
    for d in yaml.safe_load_all((EXAMPLES / name).read_text()):
        if d and d.get("kind", "").endswith("List"):
            out.extend({"apiVersion": "v1", "kind": d["kind"][:-4], **i} for i in d["items"])
        elif d:
            out.append(d)
    return out


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if c.get("type") == type_), None)


def test_workload_api_v1alpha3_example_is_bound_whole_with_status(
        server: TestAPIServer, kubeconfig: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = server.store
    create_all(store, _gpu_nodes())
    create_all(store, _example("workload-composite.yaml"))
    caplog.set_level(logging.INFO, logger="gangsched")
    replica = start_replica(fast_config(kubeconfig, topology=None))
    try:
        wait_for(lambda: all(p["spec"].get("nodeName") for p in store.list("pods",
                                                                           "inference")),
                 WAIT, what="every pod of the composite bound")
        names = ("llm-serving-0-prefill", "llm-serving-0-decode", "llm-serving-0-frontend")
        # the same objects read in both versions: one storage
        for version in ("v1beta1", "v1alpha3"):
            got = {o["metadata"]["name"] for o in store.list(
                f"scheduling.k8s.io/{version}/podgroups", "inference")}
            assert got == set(names)

        def scheduled(kind: str, name: str) -> bool:
            obj = store.get(kind, name, "inference")
            cond = _condition(obj, "PodGroupScheduled")
            return cond is not None and cond["status"] == "True"

        wait_for(lambda: scheduled("scheduling.k8s.io/v1alpha3/compositepodgroups",
                                   "llm-serving-0")
                 and all(scheduled("scheduling.k8s.io/v1beta1/podgroups", n) for n in names),
                 WAIT, what="PodGroupScheduled=True on the composite and its PodGroups")
        racks = {}
        nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in store.list("nodes")}
        for p in store.list("pods", "inference"):
            group = p["spec"]["schedulingGroup"]["podGroupName"]
            racks.setdefault(group, set()).add(nodes[p["spec"]["nodeName"]][GRACK])
        assert all(len(r) == 1 for g, r in racks.items() if "frontend" not in g), racks
    finally:
        replica.stop()
    lines = [r for r in caplog.records if getattr(r, "outcome", None) == "Admitted"]
    assert lines and lines[0].unit == "inference/llm-serving-0"  # type: ignore[attr-defined]
    assert lines[0].nodes and lines[0].latency_s is not None  # type: ignore[attr-defined]


def test_unplaceable_gang_pods_say_unschedulable(
        server: TestAPIServer, kubeconfig: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=2, per_rack=2, cpu="2"))
    create_all(store, gang("too-big", 6, "1"))  # 6 CPUs in one rack of 4
    caplog.set_level(logging.INFO, logger="gangsched")
    replica = start_replica(fast_config(kubeconfig))
    try:
        def all_unschedulable() -> bool:
            pods = pods_of(store, "too-big")
            return len(pods) == 6 and all(
                (c := _condition(p, "PodScheduled")) is not None and c["status"] == "False"
                and c["reason"] == "Unschedulable" for p in pods)

        wait_for(all_unschedulable, WAIT, what="PodScheduled=False on all 6 pods")
        cond = _condition(pods_of(store, "too-big")[0], "PodScheduled")
        assert cond is not None and "gang default/too-big" in cond["message"]
        assert "rack" in cond["message"]
        assert bound_count(store, "too-big")[0] == 0
        pg = store.get("podgroups.scheduling.volcano.sh", "too-big", "default")
        wait_for(lambda: (store.get("podgroups.scheduling.volcano.sh", "too-big", "default")
                          .get("status") or {}).get("phase") == "Pending", WAIT,
                 what="PodGroup phase Pending")
        pg = store.get("podgroups.scheduling.volcano.sh", "too-big", "default")
        assert _condition(pg, "Unschedulable") is not None
        text = replica.server.metrics.registry.render()
        assert 'scheduler_schedule_attempts_total{result="unschedulable",profile="gangsched"}' \
            in text
        assert 'scheduler_pending_pods{queue="backoff"}' in text or \
            'scheduler_pending_pods{queue="active"}' in text
        assert "scheduler_scheduling_attempt_duration_seconds_bucket{result=" in text
    finally:
        replica.stop()
    lines = [r for r in caplog.records if getattr(r, "outcome", None) == "Unschedulable"]
    assert lines and "rack" in lines[0].reason  # type: ignore[attr-defined]


def test_pods_naming_a_missing_podgroup_are_warned_about(
        server: TestAPIServer, kubeconfig: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=1, per_rack=2))
    orphan = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "orphan-0", "namespace": "default"},
              "spec": {"schedulerName": "gangsched",
                       "schedulingGroup": {"podGroupName": "nowhere"},
                       "containers": [{"name": "c", "image": "busybox"}]}}
    create_all(store, [orphan])
    caplog.set_level(logging.INFO, logger="gangsched")
    replica = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: any("nowhere" in r.getMessage() and r.levelno == logging.WARNING
                             for r in caplog.records), WAIT, what="a warning")
    finally:
        replica.stop()
    assert not store.get("pods", "orphan-0", "default")["spec"].get("nodeName")


def _set_node(store: Any, name: str, change: Any) -> None:
    obj = store.get("nodes", name)
    change(obj)
    store.update(obj)


def test_cordoned_and_not_ready_nodes_get_no_pods(server: TestAPIServer,
                                                  kubeconfig: Path) -> None:
    store = server.store
    nodes = rack_nodes(racks=1, per_rack=3, cpu="2")
    nodes[0]["spec"]["unschedulable"] = True
    nodes[1]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    create_all(store, nodes)
    create_all(store, gang("small", 2, "500m"))
    replica = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: bound_count(store, "small")[0] == 2, WAIT, what="2 pods bound")
        assert {p["spec"]["nodeName"] for p in pods_of(store, "small")} == {"n-0-2"}
    finally:
        replica.stop()


@pytest.mark.parametrize("failure", ["deleted", "not_ready", "no_execute"])
def test_a_failed_node_starts_repair_of_the_gangs_on_it(
        server: TestAPIServer, kubeconfig: Path, failure: str) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=1, per_rack=3, cpu="2"))
    objects = gang("job", 2, "1500m")  # one pod per node
    create_all(store, objects)
    controller = Controller(store)
    controller.add(objects)
    controller.start()
    replica = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: bound_count(store, "job")[0] == 2, WAIT, what="job bound")
        victim = pods_of(store, "job")[0]["spec"]["nodeName"]
        if failure == "deleted":
            store.delete("nodes", victim)
        elif failure == "not_ready":
            _set_node(store, victim, lambda n: n["status"].update(
                conditions=[{"type": "Ready", "status": "Unknown"}]))
        else:
            _set_node(store, victim, lambda n: n["spec"].update(taints=[
                {"key": "example.com/broken", "effect": "NoExecute"}]))

        def moved() -> bool:
            pods = pods_of(store, "job")
            where = [p["spec"].get("nodeName") for p in pods]
            return len(pods) == 2 and all(where) and victim not in where

        wait_for(moved, WAIT, what=f"the gang bound again away from {victim}")
        assert gang_states(store)["job"] == (2, 2)
        assert replica.server.metrics.node_evictions.value(cause=failure) >= 1
    finally:
        replica.stop()
        controller.stop()


def test_a_noexecute_taint_tolerated_keeps_the_pod(server: TestAPIServer,
                                                   kubeconfig: Path) -> None:
    store = server.store
    create_all(store, rack_nodes(racks=1, per_rack=2, cpu="2"))
    objects = gang("tolerant", 1, "500m")
    for o in objects:
        if o["kind"] == "Pod":
            o["spec"]["tolerations"] = [{"key": "example.com/maintenance",
                                         "operator": "Exists", "effect": "NoExecute"}]
    create_all(store, copy.deepcopy(objects))
    replica = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: bound_count(store, "tolerant")[0] == 1, WAIT, what="bound")
        uid = pods_of(store, "tolerant")[0]["metadata"]["uid"]
        where = pods_of(store, "tolerant")[0]["spec"]["nodeName"]
        _set_node(store, where, lambda n: n["spec"].update(taints=[
            {"key": "example.com/maintenance", "effect": "NoExecute"}]))
        wait_for(lambda: replica.server.view.nodes[where].taints != (), WAIT,
                 what="the taint seen")
        replica.server.queue.wake()
        assert replica.server.backend.check_nodes([where]) == 0
        assert pods_of(store, "tolerant")[0]["metadata"]["uid"] == uid
    finally:
        replica.stop()


def test_rbac_grants_exactly_what_serve_calls() -> None:
    """Every kind the front-ends read has list and watch in deploy/rbac.yaml (plurals
    from the CRDs in deploy/crds or the built-in resources), and the writes added for
    the signals are there."""
    from gangsched.frontends import KINDS

    root = Path(__file__).resolve().parents[2] / "deploy"
    docs = [d for d in yaml.safe_load_all((root / "rbac.yaml").read_text()) if d]
    [role] = [d for d in docs if d["kind"] == "ClusterRole"]
    allowed: set[tuple[str, str, str]] = set()
    for rule in role["rules"]:
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                for v in rule["verbs"]:
                    allowed.add((g, r, v))
    plurals = {("scheduling.k8s.io", "PriorityClass"): "priorityclasses",
               ("scheduling.k8s.io", "Workload"): "workloads",
               ("scheduling.k8s.io", "PodGroup"): "podgroups",
               ("scheduling.k8s.io", "CompositePodGroup"): "compositepodgroups",
               ("batch", "Job"): "jobs", ("", "Node"): "nodes", ("", "Pod"): "pods"}
    for crd in (root / "crds").glob("*.yaml"):
        spec = yaml.safe_load(crd.read_text())["spec"]
        plurals[(spec["group"], spec["names"]["kind"])] = spec["names"]["plural"]
    for entry in KINDS.entries:
        for api_version in entry.api_versions or ():
            group = api_version.rpartition("/")[0]
            plural = plurals.get((group, entry.kind))
            assert plural is not None, f"no CRD in deploy/crds for {api_version} {entry.kind}"
            for verb in ("list", "watch"):
                assert (group, plural, verb) in allowed, (group, plural, verb)
    for need in [("", "pods/status", "patch"), ("", "pods/binding", "create"),
                 ("scheduling.k8s.io", "podgroups/status", "patch"),
                 ("scheduling.k8s.io", "compositepodgroups/status", "patch"),
                 ("authentication.k8s.io", "tokenreviews", "create"),
                 ("authorization.k8s.io", "subjectaccessreviews", "create")]:
        assert need in allowed, need
    assert not any(v in ("*",) or r == "*" for _, r, v in allowed)
    assert ("", "pods", "create") not in allowed and ("", "pods", "update") not in allowed


def test_a_controller_object_alone_is_not_scheduled(server: TestAPIServer,
                                                    kubeconfig: Path) -> None:
    """A ModelServing without its pods (Kthena's controller creates them): serve watches
    it but binds nothing and fails no bind (the pods the front-end derives from it do not
    exist)."""
    store = server.store
    create_all(store, rack_nodes(racks=2, per_rack=2, cpu="8"))
    create_all(store, [d for d in _example("kthena-2p2d.yaml") if d["kind"] == "ModelServing"])
    replica = start_replica(fast_config(kubeconfig))
    try:
        wait_for(lambda: replica.server.ready and replica.server.cycles > 5, WAIT,
                 what="serve synced and cycling")
        assert any(k.kind == "ModelServing" for k in replica.server.kinds)
        assert replica.server.metrics.binds.value() == 0
        assert sum(replica.server.metrics.bind_errors._values.values()) == 0
    finally:
        replica.stop()


def test_a_kueue_pod_group_is_bound_on_its_flavors_nodes(server: TestAPIServer,
                                                         kubeconfig: Path) -> None:
    """With Kueue's queue objects in the cluster, serve follows the pods' LocalQueue to
    the ClusterQueue's flavor and binds them only on the flavor's nodes."""
    store = server.store
    create_all(store, [node(f"n-{i}", "4", {"pool": "gpu" if i >= 2 else "cpu"})
                       for i in range(4)])
    v1 = "kueue.x-k8s.io/v1beta1"
    create_all(store, [
        {"apiVersion": v1, "kind": "ResourceFlavor", "metadata": {"name": "gpu-pool"},
         "spec": {"nodeLabels": {"pool": "gpu"}}},
        {"apiVersion": v1, "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [
             {"coveredResources": ["cpu"], "flavors": [
                 {"name": "gpu-pool", "resources": [{"name": "cpu", "nominalQuota": 8}]}]}]}},
        {"apiVersion": v1, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "ml"},
         "spec": {"clusterQueue": "cq"}}])
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"w-{i}", "namespace": "ml", "labels": {
                 "kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/pod-group-name": "g"},
                 "annotations": {"kueue.x-k8s.io/pod-group-total-count": "3"}},
             "spec": {"schedulerName": "gangsched", "containers": [
                 {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
            for i in range(3)]
    create_all(store, pods)
    replica = start_replica(fast_config(kubeconfig, topology=None))
    try:
        wait_for(lambda: all(p["spec"].get("nodeName") for p in store.list("pods", "ml")),
                 WAIT, what="the pod group bound")
        assert {p["spec"]["nodeName"] for p in store.list("pods", "ml")} <= {"n-2", "n-3"}
    finally:
        replica.stop()
