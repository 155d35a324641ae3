"""Every command reports GangschedError as one red line; other exceptions propagate."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import Run, assert_one_line_error
from typer.testing import CliRunner

from gangsched.api.errors import InputError
from gangsched.cli.common import App

app = App()


@app.command()
def bad_input(kind: str = "input") -> None:
    if kind == "input":
        raise InputError("must be positive", file="x.yaml", doc=2, obj="Node/n1", field="spec")
    raise ValueError("a bug, not a user mistake")


@app.command()
def fine() -> None:
    print("ok")


def test_gangsched_error_is_one_line_without_traceback() -> None:
    result = CliRunner().invoke(app, ["bad-input"])
    assert result.exit_code == 1
    assert result.stderr == "error: x.yaml[doc 2]: Node/n1: spec: must be positive\n"
    assert result.stdout == ""


def test_other_exceptions_propagate() -> None:
    result = CliRunner().invoke(app, ["bad-input", "--kind", "bug"])
    assert isinstance(result.exception, ValueError)
    with pytest.raises(ValueError, match="a bug"):
        CliRunner().invoke(app, ["bad-input", "--kind", "bug"], catch_exceptions=False)


def test_wrapped_commands_keep_their_signature() -> None:
    assert CliRunner().invoke(app, ["fine"]).stdout == "ok\n"
    assert "--kind" in CliRunner().invoke(app, ["bad-input", "--help"]).stdout


# -- strict, safe loading through the CLI ----------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CLUSTER = EXAMPLES / "cluster-small.yaml"
NODE = """apiVersion: v1
kind: Node
metadata:
  name: {name}
status:
  allocatable: {{cpu: "8", pods: "110"}}
  capacity: {{cpu: "{capacity}", pods: "110"}}
"""


def _write(tmp_path: Path, text: str, name: str = "in.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("command", ["validate", "place"])
def test_unknown_field_is_an_error_by_default(command: str, run: Run, tmp_path: Path) -> None:
    """kubectl's strict field validation (--validate=strict, the default)."""
    path = _write(tmp_path, NODE.format(name="n1", capacity="8").replace(
        "metadata:", "metadata:\n  lables: {a: b}"))
    assert_one_line_error(run(command, path), "Node/n1: metadata.lables: unknown field",
                          'did you mean "labels"?')


def test_validate_warn_and_ignore_downgrade_unknown_fields(run: Run, tmp_path: Path) -> None:
    path = _write(tmp_path, NODE.format(name="n1", capacity="8").replace(
        "status:", "spec: {providerIDs: x}\nstatus:"))
    warned = run("validate", "--validate=warn", path)
    assert warned.exit_code == 0, warned.output
    assert warned.stderr.startswith("warning: ") and "spec.providerIDs: unknown field" in (
        warned.stderr)
    quiet = run("validate", "--validate", "ignore", path)
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert run("validate", "--validate=false", path).exit_code == 0  # kubectl's old value
    assert_one_line_error(run("validate", "--validate=maybe", path), "--validate",
                          "strict, warn, ignore")


def test_environment_sets_the_default_mode(run: Run, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, NODE.format(name="n1", capacity="8").replace(
        "status:", "spec: {x: 1}\nstatus:"))
    monkeypatch.setenv("GANGSCHED_VALIDATE", "warn")
    assert run("validate", path).exit_code == 0
    assert run("validate", "--validate=strict", path).exit_code == 1


@pytest.mark.parametrize("mode", ["strict", "warn", "ignore"])
def test_types_and_quantities_are_errors_in_every_mode(mode: str, run: Run,
                                                       tmp_path: Path) -> None:
    """A capacity gangsched never reads (allocatable is given) is still decoded as the API
    server decodes it: "0x10" is not a quantity."""
    path = _write(tmp_path, NODE.format(name="n1", capacity="0x10"))
    assert_one_line_error(run("place", f"--validate={mode}", path),
                          "Node/n1: status.capacity.cpu: invalid quantity '0x10'")


