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


def test_sweep_checks_knobs_before_any_job(run: Run, no_run: None) -> None:
    assert_one_line_error(run(*SWEEP, "-P", "hours=-2"), "--param", "hours")
    assert_one_line_error(run(*SWEEP, "--seed", "-3"), "--seed", ">= 0")


def test_sweep_help_names_the_ray_extra(run: Run) -> None:
    result = run("sweep", "--help", env={"COLUMNS": "300"})
    assert result.exit_code == 0
    assert "gangsched[ray]" in result.stdout


def test_a_repeated_policy_runs_once(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    import gangsched.sim.study as study

    seen: list[list[str]] = []
    real = study.run_study

    def spy(request: object, seeds: list[int], specs: list[str], *args: object) -> object:
        seen.append(list(specs))
        return real(request, seeds, specs, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(study, "run_study", spy)
    result = run("simulate", *SMALL, "--no-report", "-p", "gangsched", "-p", "gangsched",
                 "-o", "json")
    assert result.exit_code == 0, result.output
    assert seen == [["gangsched"]]


def test_save_trace_is_not_written_when_the_options_conflict(run: Run, no_run: None,
                                                             tmp_path: Path) -> None:
    saved = tmp_path / "saved.jsonl"
    result = run("simulate", *SMALL, "--no-report", "--ablation", "-p", "volcano",
                 "--save-trace", saved)
    assert_one_line_error(result, "--ablation")
    assert not saved.exists()


@pytest.mark.parametrize("where", ["dir", "missing"])
def test_save_trace_to_a_bad_path_fails_before_the_run(run: Run, no_run: None,
                                                       tmp_path: Path, where: str) -> None:
    target = tmp_path if where == "dir" else tmp_path / "no" / "such" / "t.jsonl"
    result = run("simulate", *SMALL, "--no-report", "--save-trace", target)
    assert_one_line_error(result, "--save-trace")


def test_save_trace_of_an_empty_builtin_scenario_is_not_called_a_trace(
        run: Run, tmp_path: Path) -> None:
    saved = tmp_path / "saved.jsonl"
    result = run("simulate", "-p", "gangsched", "--seeds", "1", "--workers", "1",
                 "--no-report", "-P", "zones=1", "-P", "blocks=1", "-P", "racks=1",
                 "-P", "hours=0.01", "-P", "warmup_hours=0", "--load", "0.01",
                 "--save-trace", saved)
    assert result.exit_code == 0, result.output
    assert saved.read_text() == ""


def test_save_trace_of_a_trace_is_refused(run: Run, no_run: None, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(WORKLOAD) + "\n")
    result = run("simulate", "--trace", trace, "--cluster-spec", "rack=2,host=2",
                 "--no-report", "--save-trace", tmp_path / "s.jsonl")
    assert_one_line_error(result, "--save-trace", "built-in")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_save_trace_on_a_full_disk_is_one_line(run: Run) -> None:
    result = run("simulate", *SMALL, "--no-report", "-p", "gangsched",
                 "--save-trace", "/dev/full")
    assert_one_line_error(result, "/dev/full")


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("", ["t.jsonl", "no workloads"]),
        (json.dumps({**WORKLOAD, "topology": {"required": "nolevel"}}) + "\n",
         ["t.jsonl:1", "nolevel"]),
        (json.dumps({**WORKLOAD, "arrival": 1e30}) + "\n", ["t.jsonl:1", "arrival"]),
    ],
    ids=["empty", "missing level", "absurd arrival"],
)
def test_bad_traces_on_the_command_line(run: Run, no_run: None, tmp_path: Path, text: str,
                                        fragments: list[str]) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(text)
    result = run("simulate", "--trace", trace, "--cluster-spec", "zone=1,rack=2,host=2",
                 "--no-report")
    assert_one_line_error(result, *fragments)


def test_an_alibaba_directory_without_nodes(run: Run, no_run: None, tmp_path: Path) -> None:
    (tmp_path / NODE_FILE).write_text("sn,cpu_milli,memory_mib,gpu,model\n")
    (tmp_path / POD_FILE).write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\np0,1000,1024,1,500,,LS,Running,0,600,0\n")
    result = run("simulate", "--alibaba", tmp_path, "--no-report")
    assert_one_line_error(result, NODE_FILE, "no nodes")


def test_scenario_knobs_with_a_trace_are_an_error(run: Run, no_run: None,
                                                  tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(WORKLOAD) + "\n")
    result = run("simulate", "--trace", trace, "--cluster-spec", "rack=2,host=2",
                 "--no-report", "-P", "hours=2")
    assert_one_line_error(result, "--param", "--trace")


def test_a_builtin_scenario_on_a_cluster_without_its_levels(run: Run, no_run: None,
                                                           tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    result = run("cluster", "generate", "--levels", "zone=1,rack=2,host=2", "--node",
                 "cpu=128,memory=1Ti,nvidia.com/gpu=8,pods=110", "--output-file", nodes)
    assert result.exit_code == 0, result.output
    result = run("simulate", *SMALL, "--no-report", "--cluster", nodes)
    assert_one_line_error(result, "nodes.yaml", "--cluster", "gangsched.io/block", "disagg")


@pytest.mark.parametrize("where", ["file", "under a file", "proc"])
def test_an_out_dir_that_cannot_be_written_fails_before_the_run(
        run: Run, no_run: None, tmp_path: Path, where: str) -> None:
    """Tried for real before the run: /proc (writable by its mode bits for root) only
    failed once every policy had run."""
    blocker = tmp_path / "f"
    blocker.write_text("")
    target = {"file": blocker, "under a file": blocker / "out",
              "proc": Path("/proc/gangsched-out")}[where]
    if where == "proc" and not Path("/proc/self").exists():
        pytest.skip("no /proc")
    result = run("simulate", *SMALL, "-p", "gangsched", "--out-dir", target)
    assert_one_line_error(result, "--out-dir")


def test_an_out_dir_check_leaves_nothing_behind(tmp_path: Path) -> None:
    """The check makes the missing directories and a file to see that it can, and
    removes them again: the run makes them for real."""
    from gangsched.cli.common import check_out_dir

    check_out_dir(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []
