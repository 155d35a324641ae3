"""``gangsched dev-cluster``: the server built from cluster files, and the command run as
a user runs it (in a subprocess, stopped with Ctrl-C)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gangsched.api.errors import GangschedError, InputError
from gangsched.cli.common import App
from gangsched.cli.devcluster import build_server, dev_cluster_cmd

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

app = App()
app.command("dev-cluster")(dev_cluster_cmd)


@app.callback()
def main() -> None:
    """Stand-in for the gangsched app (the lead registers dev-cluster there)."""


def test_build_server_stores_the_objects_as_written() -> None:
    srv, kinds = build_server([EXAMPLES / "cluster-small.yaml",
                               EXAMPLES / "volcano-podgroup.yaml"], port=0)
    assert kinds == {"Node": 16, "Pod": 5, "Topology": 1, "PodGroup": 1}
    first = srv.store.get("nodes", "node-z0-b0-r0-h0")
    assert first["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert first["metadata"]["labels"]["gangsched.io/rack"] == "z0-b0-r0"
    pods = srv.store.list("pods")
    assert {p["status"]["phase"] for p in pods} == {"Pending"}


def test_build_server_checks_inputs_and_hosts(tmp_path: Path) -> None:
    with pytest.raises(GangschedError, match=r"refusing to listen on 0\.0\.0\.0"):
        build_server([], host="0.0.0.0", port=0)
    with pytest.raises(InputError, match="--error-rate"):
        build_server([], port=0, error_rate=2.0)
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {}\n")
    with pytest.raises(InputError, match=r"bad.yaml\[doc 0\]"):
        build_server([bad], port=0)


def test_command_errors_are_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["dev-cluster", "--host", "10.1.2.3", "--port", "0"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: refusing to listen on 10.1.2.3")


SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_apiserver_devcluster import app
    app()
""")


def test_dev_cluster_serves_until_ctrl_c(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(tests=str(Path(__file__).parent)),
         "dev-cluster", "-f", str(EXAMPLES / "cluster-small.yaml"), "--port", "0",
         "--kubeconfig", str(kubeconfig), "--error-rate", "0.5", "--latency-ms", "1",
         "--fault-endpoint"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        assert first.startswith("dev cluster at http://127.0.0.1:"), first + proc.stderr.read()
        url = first.split()[3]
        assert "16 Nodes" in first
        lines = [proc.stdout.readline() for _ in range(4)]
        assert lines[0].strip() == f"kubeconfig: {kubeconfig}"
        assert lines[1].strip() == f"try: kubectl --kubeconfig {kubeconfig} get nodes"
        assert lines[2].startswith("faults: error rate 0.5")
        assert kubeconfig.exists() and url in kubeconfig.read_text()

        with urllib.request.urlopen(f"{url}/api/v1/nodes", timeout=5) as resp:
            nodes = json.load(resp)
        assert len(nodes["items"]) == 16
        with urllib.request.urlopen(f"{url}/_faults", timeout=5) as resp:
            assert json.load(resp)["config"]["error_rate"] == 0.5

        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert out.strip().endswith("stopped")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # the port is free again
        try:
            urllib.request.urlopen(f"{url}/healthz", timeout=0.5)
        except OSError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the dev cluster still answers after Ctrl-C")