def test_control_characters_never_reach_the_terminal(run: Run, tmp_path: Path) -> None:
    path = _write(tmp_path, 'apiVersion: v1\nkind: Node\nmetadata:\n'
                            '  name: "evil\\e[31m\\u202e\\nname"\n')
    result = run("validate", path)
    assert_one_line_error(result, "Node/evil\\x1b[31m\\u202e\\nname", "invalid name")
    assert "\x1b" not in result.output and "\u202e" not in result.output


def test_invalid_hierarchy_is_shown_and_the_rest_placed(run: Run, tmp_path: Path) -> None:
    """KEP-6012: a broken CompositePodGroup hierarchy makes its own workload invalid; place
    still places every other workload, prints the invalid one as such, and exits 1."""
    cycle = "".join(
        f"---\napiVersion: scheduling.k8s.io/v1alpha3\nkind: CompositePodGroup\n"
        f"metadata: {{name: {name}, namespace: inference}}\n"
        f"spec:\n  parentCompositePodGroupName: {parent}\n"
        f"  workloadRef: {{workloadName: llm-serving, templateName: serving}}\n"
        f"  schedulingPolicy: {{gang: {{minGroupCount: 1}}}}\n"
        for name, parent in (("loop-a", "loop-b"), ("loop-b", "loop-a")))
    broken = _write(tmp_path, cycle, "cycle.yaml")
    good = EXAMPLES / "workload-gang.yaml"
    result = run("place", CLUSTER, good, broken, "-o", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    verdicts = {f"{w['namespace']}/{w['name']}": w["status"] for w in document["workloads"]}
    assert verdicts["training/llama-pretrain-workers-0"] == "Admitted"
    assert verdicts["inference/loop-a"] == "Invalid"
    errors = [line for line in result.stderr.splitlines() if not line.startswith("warning: ")]
    assert len(errors) == 1 and errors[0].startswith("error: ")
    assert "parent references form a cycle: loop-a -> loop-b -> loop-a" in errors[0]
    table = run("place", CLUSTER, good, broken)
    assert table.exit_code == 1 and "Invalid" in table.stdout
    checked = run("validate", CLUSTER, good, broken)
    assert checked.exit_code == 1
    assert [line for line in checked.stderr.splitlines() if line.startswith("error: ")] == [
        f"error: {broken}[doc 0]: CompositePodGroup/loop-a: spec.parentCompositePodGroupName: "
        "parent references form a cycle: loop-a -> loop-b -> loop-a"]


# -- bounded reading ----------------------------------------------------------------------------


def test_huge_file_is_refused_before_reading(run: Run, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, NODE.format(name="n1", capacity="8") * 1)
    monkeypatch.setenv("GANGSCHED_MAX_INPUT_BYTES", "64")
    assert_one_line_error(run("validate", path), "file is too large",
                          "GANGSCHED_MAX_INPUT_BYTES")
    monkeypatch.setenv("GANGSCHED_MAX_INPUT_BYTES", "1Ki")
    assert run("validate", path).exit_code == 0


def test_billion_laughs_is_rejected_quickly(run: Run, tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n" + "\n".join(
        f"x{line}" for line in lines) + "\n"
    path = _write(tmp_path, text)
    start = time.perf_counter()
    result = run("validate", path)
    assert time.perf_counter() - start < 5
    assert_one_line_error(result, "excessive aliasing")


@pytest.mark.parametrize(("text", "what"), [
    ("[" * 50_000 + "]" * 50_000, "YAML"),
    ("a:\n" + "".join("  " * i + "- b:\n" for i in range(1, 300)), "YAML"),
    ("- " * 40_000 + "x\n", "YAML"),
    ('{"a": ' * 50_000 + "1" + "}" * 50_000, "JSON"),
], ids=["flow", "block", "compact", "json"])
def test_deep_nesting_is_refused_before_parsing(text: str, what: str, run: Run,
                                                tmp_path: Path) -> None:
    """libyaml's composer recurses in C (30,000 levels crash the process): the depth is
    bounded before it runs."""
    path = _write(tmp_path, text)
    start = time.perf_counter()
    result = run("validate", path)
    assert time.perf_counter() - start < 10
    assert_one_line_error(result, f"invalid {what}", "nested deeper than 100 levels")


# -- what the output side and the file system can do to a command ------------------------------


def _subprocess(*args: str | Path, stdout: Any = subprocess.PIPE, cwd: Path | None = None,
                columns: str = "200", closed_stdout: bool = False
                ) -> subprocess.CompletedProcess[str]:
    """The installed command in a child process (a real stdout, not CliRunner's buffer);
    ``closed_stdout``: started without one, as ``>&-`` does."""
    return subprocess.run([sys.executable, "-m", "gangsched.cli.main", *map(str, args)],
                          stdout=None if closed_stdout else stdout, stderr=subprocess.PIPE,
                          text=True, timeout=120, check=False, cwd=cwd,
                          env={**os.environ, "COLUMNS": columns},
                          preexec_fn=(lambda: os.close(1)) if closed_stdout else None)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [
    ("validate", CLUSTER),
    ("place", CLUSTER, EXAMPLES / "workload-gang.yaml", "-o", "json"),
    ("cluster", "show", CLUSTER),
    ("cluster", "generate", "--levels", "zone=2,host=2"),
], ids=["validate", "place", "cluster show", "cluster generate"])
def test_a_full_disk_on_stdout_is_one_line(args: tuple[str | Path, ...]) -> None:
    """``gangsched ... > file`` on a full disk: one error line, exit 1, no traceback (and
    no second complaint when Python flushes stdout on the way out)."""
    with open("/dev/full", "w") as full:
        done = _subprocess(*args, stdout=full)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        "error: cannot write the output: No space left on device"], done.stderr


