"""On the real kube-apiserver: ``kubectl apply`` of every ``examples/workload-*.yaml``
succeeds (the examples are what the real server accepts), and serve's signals under its
least-privilege token: ``PodScheduled=False/Unschedulable`` on the pods of a gang that
cannot be placed, ``PodGroupScheduled`` on Workload API PodGroups (through their status
subresource), and the secure port authenticating a bearer token by TokenReview and
authorizing it by SubjectAccessReview."""

from __future__ import annotations

import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import yaml
from realkube_helpers import (
    RACK,
    RealKube,
    gang_states,
    rack_nodes,
    serve_config,
    start_replica,
    wait_for,
)

from gangsched.k8s.api import Kind

ROOT = Path(__file__).resolve().parents[2]
PODGROUPS = Kind("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup")
WAIT = 120


def kubectl(cluster: RealKube, *args: str, context: str = "admin"
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(cluster.bin_dir / "kubectl"), "--kubeconfig",
                           str(cluster.kubeconfig), "--context", context, *args],
                          capture_output=True, text=True, timeout=120, check=False,
                          env=cluster.env)


def test_kubectl_applies_every_workload_example(cluster: RealKube) -> None:
    for example in sorted((ROOT / "examples").glob("workload-*.yaml")):
        namespaces = {d["metadata"].get("namespace") for d in yaml.safe_load_all(
            example.read_text()) if d and "metadata" in d} - {None}
        for ns in namespaces:
            cluster.ensure_namespace(str(ns))
        done = kubectl(cluster, "apply", "-f", str(example))
        assert done.returncode == 0, f"{example.name}: {done.stderr}"
        for ns in namespaces:
            cluster.release_podgroups(str(ns))


def _gang(name: str, size: int, cpu: str) -> list[dict[str, object]]:
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": size}},
                      "schedulingConstraints": {"topology": [{"key": RACK}]}}}
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{name}-{i}", "namespace": "default"},
             "spec": {"schedulerName": "gangsched",
                      "schedulingGroup": {"podGroupName": name},
                      "containers": [{"name": "c", "image": "busybox", "resources": {
                          "requests": {"cpu": cpu}}}]}} for i in range(size)]
    return [group, *pods]


def _condition(obj: dict[str, object], type_: str) -> dict[str, object] | None:
    status = obj.get("status") or {}
    assert isinstance(status, dict)
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def test_signals_on_the_real_server(cluster: RealKube) -> None:
    cluster.create_all(rack_nodes(racks=2, per_rack=2, cpu="2"))  # 4 CPU per rack
    cluster.create_all(_gang("fits", 4, "1"))
    cluster.create_all(_gang("too-big", 6, "1"))
    replica = start_replica(serve_config(cluster.kubeconfig))
    try:
        wait_for(lambda: gang_states(cluster.pods()).get("default/fits") == (4, 4), WAIT,
                 what="the gang that fits bound")
        api = cluster.api()

        def scheduled(name: str, status: str) -> bool:
            cond = _condition(api.get(PODGROUPS, "default", name), "PodGroupScheduled")
            return cond is not None and cond.get("status") == status

        wait_for(lambda: scheduled("fits", "True"), WAIT, what="PodGroupScheduled=True")
        wait_for(lambda: scheduled("too-big", "False"), WAIT, what="PodGroupScheduled=False")

        def unschedulable() -> bool:
            pods = [p for p in cluster.pods() if p["metadata"]["name"].startswith("too-big")]
            return len(pods) == 6 and all(
                (c := _condition(p, "PodScheduled")) is not None
                and c.get("status") == "False" and c.get("reason") == "Unschedulable"
                for p in pods)

        wait_for(unschedulable, WAIT, what="PodScheduled=False/Unschedulable on 6 pods")
        pod = next(p for p in cluster.pods() if p["metadata"]["name"] == "too-big-0")
        cond = _condition(pod, "PodScheduled")
        assert cond is not None and "rack" in str(cond.get("message"))
        assert gang_states(cluster.pods())["default/too-big"] == (0, 6)
    finally:
        replica.stop()
    assert replica.server.writer.stats.errors == 0  # no write refused by RBAC


def _token(cluster: RealKube, context: str) -> str:
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    user = next(c["context"]["user"] for c in cfg["contexts"] if c["name"] == context)
    return str(next(u["user"]["token"] for u in cfg["users"] if u["name"] == user))


def _get(url: str, token: str | None) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30, context=ctx) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def test_secure_port_delegates_authentication_and_authorization(cluster: RealKube) -> None:
    cluster.create_all(rack_nodes(racks=1, per_rack=1))
    replica = start_replica(serve_config(cluster.kubeconfig, authenticate=True))
    try:
        wait_for(lambda: replica.server.ready, WAIT, what="serve synced")
        health = replica.server.health
        assert health is not None and health.scheme == "https"
        base = f"https://127.0.0.1:{health.port}"
        assert _get(base + "/healthz", None) == 200  # always allowed
        assert _get(base + "/metrics", None) == 401
        assert _get(base + "/metrics", "not-a-token") == 401
        # the admin (system:masters) may get /metrics; gangsched's own account may not
        assert _get(base + "/metrics", _token(cluster, "admin")) == 200
        assert _get(base + "/metrics", _token(cluster, "gangsched")) == 403
    finally:
        replica.stop()
