"""``gangsched simulate`` end to end on small inputs: the list, a run that writes the
report, traces, generated and Alibaba clusters, and one-line errors."""

from __future__ import annotations

import gzip
import json
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gangsched.cli.common import App
from gangsched.cli.simulate import simulate_cmd
from gangsched.sim.alibaba import NODE_FILE, POD_FILE
from gangsched.sim.disagg2025 import INSTANCE_FILE, INSTANCES, NODES
from gangsched.sim.disagg2025 import NODE_FILE as NODE_FILE_2025

app = App()
app.command("simulate")(simulate_cmd)


@app.command("version")
def _version() -> None:  # a second command, so "simulate" is a subcommand as in main.py
    """Unused."""


SMALL = ["-P", "zones=1", "-P", "blocks=1", "-P", "racks=2", "-P", "hours=8",
         "-P", "warmup_hours=1", "--load", "2", "--seeds", "2", "--workers", "1"]


def invoke(*args: str | Path) -> tuple[int, str, str]:
    runner = CliRunner(env={"COLUMNS": "200"})
    result = runner.invoke(app, ["simulate", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code: int, stderr: str, *fragments: str) -> None:
    assert code == 1
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for f in fragments:
        assert f in lines[0]


def test_list_shows_scenarios_and_policies() -> None:
    code, out, _ = invoke("--list")
    assert code == 0
    for name in ("disagg", "training", "perf-parity", "gangsched", "pod-by-pod", "flat-gang",
                 "cpg-alpha", "volcano"):
        assert name in out


def test_a_small_run_prints_the_table_and_writes_the_report(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    trace = tmp_path / "saved.jsonl"
    code, out, err = invoke(*SMALL, "-p", "gangsched", "-p", "pod-by-pod", "--out-dir",
                            out_dir, "--save-trace", trace)
    assert code == 0, err
    assert "gangsched" in out and "pod-by-pod" in out and "wasted" in out
    assert max(len(line) for line in out.splitlines() if not line.startswith("wrote")) <= 80
    summary = json.loads((out_dir / "summary.json").read_text())
    assert list(summary["policies"]) == ["gangsched", "pod-by-pod"]
    assert summary["scenario"] == "disagg" and summary["nodes"] == 4
    assert summary["seeds"] == [0, 1]
    assert summary["parameters"]["load"] == 2
    ours = summary["policies"]["gangsched"]
    assert len(ours["per_seed"]["units"]) == 2 and len(ours["ci"]["units"]) == 2
    for policy in summary["policies"].values():  # locality over time, a share of unit-samples
        assert all(x is None or 0.0 <= x <= 1.0 for x in policy["per_seed"]["locality_held"])
    assert "locality held" in (out_dir / "report.html").read_text()
    assert (out_dir / "units.csv").exists() and (out_dir / "timeseries.csv").exists()
    # the saved trace replays through --trace on the same cluster
    code, out, err = invoke("--trace", trace, "--cluster-spec", "zone=1,block=1,rack=2,host=2",
                            "-p", "gangsched", "--no-report")
    assert code == 0, err
    assert "saved" in out


def test_an_alibaba_directory_runs_with_milli_gpus(tmp_path: Path) -> None:
    (tmp_path / NODE_FILE).write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                      "n0,32000,65536,2,T4\n")
    (tmp_path / POD_FILE).write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,1000,1024,1,500,,LS,Running,0,600,0\n"
        "p1,1000,1024,1,1000,,LS,Running,10,3600,10\n")
    code, _, err = invoke("--alibaba", tmp_path, "-p", "gangsched", "--seeds", "1",
                          "--out-dir", tmp_path / "o")
    assert code == 0, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["gpus"] == 2 and s["scenario"] == "alibaba-gpu-2023"
    assert s["parameters"]["pods"] == 2  # both pods are replayed


def test_an_alibaba_pod_list_without_times_runs_from_its_file(tmp_path: Path) -> None:
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n")
    pods = tmp_path / "openb_pod_list_multigpu50.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                    "p0,1000,1024,1,500\np1,1000,1024,2,1000\np2,1000,1024,1,1000\n")
    code, out, err = invoke("--alibaba", pods, "-p", "gangsched", "--seeds", "2",
                            "--workers", "1", "--no-report", "-o", "json")
    assert code == 0, err
    s = json.loads(out)
    assert s["parameters"]["pod_list"] == str(pods) and s["parameters"]["pods"] == 3
    # two GPUs: p1 (2 GPUs) and p2 (1) cannot both run, and nothing finishes
    never = s["policies"]["gangsched"]["per_seed"]["never_admitted"]
    assert len(never) == 2 and all(n >= 1 for n in never)