@pytest.mark.parametrize("args", [
    ("validate", CLUSTER),
    ("place", CLUSTER, EXAMPLES / "workload-gang.yaml"),
    ("cluster", "show", CLUSTER),
    ("cluster", "generate", "--levels", "zone=2,host=2"),
    ("--help",),
    ("place", "--help"),
], ids=["validate", "place", "cluster show", "cluster generate", "help", "place help"])
def test_a_closed_stdout_is_one_line(args: tuple[str | Path, ...]) -> None:
    """``gangsched ... >&-``: the output cannot go anywhere, so it is an error (as for
    ``ls >&-``), not a silent exit 0 nor a traceback."""
    done = _subprocess(*args, closed_stdout=True)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "error: cannot write the output: standard output is closed"], done.stderr


def test_a_closed_stdout_does_not_matter_when_nothing_is_printed(tmp_path: Path) -> None:
    out = tmp_path / "nodes.yaml"
    done = _subprocess("cluster", "generate", "--levels", "zone=2,host=2",
                       "--output-file", out, closed_stdout=True)
    assert done.returncode == 0, done.stderr
    assert out.read_text().count("kind: Node") == 4


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_output_file_on_a_full_disk_is_one_line(run: Run) -> None:
    result = run("cluster", "generate", "--levels", "zone=2,host=2", "--output-file",
                 "/dev/full")
    assert_one_line_error(result, "/dev/full", "No space left on device")
    assert Path("/dev/full").is_char_device()  # written to, never replaced


