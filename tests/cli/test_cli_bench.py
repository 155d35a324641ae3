"""``gangsched bench load`` runs end to end on a tiny cluster (timings are not checked)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_helpers import Run, assert_one_line_error


def test_bench_load_writes_json(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    result = run("bench", "load", "--nodes", "50", "--output-file", out)
    assert result.exit_code == 0, result.output
    assert "ClusterState.from_nodes" in result.stdout
    data = json.loads(out.read_text())
    assert data["benchmark"] == "load" and data["nodes"] == 50
    assert data["load_s"] > 0 and data["state_s"] > 0
    assert data["machine"]["cpu_count"] >= 1


def test_bench_load_rejects_zero_nodes(run: Run, tmp_path: Path) -> None:
    assert_one_line_error(run("bench", "load", "--nodes", "0", "--output-file",
                              tmp_path / "x.json"),
                          "--nodes")


def test_bench_quality_compares_with_the_exact_solver(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "quality.json"
    result = run("bench", "quality", "--instances", "4", "--output-file", out)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["instances"] == 4
    assert data["soundness"] == 1.0  # every admitted placement verifies


def test_bench_place_reports_ratios_to_the_floor(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "place.json"
    result = run("bench", "place", "--sizes", "512", "--decisions", "2", "--output-file", out)
    assert result.exit_code == 0, result.output
    cases = json.loads(out.read_text())["cases"]
    assert {c["case"] for c in cases} == {"rack-gang-4", "disagg-kai", "training-1024"}
    assert all(c["nodes"] == 512 and c["floor_us"] > 0 for c in cases)
    rack = next(c for c in cases if c["case"] == "rack-gang-4")
    assert rack["admitted"] == rack["decisions"]


def test_bench_throughput_places_every_gang_and_prints_json(run: Run) -> None:
    result = run("bench", "throughput", "--repeat", "1", "--case", "tas 750 x 4",
                 "--case", "gang 10 x 5,000", "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    cases = {c["case"]: c for c in data["cases"]}
    assert set(cases) == {"tas 750 x 4", "gang 10 x 5,000"}
    for c in cases.values():
        assert c["admitted"] == c["gangs"] == c["first_fit_admitted"]
        assert c["pods_per_s"] > 0 and c["cpu_pods_per_s"] > 0 and c["ratio_to_first_fit"] > 0
    assert cases["tas 750 x 4"]["pods"] == 3_000 and cases["gang 10 x 5,000"]["pods"] == 50_000


def test_bench_place_rejects_unknown_sizes(run: Run, tmp_path: Path) -> None:
    assert_one_line_error(run("bench", "place", "--sizes", "7"), "--sizes")
    assert_one_line_error(run("bench", "place", "--sizes", "x"), "--sizes")
    assert_one_line_error(run("bench", "quality", "--instances", "0"), "--instances")
    assert_one_line_error(run("bench", "throughput", "--case", "tas 1 x 1"), "--case")
    assert_one_line_error(run("bench", "throughput", "--repeat", "0"), "--repeat")
    assert_one_line_error(run("bench", "place", "--case", "nope"), "--case")
    assert_one_line_error(run("bench", "place", "--repeat", "0"), "--repeat")


def test_bench_place_runs_only_the_cases_named(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "place.json"
    result = run("bench", "place", "--sizes", "512", "--decisions", "2", "--case", "wide-1024",
                 "--output-file", out)
    assert result.exit_code == 0, result.output
    [case] = json.loads(out.read_text())["cases"]
    assert (case["case"], case["pods"]) == ("wide-1024", 1024) and case["floor_cpu_us"] > 0
    assert case["repeats"] == 1


def test_bench_place_repeats_report_medians(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "place.json"
    result = run("bench", "place", "--sizes", "512", "--decisions", "3", "--case", "rack-gang-4",
                 "--repeat", "3", "--output-file", out)
    assert result.exit_code == 0, result.output
    [case] = json.loads(out.read_text())["cases"]
    assert case["repeats"] == 3 and case["decisions"] == 3 and case["admitted"] == 3


def test_bench_batch_compares_place_with_the_optimum_and_best_fit(run: Run) -> None:
    result = run("bench", "batch", "--instances", "1", "--nodes", "512", "--time-limit", "5",
                 "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (row,) = data["instances"]
    assert row["nodes"] == 512 and row["gangs"] > 0
    # nobody beats a proven bound, and the optimum found is a real placement
    assert row["optimum_gpus"] <= row["optimum_gpus_bound"] <= row["free_gpus"]
    for who in ("gangsched", "best_fit"):
        assert 0 < row[f"{who}_gpus"] <= row["optimum_gpus_bound"]
    assert set(data["totals"]) >= {"gangsched_gpus", "gangsched_pods", "best_fit_gpus"}


@pytest.mark.parametrize("command", ["quality", "batch"])
@pytest.mark.parametrize("limit", ["-1", "0", "nan"])
def test_a_time_limit_must_be_positive(run: Run, command: str, limit: str) -> None:
    assert_one_line_error(run("bench", command, "--instances", "1", "--time-limit", limit),
                          "--time-limit")


def test_bench_batch_rejects_an_unknown_node_count(run: Run) -> None:
    assert_one_line_error(run("bench", "batch", "--nodes", "100"), "--nodes")


def test_bench_place_e2e_times_place_in_a_child_process(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "e2e.json"
    result = run("bench", "place-e2e", "--nodes", "200", "--gangs", "5", "--repeat", "1",
                 "-o", "json", "--output-file", out)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["benchmark"] == "place-e2e" and data["pods"] == 20
    assert data["admitted"] == 5 and data["cpu_pods_per_s"] > 0
    names = [t["name"] for t in data["timings"]]
    assert names == ["python", "typer+rich", "help", "place"]
    assert json.loads(out.read_text())["admitted"] == 5


def test_bench_place_e2e_raises_the_input_limit_for_its_own_files(
        run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its generated files may exceed the input limit (100,000 gangs: 144 MB); the child
    place failed on them, and the failure was a RuntimeError traceback."""
    monkeypatch.setenv("GANGSCHED_MAX_INPUT_BYTES", "2000")  # below the 200 nodes' file
    result = run("bench", "place-e2e", "--nodes", "200", "--gangs", "5", "--repeat", "1",
                 "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["admitted"] == 5


def test_a_failing_child_is_one_line() -> None:
    from gangsched.api.errors import GangschedError
    from gangsched.bench.place_e2e import _succeeded, time_command

    with pytest.raises(GangschedError, match=r"^place x\.yaml exited 3: boom$"):
        time_command([sys.executable, "-c",
                      "import sys; print('boom', file=sys.stderr); sys.exit(3)",
                      "place", "x.yaml"], _succeeded)


def test_bench_place_e2e_reads_volcano_pod_groups(tmp_path: Path) -> None:
    from gangsched.bench.place_e2e import write_inputs
    from gangsched.frontends import assemble, load

    plan = assemble(load(write_inputs(tmp_path, 200, 3, 4, "volcano")))
    assert [len(w.pods) for w in plan.workloads] == [4, 4, 4]
    assert all(w.tree is not None for w in plan.workloads)


def test_bench_place_e2e_rejects_a_bad_format(run: Run, tmp_path: Path) -> None:
    assert_one_line_error(run("bench", "place-e2e", "--format", "kueue"), "--format")


def test_bench_place_e2e_refuses_more_gangs_than_the_nodes_hold(run: Run) -> None:
    """100 nodes hold 4,000 of its pods: 100,000 gangs of 4 ran for minutes, rejecting."""
    assert_one_line_error(run("bench", "place-e2e", "--nodes", "100", "--gangs", "100000"),
                          "--gangs", "do not fit on 100 nodes (4,000 pods at 40 a node)")