V2025 = ["-P", "days=0.25", "-P", "scale=0.05", "-P", "warmup_hours=1", "-p", "gangsched",
         "-p", "pod-by-pod", "--seeds", "1", "--workers", "1", "--no-report", "-o", "json"]


def test_an_alibaba_v2025_directory_is_the_scenario_from_its_files(tmp_path: Path) -> None:
    data = resources.files("gangsched.data")
    (tmp_path / f"{INSTANCE_FILE}.gz").write_bytes(data.joinpath(INSTANCES).read_bytes())
    (tmp_path / NODE_FILE_2025).write_bytes(gzip.decompress(data.joinpath(NODES).read_bytes()))
    code, out, err = invoke("--alibaba", tmp_path, *V2025)
    assert code == 0, err
    from_dir = json.loads(out)
    code, out, err = invoke("--scenario", "alibaba-disagg-2025", *V2025)
    assert code == 0, err
    packaged = json.loads(out)
    assert from_dir["scenario"] == packaged["scenario"] == "alibaba-disagg-2025"
    assert from_dir["parameters"].pop("source") == str(tmp_path)
    assert _untimed(from_dir) == _untimed(packaged)
    code, _, err = invoke("--alibaba", tmp_path, "--alibaba-limit", "5", *V2025)
    one_line_error(code, err, "--alibaba-limit", "only for the Alibaba v2023 trace")
    code, _, err = invoke("--alibaba", tmp_path, "-P", "days=2", "--seed", "20")
    one_line_error(code, err, "--seed", "after the end of the trace")