def test_an_output_file_is_whole_or_untouched(run: Run, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails half way leaves the old file as it was and no stray files."""
    target = tmp_path / "nodes.yaml"
    target.write_text("old\n")
    real_write = os.write

    def short_write(fd: int, data: Any) -> int:
        if len(data) > 1000:
            real_write(fd, bytes(data[:1000]))
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", short_write)
    result = run("cluster", "generate", "--levels", "zone=2,host=8", "--output-file", target)
    monkeypatch.undo()
    assert_one_line_error(result, str(target), "No space left on device")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nodes.yaml"]
    assert run("cluster", "generate", "--levels", "zone=2,host=8", "--output-file",
               target).exit_code == 0
    assert target.read_text().count("kind: Node") == 16


def test_symlink_loops_under_a_recursive_directory_end(run: Run, tmp_path: Path) -> None:
    """``-R`` over a directory that links to itself (four times: 4**40 paths before the
    kernel says ELOOP) reads each file once, at once."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "cluster.yaml").write_text(CLUSTER.read_text())
    for i in range(4):
        (tree / "sub" / f"again{i}").symlink_to("..")
    start = time.perf_counter()
    result = run("validate", "-R", "-f", tree)
    assert time.perf_counter() - start < 10
    assert result.exit_code == 0, result.output
    assert result.stdout == "1 file valid\n"
    placed = run("cluster", "show", "-R", tree)
    assert placed.exit_code == 0, placed.output


@pytest.mark.parametrize("args", [
    ("validate", "-f", ""),
    ("place", "-f", CLUSTER, "-f", ""),
    ("validate", ""),
    ("simulate", "--trace", EXAMPLES / "cluster-small.yaml", "--cluster", "", "--seeds", "1"),
], ids=["-f", "second -f", "argument", "--cluster"])
def test_an_empty_file_name_is_an_error_not_the_current_directory(
        args: tuple[str | Path, ...], run: Run, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``-f "$CLUSTER"`` with the variable unset: kubectl refuses it; reading every YAML
    file of the working directory instead would place against the wrong inputs."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cluster.yaml").write_text(CLUSTER.read_text())
    result = run(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "empty file name" in lines[0]


@pytest.mark.parametrize(("option", "value", "fragment"), [
    ("--port", "-1", "--port"),
    ("--port", "65536", "--port"),
    ("--dashboard-port", "70000", "--dashboard-port"),
], ids=["negative port", "port too large", "dashboard port"])
def test_dev_cluster_ports_out_of_range(option: str, value: str, fragment: str,
                                        run: Run) -> None:
    result = run("dev-cluster", "-f", CLUSTER, "--port", "0", "--dashboard", option, value)
    assert_one_line_error(result, fragment, "0 and 65535")


@pytest.mark.parametrize("latency", [math.inf, math.nan, 1e300])
def test_dev_cluster_latency_must_be_finite(latency: float) -> None:
    """An infinite latency started a server answering every request with a 500."""
    from gangsched.cli.devcluster import build_server

    with pytest.raises(InputError, match="--latency-ms"):
        build_server([], port=0, latency_ms=latency)


@pytest.mark.parametrize("keys", ["bad key!", "a" * 300, "example.com/rack,-x"],
                         ids=["space", "too long", "second"])
def test_topology_option_keys_must_be_label_keys(keys: str, run: Run, tmp_path: Path) -> None:
    """A key no node label can have was taken as a level, with a warning per level."""
    cluster = _write(tmp_path, NODE.format(name="n1", capacity="8"))
    result = run("place", cluster, EXAMPLES / "workload-gang.yaml", "--topology", keys)
    assert_one_line_error(result, "--topology", "invalid label key")


def test_hostname_is_only_the_lowest_level_of_the_topology_option(run: Run,
                                                                   tmp_path: Path) -> None:
    """Hosts above racks split each rack into one-node racks, silently."""
    cluster = _write(tmp_path, NODE.format(name="n1", capacity="8"))
    result = run("place", cluster, EXAMPLES / "workload-gang.yaml", "--topology",
                 "kubernetes.io/hostname,example.com/rack")
    assert_one_line_error(result, "--topology", "kubernetes.io/hostname can only be the last")


@pytest.mark.parametrize("command", ["place", "validate", "explain", "cluster show"])
def test_a_bad_topology_option_is_an_error_even_when_a_topology_object_wins(
        command: str, run: Run) -> None:
    """The inputs' Topology object wins over --topology; an invalid option was then
    ignored without a word (exit 0), as if it had been valid."""
    words = command.split() + (["sample-0"] if command == "explain" else [])
    result = run(*words, "-f", EXAMPLES / "cluster-small.yaml", "-f",
                 EXAMPLES / "kthena-2p2d.yaml", "--topology", "example.com/rack,example.com/rack")
    assert_one_line_error(result, "--topology", "given twice")


# -- bounded expansion: the pods controllers would create, over one load --------------------

_POD = "containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]"
# kind: (a manifest, NAME its name, asking for ~99,000 pods; the field that asks for them)
_EXPANDING = {
    "JobSet": ("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: NAME}\n"
               "spec:\n  replicatedJobs:\n  - name: workers\n    replicas: 99001\n"
               "    template: {spec: {template: {spec: {" + _POD + "}}}}\n",
               "spec.replicatedJobs[0].replicas"),
    "Job": ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: NAME}\nspec:\n"
            "  parallelism: 99000\n  completions: 99000\n"
            "  template: {spec: {restartPolicy: Never, " + _POD + "}}\n",
            "spec.parallelism"),
    "LeaderWorkerSet": ("apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\n"
                        "metadata: {name: NAME}\nspec:\n  replicas: 990\n"
                        "  leaderWorkerTemplate:\n    size: 100\n"
                        "    workerTemplate: {spec: {" + _POD + "}}\n", "spec.replicas"),
    "PodCliqueSet": ("apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: NAME}\n"
                     "spec:\n  replicas: 990\n  template:\n    cliques:\n    - name: w\n"
                     "      spec: {roleName: w, replicas: 100, podSpec: {" + _POD + "}}\n",
                     "spec.replicas"),
    "ModelServing": ("apiVersion: workload.serving.volcano.sh/v1alpha1\nkind: ModelServing\n"
                     "metadata: {name: NAME}\nspec:\n  replicas: 990\n  template:\n"
                     "    roles:\n    - name: r\n      replicas: 100\n      workerReplicas: 0\n"
                     "      entryTemplate: {spec: {" + _POD + "}}\n", "spec.replicas"),
    "VolcanoJob": ("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: NAME}\n"
                   "spec:\n  tasks:\n  - name: w\n    replicas: 99000\n"
                   "    template: {spec: {restartPolicy: OnFailure, " + _POD + "}}\n",
                   "spec.tasks[0].replicas"),
}


