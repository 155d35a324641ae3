"""kubectl against the test API server (skipped when kubectl is not installed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from apiserver_helpers import node

from gangsched.testing.apiserver import TestAPIServer

KUBECTL = shutil.which("kubectl")
Kubectl = Callable[..., str]  # run("get", "nodes", stdin=None, ok=True) -> stdout + stderr
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  schedulerName: gangsched
  containers:
  - name: main
    image: nginx
"""
PODGROUP = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: web
spec:
  minMember: 1
"""


@pytest.fixture
def kubectl(server: TestAPIServer, tmp_path: Path) -> Kubectl:
    config = server.kubeconfig(tmp_path / "kubeconfig")

    def run(*args: str, stdin: str | None = None, ok: bool = True) -> str:
        assert KUBECTL is not None
        done = subprocess.run(
            [KUBECTL, "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache"),
             "--request-timeout", "5s", *args],
            input=stdin, capture_output=True, text=True, timeout=20, check=False)
        if ok:
            assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    return run


def test_get_nodes(kubectl: Kubectl, server: TestAPIServer) -> None:
    server.store.create(node("n1"))
    server.store.create(node("n2"))
    listed = json.loads(kubectl("get", "nodes", "-o", "json"))
    assert [n["metadata"]["name"] for n in listed["items"]] == ["n1", "n2"]
    assert listed["items"][0]["status"]["allocatable"]["cpu"] == "8"
    table = kubectl("get", "nodes")
    assert table.splitlines()[0].split()[:2] == ["NAME", "STATUS"]
    assert table.splitlines()[1].split()[:2] == ["n1", "Ready"]


def test_apply_get_bind_delete(kubectl: Kubectl, server: TestAPIServer,
                               tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD)
    assert "pod/web created" in kubectl("apply", "--validate=false", "-f", str(manifest))
    assert "unchanged" in kubectl("apply", "-f", str(manifest))  # validation on: the default
    assert "created" in kubectl("apply", "-f", "-", stdin=PODGROUP)
    assert server.store.get("pods", "web")["spec"]["schedulerName"] == "gangsched"

    server.store.bind("web", "n1")
    wide = kubectl("get", "pods", "-o", "wide").splitlines()
    assert wide[0].split()[:6] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP"]
    assert wide[1].split()[0] == "web" and " n1 " in wide[1]
    assert "web" in kubectl("get", "pods", "-l", "app=web", "--field-selector",
                            "spec.nodeName=n1", "-o", "name")
    assert "web" in kubectl("get", "pg")
    assert "Node:" in kubectl("describe", "pod", "web")

    assert 'pod "web" deleted' in kubectl("delete", "pod", "web", "--wait=false")
    assert server.store.find("pods", "web") is None
