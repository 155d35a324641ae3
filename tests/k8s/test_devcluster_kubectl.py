"""The real ``kubectl`` against the dev cluster's API server, without extra flags:
``create namespace`` (a protobuf body), ``apply`` with client-side validation (OpenAPI v2
and v3), ``describe pod``, ``get events -w``, and the Workload API examples scheduled by
``gangsched serve`` (an oversized gang's pods showing ``PodScheduled=False``).

kubectl: the one ``scripts/realkube.sh build`` left in the cache (v1.37), else the
machine's; skipped with a message when there is neither."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import NEEDS_CLIENT
from k8s_helpers import create_all, fast_config, node, start_replica, wait_for

from gangsched.testing.apiserver import TestAPIServer

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60


def _kubectl() -> str | None:
    found = subprocess.run(["bash", str(ROOT / "scripts" / "realkube.sh"), "bin-dir"],
                           capture_output=True, text=True, check=False)
    if found.returncode == 0:
        candidate = Path(found.stdout.strip().splitlines()[-1]) / "kubectl"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("kubectl")


KUBECTL = _kubectl()
pytestmark = pytest.mark.skipif(
    KUBECTL is None, reason="no kubectl: run scripts/realkube.sh build, or install kubectl")


def run(kubeconfig: Path, *args: str, check: bool = True, timeout: float = 60
        ) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n"
                             f"{done.stdout}\n{done.stderr}")
    return done


def test_namespace_apply_describe_and_events(server: TestAPIServer, kubeconfig: Path) -> None:
    out = run(kubeconfig, "create", "namespace", "training").stdout
    assert "namespace/training created" in out
    run(kubeconfig, "create", "namespace", "inference")
    for example in ("workload-gang.yaml", "workload-composite.yaml"):
        run(kubeconfig, "apply", "-f", str(ROOT / "examples" / example))
    store = server.store
    assert store.get("scheduling.k8s.io/v1beta1/podgroups", "llama-pretrain-data-loader-0",
                     "training")["spec"]["schedulingPolicy"] == {"basic": {}}
    # a CompositePodGroup's child written in v1alpha3, read in v1beta1: one storage
    assert store.get("scheduling.k8s.io/v1beta1/podgroups", "llm-serving-0-decode",
                     "inference")["apiVersion"] == "scheduling.k8s.io/v1beta1"
    text = run(kubeconfig, "describe", "pod", "-n", "training",
               "llama-pretrain-worker-0").stdout
    assert "llama-pretrain-worker-0" in text and "PodGroupName" in text
    assert KUBECTL is not None
    watch = subprocess.Popen([KUBECTL, "--kubeconfig", str(kubeconfig), "get", "events",
                              "-w", "-A"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        time.sleep(1.0)  # the watch is established (its output is read after it ends)
        store.create({"apiVersion": "v1", "kind": "Event",
                      "metadata": {"name": "hello.1", "namespace": "training"},
                      "involvedObject": {"kind": "Pod", "name": "llama-pretrain-worker-0",
                                         "namespace": "training"},
                      "reason": "Hello", "message": "watched by kubectl", "type": "Normal"})
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and watch.poll() is None:
            time.sleep(0.5)
            if any(ev.type == "ADDED" for ev in store.history()
                   if ev.resource.plural == "events"):
                time.sleep(1.0)
                break
    finally:
        watch.terminate()
        stdout, stderr = watch.communicate(timeout=10)
    assert "watched by kubectl" in stdout, (stdout, stderr)


@pytest.mark.usefixtures("server")
def test_serve_schedules_what_kubectl_applies(server: TestAPIServer, kubeconfig: Path) -> None:
    pytest.importorskip("kubernetes", reason=NEEDS_CLIENT)
    nodes = []
    for r in range(2):
        for h in range(2):
            n = node(f"g-{r}-{h}", "64", {"gangsched.io/rack": f"rack-{r}",
                                          "gangsched.io/block": "block-0"})
            n["status"]["allocatable"].update({"nvidia.com/gpu": "8", "memory": "512Gi"})
            nodes.append(n)
    create_all(server.store, nodes)
    run(kubeconfig, "create", "namespace", "inference")
    run(kubeconfig, "apply", "-f", str(ROOT / "examples" / "workload-composite.yaml"))
    big = ROOT / "examples" / "workload-gang.yaml"  # 4 pods x 8 GPUs in one rack of 2 nodes
    run(kubeconfig, "create", "namespace", "training")
    run(kubeconfig, "apply", "-f", str(big))
    replica = start_replica(fast_config(kubeconfig, topology=None))
    try:
        def pods(ns: str) -> list[dict[str, object]]:
            items = json.loads(run(kubeconfig, "get", "pods", "-n", ns, "-o", "json")
                               .stdout)["items"]
            return list(items)

        wait_for(lambda: all(p["spec"].get("nodeName")  # type: ignore[union-attr]
                             for p in pods("inference")), WAIT, interval=0.5,
                 what="the composite bound")

        def unschedulable(p: dict[str, object]) -> bool:
            conds = (p.get("status") or {}).get("conditions") or []  # type: ignore[union-attr]
            return any(c.get("type") == "PodScheduled" and c.get("status") == "False"
                       and c.get("reason") == "Unschedulable" for c in conds)

        workers = lambda: [p for p in pods("training")  # noqa: E731
                           if "worker" in p["metadata"]["name"]]  # type: ignore[index]
        wait_for(lambda: len(workers()) == 4 and all(unschedulable(p) for p in workers()),
                 WAIT, interval=0.5, what="PodScheduled=False on the workers")
        assert not any(p["spec"].get("nodeName") for p in workers())  # type: ignore[union-attr]
    finally:
        replica.stop()