@pytest.mark.parametrize("kind", list(_EXPANDING))
def test_pods_created_over_one_load_are_bounded_before_any_is_made(
        kind: str, run: Run, tmp_path: Path) -> None:
    """Eleven objects of ~99,000 pods each (each within the 100,000 an object may ask
    for): the eleventh passes the 1,000,000 pods one load may create, and the run stops
    at once, naming it and the field that asks, before any pod is made (it took a minute
    and gigabytes per million pods)."""
    manifest, field = _EXPANDING[kind]
    path = _write(tmp_path, "---\n".join(manifest.replace("NAME", f"big-{i}")
                                         for i in range(11)))
    shown = kind if kind != "VolcanoJob" else "Job"
    for command in ("validate", "place"):
        start = time.perf_counter()
        result = run(command, path)
        assert time.perf_counter() - start < 10, command
        assert_one_line_error(result, f"{path}[doc 10]: {shown}/big-10: {field}: ",
                              "1,000,000 pods per load")
        assert result.stdout == ""


def test_the_pod_budget_spans_front_ends(run: Run, tmp_path: Path) -> None:
    """Ten JobSets and one LeaderWorkerSet: the budget is the load's, not a kind's."""
    jobsets, _ = _EXPANDING["JobSet"]
    lws, _ = _EXPANDING["LeaderWorkerSet"]
    path = _write(tmp_path, "---\n".join(
        [lws.replace("NAME", "lws"), *(jobsets.replace("NAME", f"js-{i}") for i in range(10))]))
    start = time.perf_counter()
    result = run("place", CLUSTER, path, "-o", "json")
    assert time.perf_counter() - start < 10
    assert_one_line_error(result, f"{path}[doc 0]: LeaderWorkerSet/lws: spec.replicas: ",
                          "asks for 99,000 pods, 1,089,010 with those before it",
                          "at most 1,000,000 pods per load")
    assert result.stdout == ""


# -- what the API server (or the kind's webhook) would refuse, found by mutating examples --

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DROP = object()


def _mutated(tmp_path: Path, example: str, doc: int, path: str, value: Any) -> Path:
    """``examples/<example>.yaml`` with the value at ``path`` (dotted, list indices as
    numbers) in document ``doc`` replaced by ``value`` (or dropped)."""
    import yaml

    docs = [d for d in yaml.safe_load_all((EXAMPLES / f"{example}.yaml").read_text())
            if d is not None]
    *steps, last = [int(s) if s.isdigit() else s for s in path.split(".")]
    node: Any = docs[doc]
    for step in steps:
        node = node[step]
    if value is DROP:
        del node[last]
    else:
        node[last] = value
    return _write(tmp_path, yaml.safe_dump_all(docs, sort_keys=False), f"{example}-bad.yaml")


