"""``gangsched simulate`` and ``gangsched sweep`` with bad inputs, as a user types them:
one ``error:`` line naming the option or the file, line and field, exit 1 (2 for usage
errors), no traceback, and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Run, assert_one_line_error

from gangsched.sim.alibaba import NODE_FILE, POD_FILE

SMALL = ["-P", "zones=1", "-P", "blocks=1", "-P", "racks=2", "-P", "hours=8",
         "-P", "warmup_hours=1", "--load", "2", "--seeds", "1", "--workers", "1"]
SWEEP = ["sweep", "-p", "gangsched", "--seeds", "1", "--workers", "1", "--no-report",
         "--load", "1"]
WORKLOAD = {"name": "a", "arrival": 0, "duration": 60,
            "roles": [{"name": "w", "replicas": 2, "requests": {"nvidia.com/gpu": 8}}]}


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a simulation starts."""
    import gangsched.sim.study as study

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("the simulation ran")

    import gangsched.sim.sweep as sweep

    monkeypatch.setattr(study, "run_study", never)
    monkeypatch.setattr(sweep, "run_jobs", never)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--seed", "-1"], ["--seed", ">= 0"]),
        (["--horizon", "1e30"], ["--horizon", "at most"]),
        (["--alibaba-limit", "5"], ["--alibaba-limit", "--alibaba"]),
        (["-P", "hours=-2"], ["--param", "hours"]),
        (["-P", "hours=nan"], ["--param", "hours"]),
        (["-P", "hours=inf"], ["--param", "hours"]),
        (["-P", "hours=1e30"], ["--param", "hours", "at most"]),
        (["-P", "zones=1.5"], ["--param", "zones", "integer"]),
        (["-P", "zones=1000", "-P", "blocks=1000"], ["--param", "nodes"]),
        (["-P", "hours=2", "-P", "warmup_hours=3"], ["--param", "warmup_hours"]),
        (["-P", "inference_share=-1"], ["--param", "inference_share"]),
        (["-P", "colour=red"], ["--param", "unknown knob 'colour'"]),
        (["-s", "perf-parity", "-P", "large_pods=0"], ["--param", "large_pods"]),
        (["-s", "perf-parity", "-P", "zones=1"], ["--param", "unknown knob 'zones'"]),
        (["-s", "alibaba-disagg-2025", "--seed", "40"], ["--seed", "trace"]),
        (["--load", "100", "-P", "hours=8000"], ["workloads"]),
    ],
    ids=["seed", "horizon", "limit alone", "hours<0", "hours nan", "hours inf",
         "hours absurd", "zones float", "too many nodes", "warmup", "share", "knob",
         "perf knob", "perf unknown", "v2025 seed past the trace", "arrivals"],
)
def test_bad_options_fail_before_the_run(run: Run, no_run: None, args: list[str],
                                         fragments: list[str]) -> None:
    result = run("simulate", "-p", "gangsched", "--no-report", *args)
    assert_one_line_error(result, *fragments)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--alibaba-limit", "0"], ["--alibaba-limit", ">= 1"]),
        (["--alibaba-limit", "-1"], ["--alibaba-limit", ">= 1"]),
    ],
    ids=["limit 0", "limit -1"],
)
def test_alibaba_limit_out_of_range(run: Run, no_run: None, tmp_path: Path,
                                    args: list[str], fragments: list[str]) -> None:
    result = run("simulate", "--alibaba", tmp_path, "--no-report", *args)
    assert_one_line_error(result, *fragments)
