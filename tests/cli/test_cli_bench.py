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


def test_bench_quality_compares_with_the_exact_solver(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "quality.json"
    result = run("bench", "quality", "-n", "4", "--out", out)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["instances"] == 4
    assert data["soundness"] == 1.0  # every admitted placement verifies


def test_bench_place_reports_ratios_to_the_floor(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "place.json"
    result = run("bench", "place", "--sizes", "512", "--decisions", "2", "--out", out)
    assert result.exit_code == 0, result.output
    cases = json.loads(out.read_text())["cases"]
    assert {c["case"] for c in cases} == {"rack-gang-4", "disagg-kai", "training-1024"}
    assert all(c["nodes"] == 512 and c["floor_us"] > 0 for c in cases)
    rack = next(c for c in cases if c["case"] == "rack-gang-4")
    assert rack["admitted"] == rack["decisions"]


def test_bench_throughput_places_every_gang(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "throughput.json"
    result = run("bench", "throughput", "--out", out)
    assert result.exit_code == 0, result.output
    cases = json.loads(out.read_text())["cases"]
    assert all(c["admitted"] == c["gangs"] and c["pods"] == 4 * c["gangs"]
               for c in cases if "x 4" in c["case"])


def test_bench_place_rejects_unknown_sizes(run: Run, tmp_path: Path) -> None:
    assert_one_line_error(run("bench", "place", "--sizes", "7", "--out", tmp_path / "x.json"),
                          "--sizes")
    assert_one_line_error(run("bench", "place", "--sizes", "x", "--out", tmp_path / "x.json"),
                          "--sizes")
    assert_one_line_error(run("bench", "quality", "-n", "0", "--out", tmp_path / "x.json"),
                          "--instances")
