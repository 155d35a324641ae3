"""``gangsched bench load`` runs end to end on a tiny cluster (timings are not checked)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Run, assert_one_line_error


def test_bench_load_writes_json(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    result = run("bench", "load", "--nodes", "50", "--out", out)
    assert result.exit_code == 0, result.output
    assert "ClusterState.from_nodes" in result.stdout
    data = json.loads(out.read_text())
    assert data["benchmark"] == "load" and data["nodes"] == 50
    assert data["load_s"] > 0 and data["state_s"] > 0
    assert data["machine"]["cpu_count"] >= 1


def test_bench_load_rejects_zero_nodes(run: Run, tmp_path: Path) -> None:
    assert_one_line_error(run("bench", "load", "--nodes", "0", "--out", tmp_path / "x.json"),
                          "--nodes")
