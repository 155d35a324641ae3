"""The live view in a real headless browser (Chromium, driven over the DevTools protocol
on loopback): ``serve --dashboard`` over HTTPS shows the topology with GPUs per domain and
the example gangs with their state, and updates by itself when a new gang is applied.
The dev cluster's own view is checked the same way. Skipped where Chromium is absent."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import NEEDS_CLIENT
from k8s_helpers import create_all, fast_config, gang, node, rack_nodes, start_replica, wait_for

from gangsched.testing.apiserver import TestAPIServer

pytest.importorskip("kubernetes", reason=NEEDS_CLIENT)
websocket = pytest.importorskip("websocket", reason="the DevTools client needs "
                                "websocket-client (installed with the kubernetes client)")

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser",
                                                       "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium: apt-get install chromium to run the browser test")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WAIT = 60


class Browser:
    """One headless Chromium page, driven over the DevTools protocol."""

    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--ignore-certificate-errors",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        assert self.proc.stderr is not None
        deadline = time.monotonic() + WAIT
        while port is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            if "DevTools listening on ws://" in line:
                port = int(line.split("ws://127.0.0.1:")[1].split("/")[0])
        if port is None:
            self.close()
            pytest.fail("Chromium did not start its DevTools endpoint")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30)
        self._id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return dict(msg.get("result") or {})

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return (result.get("result") or {}).get("value")

    def gangs(self) -> dict[str, str]:
        return dict(self.js(
            "Array.from(document.querySelectorAll('tr.gang'))"
            ".map(r => [r.dataset.gang, r.dataset.state])") or [])

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    b = Browser(tmp_path / "chromium-profile")
    try:
        yield b
    finally:
        b.close()


def _example(name: str) -> list[dict[str, Any]]:
    import yaml

    out = []
    for d in yaml.safe_load_all((EXAMPLES / name).read_text()):
        if d and d.get("kind", "").endswith("List"):
            out.extend({"apiVersion": "v1", "kind": d["kind"][:-4], **i} for i in d["items"])
        elif d:
            out.append(d)
    return out


def _gpu_nodes() -> list[dict[str, Any]]:
    out = []
    for r in range(2):
        for h in range(2):
            n = node(f"g-{r}-{h}", "64", {"gangsched.io/rack": f"rack-{r}",
                                          "gangsched.io/block": "block-0"})
            n["status"]["allocatable"].update({"nvidia.com/gpu": "8", "memory": "512Gi"})
            out.append(n)
    return out


def test_serve_dashboard_shows_gangs_and_topology_and_updates(
        server: TestAPIServer, kubeconfig: Path, browser: Browser) -> None:
    store = server.store
    create_all(store, _gpu_nodes())
    create_all(store, _example("workload-composite.yaml"))
    replica = start_replica(fast_config(kubeconfig, topology=None, dashboard=True))
    try:
        health = replica.server.health
        assert health is not None and health.scheme == "https"
        browser.open(f"https://127.0.0.1:{health.port}/dashboard")
        wait_for(lambda: browser.gangs().get("inference/llm-serving-0") == "placed", WAIT,
                 interval=0.5, what="the composite shown placed")
        used = browser.js("document.querySelector('li[data-domain=\"cluster\"]')"
                          ".dataset.gpuUsed")
        assert used == "32"  # 2 prefill + 2 decode pods x 8 GPUs
        assert "g-0-0" in browser.js("document.body.innerText")
        # a new gang applied while the page is open: it appears by itself, rejected
        create_all(store, [{**o, "metadata": {**o["metadata"], "namespace": "inference"}}
                           for o in _oversized()])
        wait_for(lambda: browser.gangs().get("inference/too-big") == "rejected", WAIT,
                 interval=0.5, what="the new gang shown rejected")
        text = browser.js("document.body.innerText")
        assert "rack" in text  # the reason is shown
    finally:
        replica.stop()


def _oversized() -> list[dict[str, Any]]:
    """A Workload API gang of 3 pods x 8 GPUs in one rack (racks hold 2 such pods)."""
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "too-big"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 3}},
                      "schedulingConstraints": {"topology": [{"key": "gangsched.io/rack"}]}}}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"too-big-{i}"},
             "spec": {"schedulerName": "gangsched",
                      "schedulingGroup": {"podGroupName": "too-big"},
                      "containers": [{"name": "c", "image": "x", "resources": {
                          "requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "8"}}}]}}
            for i in range(3)]
    return [group, *pods]


def test_dev_cluster_dashboard(server: TestAPIServer, browser: Browser) -> None:
    from gangsched.cli.devcluster import start_dashboard

    store = server.store
    create_all(store, rack_nodes(racks=2, per_rack=2))
    create_all(store, gang("job", 2))
    view = start_dashboard(server, "127.0.0.1", 0)
    try:
        browser.open(f"http://127.0.0.1:{view.port}/dashboard")
        wait_for(lambda: browser.gangs().get("default/job") == "queued", WAIT, interval=0.5,
                 what="the gang shown queued")
        for i in range(2):
            store.bind(f"job-{i}", "n-0-0")
        wait_for(lambda: browser.gangs().get("default/job") == "placed", WAIT, interval=0.5,
                 what="the gang shown placed once bound")
    finally:
        view.stop()