@pytest.mark.parametrize(("example", "doc", "path", "value", "fragments"), [
    # ValidatePodSpec: schedulerName and priorityClassName are DNS subdomains (a pod of
    # scheduler " volcano" would be some other scheduler's pod, silently)
    ("kthena-2p2d", 0, "spec.template.roles.0.entryTemplate.spec.schedulerName", " volcano",
     ("ModelServing/sample", "entryTemplate.spec.schedulerName: invalid scheduler name")),
    ("workload-gang", 4, "items.0.spec.priorityClassName", "Training",
     ("Pod/llama-pretrain-worker-0",
      "items[0].spec.priorityClassName: invalid priority class name 'Training'")),
    # ... and restartPolicy one of Always, OnFailure, Never
    ("kueue-pod-group", 0, "spec.restartPolicy", "always",
     ("Pod/", "spec.restartPolicy: unsupported value 'always'; must be one of: Always, "
      "OnFailure, Never")),
    ("lws-exclusive", 0, "spec.leaderWorkerTemplate.workerTemplate.spec.restartPolicy", "-5%",
     ("LeaderWorkerSet/dsr1: spec.leaderWorkerTemplate.workerTemplate.spec.restartPolicy: "
      "unsupported value '-5%'",)),
    # ... and so are the scheduler names a controller copies into the pods it creates, and
    # a group's PriorityClass name
    ("volcano-job", 0, "spec.schedulerName", " volcano",
     ("Job/llm-train: spec.schedulerName: invalid scheduler name ' volcano'",)),
    ("kthena-2p2d", 0, "spec.schedulerName", "Volcano",
     ("ModelServing/sample: spec.schedulerName: invalid scheduler name 'Volcano'",)),
    ("workload-gang", 1, "spec.podGroupTemplates.0.priorityClassName", "150%",
     ("spec.podGroupTemplates[0].priorityClassName: invalid priority class name '150%'",)),
    ("workload-gang", 2, "spec.priorityClassName", "Training",
     ("spec.priorityClassName: invalid priority class name 'Training'",)),
    # a batch/v1 Job's name is its pods' job-name label value (at most 63 characters); the
    # JobSet webhook wants the Job (and Indexed pod) names it generates RFC 1035 labels
    ("kueue-job", 0, "metadata.name", "j" * 64,
     ("metadata.name: invalid Job name", "batch.kubernetes.io/job-name")),
    ("kueue-jobset", 0, "metadata.name", "t" * 58,
     ("spec.replicatedJobs[0].name: generated Job name", "-driver-0")),
    ("kueue-jobset", 0, "metadata.name", "t" * 50,
     ("spec.replicatedJobs[0].name: generated pod name", "-driver-0-0-abcde")),
    ("kueue-jobset", 0, "metadata.name", "1trainer",
     ("JobSet/1trainer: spec.replicatedJobs[0].name: generated Job name '1trainer-driver-0'",
      "DNS-1035")),
    # ValidateNode checks the capacity too when allocatable is what is read
    ("cluster-small", 1, "status.capacity.cpu", "-64",
     ("Node/node-z0-b0-r0-h0: status.capacity.cpu: must not be negative",)),
    ("cluster-small", 1, "status.capacity.pods", 1.5,
     ("Node/node-z0-b0-r0-h0: status.capacity.pods: pods must be a whole number",)),
    # a PodGang's pod is referenced once (twice: an error naming no file, from the tree)
    ("grove-podgang", 0, "spec.podgroups.1.podReferences.2.name",
     "trtllm-0-model-0-worker-4hzq7",
     ("PodGang/trtllm-0: spec.podgroups[1].podReferences[2].name: pod "
      "serving/trtllm-0-model-0-worker-4hzq7 is already referenced by podgroup",)),
    ("grove-podgang", 0, "spec.podgroups.1.podReferences.0.name",
     "trtllm-0-model-0-leader-x8k2p",
     ("spec.podgroups[1].podReferences[0].name: pod serving/trtllm-0-model-0-leader-x8k2p is "
      "already referenced by podgroup 'trtllm-0-model-0-leader'",)),
    # Volcano's JobSpec.Plugins is a map[string][]string
    ("volcano-job", 0, "spec.plugins.env", "x",
     ("Job/llm-train", "spec.plugins.env: must be a list")),
    ("volcano-job", 0, "spec.plugins.svc", [1.5],
     ("Job/llm-train", "spec.plugins.svc[0]: must be a string")),
])
@pytest.mark.parametrize("command", ["validate", "place"])
def test_fields_the_api_server_refuses_are_one_line_errors(
        command: str, example: str, doc: int, path: str, value: Any,
        fragments: tuple[str, ...], run: Run, tmp_path: Path) -> None:
    bad = _mutated(tmp_path, example, doc, path, value)
    context = EXAMPLES / ("workload-gang.yaml" if example == "cluster-small"
                          else "cluster-small.yaml")
    args = (context, bad) if command == "place" else (bad,)
    result = run(command, *args)
    if command == "validate":  # one line per problem: a shared template may give several
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        first = result.stderr.splitlines()[0]
        assert first.startswith(f"error: {bad}[doc {doc}]: "), result.stderr
        assert all(f in first for f in fragments), result.stderr
    else:
        assert_one_line_error(result, f"{bad}[doc {doc}]: ", *fragments)


