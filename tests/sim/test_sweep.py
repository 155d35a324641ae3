"""``gangsched sweep``: a grid in parallel local processes and on a single-node Ray, one
combined summary and report, the same numbers wherever the jobs ran."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gangsched.cli.main import app
from gangsched.sim.inputs import ScenarioRequest
from gangsched.sim.metrics import deterministic
from gangsched.sim.sweep import run_sweep

KNOBS = (("blocks", 1), ("hosts", 2), ("hours", 3.0), ("racks", 2), ("warmup_hours", 0.5),
         ("zones", 1))
SMALL = ["-P", "zones=1", "-P", "blocks=1", "-P", "racks=2", "-P", "hours=3",
         "-P", "warmup_hours=0.5"]


def cells(summary: dict[str, object]) -> list[object]:
    out = []
    for cell in summary["cells"]:  # type: ignore[attr-defined]
        policies = cell["summary"]["policies"]
        out.append((cell["label"], {k: deterministic(v) for k, v in policies.items()}))
    return out


def test_the_cli_runs_a_grid_and_writes_one_summary(tmp_path: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "100"})
    result = runner.invoke(app, ["sweep", *SMALL, "--load", "1", "--load", "2", "--seeds", "2",
                                 "-p", "gangsched", "-p", "volcano", "--workers", "2",
                                 "--out-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["grid"] == {"scenarios": ["disagg"], "loads": [1.0, 2.0], "seeds": [0, 1],
                               "policies": ["gangsched", "volcano"]}
    assert [c["label"] for c in summary["cells"]] == ["disagg-load-1", "disagg-load-2"]
    page = (tmp_path / "report.html").read_text()
    assert "disagg at load 2" in page and 'href="disagg-load-2/report.html"' in page
    assert (tmp_path / "disagg-load-1" / "gpu_allocation.png").exists()
    assert "disagg-load-2" not in result.stdout or "load 2" in result.stdout


def test_bad_grids_are_one_line_errors() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["sweep", "--load", "-1", "--no-report"])
    assert result.exit_code == 1 and result.stderr.startswith("error: --load")
    result = runner.invoke(app, ["sweep", "-s", "nope", "--no-report"])
    assert result.exit_code == 1 and "unknown scenario 'nope'" in result.stderr


def test_ray_gives_the_same_numbers_as_local_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray", reason="Ray is optional: pip install 'gangsched[ray]'")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    base = ScenarioRequest(knobs=KNOBS)
    local = run_sweep(base, ["disagg"], [1.5], [0, 1], ["gangsched", "pod-by-pod"], workers=2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"RAY_USAGE_STATS_ENABLED": "0"}})
    try:
        remote = run_sweep(base, ["disagg"], [1.5], [0, 1], ["gangsched", "pod-by-pod"],
                           ray="auto")
    finally:
        ray.shutdown()
    assert cells(remote.summary()) == cells(local.summary())
    assert os.environ["RAY_USAGE_STATS_ENABLED"] == "0"


def test_an_out_dir_that_is_a_file_fails_before_the_grid_runs(tmp_path: Path) -> None:
    taken = tmp_path / "out"
    taken.write_text("x")
    result = CliRunner().invoke(app, ["sweep", *SMALL, "--seeds", "1", "-p", "gangsched",
                                      "--out-dir", str(taken)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--out-dir" in lines[0] and "not a directory" in lines[0]
    assert result.stdout == ""  # nothing ran: no table