def _untimed(value: object) -> object:
    """A summary without its timings (they differ from run to run)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items()
                if "decision" not in k and "seconds" not in k}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def test_an_alibaba_directory_with_neither_trace_says_which_files(tmp_path: Path) -> None:
    code, _, err = invoke("--alibaba", tmp_path)
    one_line_error(code, err, "--alibaba", "holds neither", NODE_FILE, INSTANCE_FILE)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["-p", "kube"], ["--policy", "unknown policy 'kube'"]),
        (["-s", "nope"], ["--scenario", "unknown scenario 'nope'"]),
        (["-P", "load"], ["--param", "expected KEY=VALUE"]),
        (["-P", "load=2"], ["--param", "--load"]),
        (["--load", "0"], ["--load", "positive factor"]),
        (["--seeds", "0"], ["--seeds", "between 1"]),
        (["-p", "volcano:colour=red"], ["--policy", "no knob 'colour'"]),
        (["-p", "volcano:min_first=maybe"], ["--policy", "min_first must be one of"]),
        (["-p", "volcano:min_first=true,min_first=false"], ["--policy", "given twice"]),
        (["-P", "colour=red"], ["--param", "colour"]),
        (["--cluster-spec", "rack=2,host=2", "--cluster", "x.yaml"], ["not both"]),
        (["--cluster-spec", "rack=0"], ["--cluster-spec", "positive integer"]),
        (["--horizon", "-5"], ["--horizon", "positive"]),
    ],
    ids=["policy", "scenario", "param", "load-param", "load", "seeds", "policy-knob",
         "policy-knob-value", "policy-knob-twice", "knob", "two clusters", "spec", "horizon"],
)
def test_bad_options_are_one_line_errors(args: list[str], fragments: list[str]) -> None:
    code, _, err = invoke(*args)
    one_line_error(code, err, *fragments)


def test_a_missing_alibaba_directory_is_one_line(tmp_path: Path) -> None:
    # a path of this test's own: a fixed one such as /nonexistent may exist on the machine
    code, _, err = invoke("--alibaba", tmp_path / "missing")
    one_line_error(code, err, "not a directory")


def test_a_bad_trace_line_is_a_one_line_error(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"name": "a", "arrival": 0, "roles": [{"name": "w", "requests": {}}]}\n'
                     '{"name": "b", "arrival": 0, "roles": [{"name": "w", "replicas": -1, '
                     '"requests": {}}]}\n')
    code, _, err = invoke("--trace", trace)
    one_line_error(code, err, "t.jsonl:2", "roles[0].replicas", "must be >= 1")


def test_a_preferred_level_no_node_has_is_a_warning_and_the_run_goes_on(
        tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"name": "a", "arrival": 0, "duration": 60, "roles": [{"name": "w", '
                     '"requests": {"cpu": "1"}, "topology": {"preferred": "example.com/x"}}]}\n')
    code, out, err = invoke("--trace", trace, "--cluster-spec", "rack=2,host=2", "--seeds", "1",
                            "-p", "gangsched", "--no-report")
    assert code == 0, err
    [warning] = [ln for ln in err.splitlines() if ln.startswith("warning: ")]
    assert "t.jsonl:1" in warning and "roles[0].topology.preferred" in warning
    assert "gangsched" in out


def test_a_gzip_trace_runs_as_the_plain_one_and_a_truncated_one_says_so(
        tmp_path: Path) -> None:
    import gzip

    text = "".join(json.dumps({
        "name": name, "arrival": t, "duration": 60,
        "roles": [{"name": "w", "replicas": 2, "requests": {"nvidia.com/gpu": 8}}]}) + "\n"
        for name, t in (("a", 0), ("b", 30)))
    packed = tmp_path / "t.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    (tmp_path / "t.jsonl").write_text(text)
    got = {}
    for path in (tmp_path / "t.jsonl", packed):
        code, out, err = invoke("--trace", path, "--cluster-spec", "zone=1,rack=2,host=2",
                                "-p", "gangsched", "--seeds", "1", "--no-report", "-o", "json")
        assert code == 0, err
        got[path.name] = json.loads(out)["policies"]["gangsched"]["admitted"]
    assert got == {"t.jsonl": 2, "t.jsonl.gz": 2}
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed.read_bytes()[:-12])
    code, _, err = invoke("--trace", cut, "--cluster-spec", "zone=1,rack=2,host=2")
    one_line_error(code, err, "cut.jsonl.gz", "truncated gzip")


def test_a_cluster_file_without_topology_object_gets_levels_from_the_trace(
        tmp_path: Path) -> None:
    from gangsched.cluster.generate import generate_yaml

    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(generate_yaml([("zone", 1), ("rack", 2), ("host", 2)],
                                   {"cpu": "64", "nvidia.com/gpu": "8", "pods": "110"},
                                   topology=False))
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({
        "name": "a", "arrival": 0, "duration": 60,
        "roles": [{"name": "w", "replicas": 2, "requests": {"nvidia.com/gpu": 8}}],
        "topology": {"required": "rack"}}) + "\n")
    code, _, err = invoke("--trace", trace, "--cluster", nodes, "-p", "gangsched",
                          "--seeds", "1", "--out-dir", tmp_path / "o")
    assert code == 0, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["policies"]["gangsched"]["admitted"] == 1
    assert s["policies"]["gangsched"]["finished"] == 1


def test_an_out_dir_that_is_a_file_fails_before_the_run(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import gangsched.sim.study as study

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("the simulation ran")

    monkeypatch.setattr(study, "run_study", never)
    taken = tmp_path / "report"
    taken.write_text("not a directory")
    code, _, err = invoke(*SMALL, "--out-dir", taken)
    one_line_error(code, err, "--out-dir", "exists and is not a directory")
    code, _, err = invoke(*SMALL, "--out-dir", taken / "inside")
    one_line_error(code, err, "--out-dir", "is not a directory")
    assert taken.read_text() == "not a directory"


def test_a_report_that_cannot_be_written_is_a_one_line_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gangsched.sim.report as report

    def full(*args: object, **kwargs: object) -> object:
        raise OSError(28, "No space left on device", str(tmp_path / "o" / "report.html"))

    monkeypatch.setattr(report, "write_report", full)
    code, _, err = invoke(*SMALL, "-p", "gangsched", "--seeds", "1", "--out-dir", tmp_path / "o")
    one_line_error(code, err, "report.html", "No space left on device")


def test_a_failed_write_leaves_no_half_written_file(tmp_path: Path) -> None:
    """A full disk (a file-size limit here) while writing the trace or the report: the
    error names the file, and no cut-off file is left where a whole one was expected."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    trace, out = tmp_path / "saved.jsonl", tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "gangsched.cli.main", "simulate", *SMALL, "-p", "gangsched",
         "--save-trace", str(trace), "--out-dir", str(out)],
        capture_output=True, text=True, preexec_fn=limit, timeout=600, check=False)
    assert done.returncode == 1, done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    line = errors[0]
    assert line.endswith(": cannot write: File too large")
    failed = Path(line[len("error: "):-len(": cannot write: File too large")])
    assert failed == trace or failed.parent == out  # the file being written is named
    assert not failed.exists()  # not cut off: not there at all
    for path in out.glob("*.json"):
        json.loads(path.read_text())  # what was written is whole
    assert not list(tmp_path.rglob(".*.tmp"))  # no temporary file left behind