@pytest.mark.parametrize(("example", "api_group"), [
    ("cluster-small", "kueue.x-k8s.io"), ("kai-podgroup", "kai.scheduler")])
@pytest.mark.parametrize("command", ["validate", "place"])
def test_a_topology_defined_twice_is_an_error(command: str, example: str, api_group: str,
                                              run: Run, tmp_path: Path) -> None:
    """As two Nodes of one name are: the second copy (maybe with other levels) was kept
    beside the first, one of them silently used."""
    import yaml

    docs = [d for d in yaml.safe_load_all((EXAMPLES / f"{example}.yaml").read_text()) if d]
    [topology] = [d for d in docs if d["kind"] == "Topology"]
    again = {**topology, "spec": {"levels": topology["spec"]["levels"][1:]}}
    bad = _write(tmp_path, yaml.safe_dump_all([*docs, again], sort_keys=False), "two.yaml")
    name = topology["metadata"]["name"]
    args = (bad, EXAMPLES / "workload-gang.yaml") if command == "place" else (bad,)
    assert_one_line_error(run(command, *args), f"{bad}[doc {len(docs)}]: Topology/{name}: ",
                          f"duplicate Topology '{name} ({api_group})', first defined at "
                          f"{bad}[doc {docs.index(topology)}]")


def test_validate_names_the_file_of_a_tree_the_cluster_levels_make_invalid(
        run: Run, tmp_path: Path) -> None:
    """A group config's required key wider than its PodGang's is found once the tree is
    built; validate names the file and document, as place does."""
    import yaml

    docs = [d for d in yaml.safe_load_all((EXAMPLES / "grove-podgang.yaml").read_text()) if d]
    spec = docs[0]["spec"]
    spec["topologyConstraint"]["packConstraint"]["required"] = "gangsched.io/rack"
    config = spec["topologyConstraintGroupConfigs"][0]["topologyConstraint"]
    config["packConstraint"]["required"] = "gangsched.io/block"
    bad = _write(tmp_path, yaml.safe_dump_all(docs, sort_keys=False), "wide.yaml")
    for command in ("validate", "place"):
        result = run(command, EXAMPLES / "cluster-small.yaml", bad)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        [line] = result.stderr.splitlines()
        assert line.startswith(f"error: {bad}[doc 0]: PodGang/serving/trtllm-0: "), line
        assert "required topology 'gangsched.io/block' is wider than its parent's" in line


@pytest.mark.parametrize("args", [("--help",), ("place", "--help"), ("cluster", "show",
                                                                      CLUSTER)],
                         ids=["help", "place help", "cluster show"])
def test_an_absurd_terminal_width_is_capped(args: tuple[str | Path, ...]) -> None:
    """Rich pads every line to the width: COLUMNS=99999999 wrote 500 MB of help."""
    done = _subprocess(*args, columns="99999999")
    assert done.returncode == 0, done.stderr
    assert done.stdout and max(map(len, done.stdout.splitlines())) <= 512
