"""The CLI as a Kubernetes user drives it (issue 12): ``place -o table|wide|json|yaml|name``,
plain output for pipes, ``-f``/``-R``/``-``, ``-n``/``-A``/``-l``, exit codes for CI,
one-line usage errors, ``validate`` counting files, and ``explain``."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import Run, assert_one_line_error

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CLUSTER = EXAMPLES / "cluster-small.yaml"
KTHENA = EXAMPLES / "kthena-2p2d.yaml"
GANG = EXAMPLES / "workload-gang.yaml"  # namespace training: workers (4 x 8 GPUs in a rack)
COMPOSITE = EXAMPLES / "workload-composite.yaml"  # namespace inference
BOX = set("─│┃━┏┓┗┛┡┩╇╭╮╰╯├└┼┬┴═║")

PODS = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: team-a, labels: {app: web, tier: front}}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: team-b, labels: {app: db}}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: team-a, labels: {app: batch}}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "8"}}}]}
"""


@pytest.fixture
def pods(tmp_path: Path) -> Path:
    """One 4-CPU node and three loose pods in two namespaces; ``batch`` does not fit."""
    path = tmp_path / "pods.yaml"
    path.write_text(PODS)
    return path


@pytest.fixture
def small_racks(run: Run, tmp_path: Path) -> Path:
    """2 zones x 3 racks x 3 hosts of 8 GPUs: the example's 4-pod rack gang cannot fit."""
    path = tmp_path / "racks.yaml"
    result = run("cluster", "generate", "--levels", "zone=2,rack=3,host=3", "--node",
                 "cpu=64,memory=512Gi,nvidia.com/gpu=8,pods=110", "--output-file", path)
    assert result.exit_code == 0, result.output
    return path


def lines(text: str) -> list[list[str]]:
    """Plain columns split on whitespace (every cell but REASON is one word)."""
    return [line.split() for line in text.splitlines()]


# -- 1. place -o table|wide|json|yaml|name -------------------------------------------------


def test_table_is_one_row_per_workload_in_kubectl_columns(run: Run) -> None:
    result = run("place", "-f", CLUSTER, "-f", KTHENA, "-f", GANG, "-f", COMPOSITE)
    assert result.exit_code == 0, result.output
    header, *rows = lines(result.stdout)
    assert header == ["NAMESPACE", "KIND", "NAME", "STATUS", "PODS", "DOMAIN", "REASON"]
    assert [r[:5] for r in rows] == [
        ["default", "ModelServing", "sample-0", "Admitted", "8/6"],
        ["training", "PodGroup", "llama-pretrain-workers-0", "Admitted", "4/4"],
        ["training", "PodGroup", "llama-pretrain-data-loader-0", "Admitted", "2/0"],
        ["inference", "CompositePodGroup", "llm-serving-0", "Admitted", "5/5"],
    ]
    workers = rows[1]
    assert workers[5].startswith("rack=") and workers[6] == "<none>"  # all in one rack


def test_wide_adds_a_row_per_pod_with_its_node_and_domain_path(run: Run) -> None:
    result = run("place", "-f", CLUSTER, "-f", GANG, "-o", "wide")
    assert result.exit_code == 0, result.output
    header, *rows = lines(result.stdout)
    assert header == ["NAMESPACE", "KIND", "NAME", "STATUS", "PODS", "DOMAIN", "NODE",
                      "REASON"]
    data = json.loads(run("place", "-f", CLUSTER, "-f", GANG, "-o", "json").stdout)
    nodes = {p["name"]: p["node"] for w in data["workloads"] for p in w["pods"]}
    pod_rows = [r for r in rows if r[1] == "Pod"]
    assert len(pod_rows) == len(nodes) == 6
    labels = {d["metadata"]["name"]: d["metadata"]["labels"]
              for d in yaml.safe_load_all(CLUSTER.read_text()) if d["kind"] == "Node"}
    for r in pod_rows:
        namespace, _, name, status, _, path, node, _ = r
        assert (namespace, status, node) == ("training", "Placed", nodes[name])
        lab = labels[node]
        assert path == "/".join((lab["topology.kubernetes.io/zone"],
                                 lab["gangsched.io/block"], lab["gangsched.io/rack"]))
    # each workload row comes before its own pods
    assert [r[2] for r in rows if r[1] == "PodGroup"] == [
        "llama-pretrain-workers-0", "llama-pretrain-data-loader-0"]
    assert rows[0][2] == "llama-pretrain-workers-0" and rows[1][2].startswith("llama-pretrain-")


def test_json_and_yaml_are_the_same_versioned_document_without_repetition(run: Run) -> None:
    as_json = json.loads(run("place", CLUSTER, COMPOSITE, "-o", "json").stdout)
    as_yaml = yaml.safe_load(run("place", CLUSTER, COMPOSITE, "-o", "yaml").stdout)
    assert as_json == as_yaml
    assert (as_json["apiVersion"], as_json["kind"]) == ("gangsched.io/v1", "PlacementResult")
    [w] = as_json["workloads"]
    assert set(w) == {"kind", "namespace", "name", "status", "priority", "minimum", "groups",
                      "pods"}
    for g in w["groups"]:
        assert set(g) <= {"path", "kind", "satisfied", "pods", "children", "domain"}
        assert set(g["pods"]) == {"placed", "minimum", "total"}
        assert ("children" in g) == (g["kind"] == "Group")
        if "domain" in g:
            assert set(g["domain"]) == {"key", "value"}
    assert all(set(p) == {"name", "group", "node"} and p["node"] for p in w["pods"])
    text = json.dumps(as_json)
    for old in ("placed_pods", "domain_value", "satisfied_children", "admitted"):
        assert old not in text


def test_a_rejection_keeps_its_whole_reason_and_every_pod_unplaced(
        run: Run, small_racks: Path) -> None:
    result = run("place", small_racks, GANG, "-o", "json")
    assert result.exit_code == 3
    workers = next(w for w in json.loads(result.stdout)["workloads"]
                   if w["name"] == "llama-pretrain-workers-0")
    assert workers["status"] == "Rejected"
    assert "inside one rack" in workers["reason"] and "holds 3" in workers["reason"]
    assert [p["node"] for p in workers["pods"]] == [None] * 4


def test_a_table_row_says_why_no_node_takes_a_pod(run: Run, tmp_path: Path) -> None:
    """The row's reason is the blocking group's clause; when that finds room for no pod,
    kube-scheduler's account of the nodes says why (a selector no node matches would
    otherwise read as a shortage)."""
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeSelector": {"kubernetes.io/os": "windows"}, "containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}}
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod))
    result = run("place", CLUSTER, path)
    assert result.exit_code == 3, result.output
    [row] = result.stdout.splitlines()[1:]
    assert row.endswith("web: needs 1 pod x 100m cpu; room for 0 pods; 0/16 nodes are "
                        "available for a pod of web: 16 node(s) didn't match Pod's node "
                        "affinity/selector"), row
    # a shortage is counted the same way
    del pod["spec"]["nodeSelector"]
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1000"
    path.write_text(yaml.safe_dump(pod))
    [row] = run("place", CLUSTER, path).stdout.splitlines()[1:]
    assert row.endswith("web: needs 1 pod x 1000 cpu; room for 0 pods; 0/16 nodes are "
                        "available for a pod of web: 16 Insufficient cpu"), row
    # and when the best domain of a required level holds no pod (a Kueue flavor's labels)
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "100m"
    pod["spec"]["nodeSelector"] = {"kubernetes.io/os": "windows"}
    pod["metadata"].update(labels={"kueue.x-k8s.io/queue-name": "q"}, annotations={
        "kueue.x-k8s.io/podset-required-topology": "gangsched.io/rack"})
    path.write_text(yaml.safe_dump(pod))
    [row] = run("place", CLUSTER, path).stdout.splitlines()[1:]
    assert "holds 0; 0/16 nodes are available for a pod of " in row, row
    assert row.endswith("16 node(s) didn't match Pod's node affinity/selector"), row


def test_name_output_is_kind_slash_name(run: Run) -> None:
    result = run("place", CLUSTER, KTHENA, GANG, "-o", "name")
    assert result.stdout.splitlines() == [
        "modelserving/sample-0", "podgroup/llama-pretrain-workers-0",
        "podgroup/llama-pretrain-data-loader-0"]


def test_warnings_stay_in_the_document(run: Run, tmp_path: Path) -> None:
    node = next(d for d in yaml.safe_load_all(CLUSTER.read_text()) if d["kind"] == "Node")
    node["metadata"]["oops"] = 1
    path = tmp_path / "n.yaml"
    path.write_text(yaml.safe_dump(node))
    result = run("place", "--validate=warn", path, "-o", "json")
    assert result.exit_code == 0, result.output
    [warning] = json.loads(result.stdout)["warnings"]
    assert "metadata.oops: unknown field" in warning
    assert result.stderr.startswith("warning: ")


# -- 2. output for pipes ---------------------------------------------------------------------


def test_piped_output_has_no_colour_and_no_box(run: Run, cluster_256: Path) -> None:
    for args in (("place", CLUSTER, KTHENA), ("place", CLUSTER, KTHENA, "-o", "wide"),
                 ("cluster", "show", CLUSTER), ("cluster", "show", cluster_256),
                 ("simulate", "--list"), ("bench", "load", "--nodes", "20")):
        result = run(*args)
        assert result.exit_code == 0, (args, result.output)
        assert "\x1b" not in result.stdout and not BOX & set(result.stdout), args


def test_on_a_terminal_the_status_is_coloured_unless_no_color(run: Run) -> None:
    """Rich takes FORCE_COLOR as a terminal (as a real one is tested below)."""
    coloured = run("place", CLUSTER, KTHENA, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in coloured.stdout and "Admitted" in coloured.stdout
    plain = run("place", CLUSTER, KTHENA, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b" not in plain.stdout and "Admitted" in plain.stdout
    tree = run("cluster", "show", CLUSTER, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "└──" in tree.stdout  # a terminal gets the tree drawn, colours or not
    assert "└" not in run("cluster", "show", CLUSTER).stdout


def _gangsched(*args: str | Path, terminal: bool, env: dict[str, str] | None = None
               ) -> tuple[int, str]:
    """The installed entry point in a subprocess, stdout a pipe or a pseudo-terminal."""
    command = [sys.executable, "-m", "gangsched.cli.main", *map(str, args)]
    environ = {k: v for k, v in os.environ.items()
               if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    environ.update({"COLUMNS": "200", "TERM": "xterm-256color", **(env or {})})
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, env=environ,
                              timeout=120, check=False)
        return done.returncode, done.stdout
    leader, follower = pty.openpty()
    with subprocess.Popen(command, stdout=follower, stderr=subprocess.DEVNULL,
                          env=environ) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(timeout=120)
    os.close(leader)
    return code, b"".join(chunks).decode()


def test_a_real_pipe_and_a_real_terminal(tmp_path: Path) -> None:
    code, piped = _gangsched("place", CLUSTER, KTHENA, terminal=False)
    assert code == 0 and piped.startswith("NAMESPACE   KIND")
    assert "\x1b" not in piped
    code, shown = _gangsched("place", CLUSTER, KTHENA, terminal=True)
    assert code == 0 and "\x1b[" in shown and "Admitted" in shown
    code, shown = _gangsched("place", CLUSTER, KTHENA, terminal=True, env={"NO_COLOR": "1"})
    assert code == 0 and "\x1b[3" not in shown and "Admitted" in shown


def test_no_headers(run: Run) -> None:
    result = run("place", CLUSTER, KTHENA, GANG, "--no-headers")
    assert [r[2] for r in lines(result.stdout)] == [
        "sample-0", "llama-pretrain-workers-0", "llama-pretrain-data-loader-0"]
    wide = run("place", CLUSTER, GANG, "-o", "wide", "--no-headers")
    assert "NAMESPACE" not in wide.stdout and len(wide.stdout.splitlines()) == 8


# -- 3. conventions: -f, -R, -, -n, -A, -l ---------------------------------------------------


def test_directories_read_top_level_files_unless_recursive(run: Run, tmp_path: Path) -> None:
    top = tmp_path / "manifests"
    (top / "apps" / "more").mkdir(parents=True)
    (top / "cluster.yaml").write_text(CLUSTER.read_text())
    (top / "apps" / "kthena.yml").write_text(KTHENA.read_text())
    (top / "apps" / "more" / "gang.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List",
                    "items": list(yaml.safe_load_all(GANG.read_text()))}))
    (top / "notes.txt").write_text("not a manifest")
    (top / "docs" / "drafts").mkdir(parents=True)
    (top / "docs" / "drafts" / "README.md").write_text("no manifests here")
    flat = run("place", "-f", top, "-o", "name")
    assert flat.exit_code == 0 and flat.stdout == ""  # only the cluster: nothing to place
    deep = run("place", "-R", "-f", top, "-o", "name")
    assert deep.stdout.splitlines() == ["modelserving/sample-0",
                                        "podgroup/llama-pretrain-workers-0",
                                        "podgroup/llama-pretrain-data-loader-0"]
    assert_one_line_error(run("place", "-f", top / "docs"), "no .yaml, .yml or .json files",
                          "use -R")
    assert run("validate", "--recursive", "--filename", top).stdout == "3 files valid\n"


def test_stdin_is_a_dash(run: Run) -> None:
    result = run("place", "-f", CLUSTER, "-f", "-", "-o", "name", input=KTHENA.read_text())
    assert result.exit_code == 0, result.output
    assert result.stdout == "modelserving/sample-0\n"


def test_namespace_and_all_namespaces(run: Run) -> None:
    args = ("place", CLUSTER, KTHENA, GANG, COMPOSITE, "-o", "name")
    assert run(*args, "-n", "training").stdout.splitlines() == [
        "podgroup/llama-pretrain-workers-0", "podgroup/llama-pretrain-data-loader-0"]
    assert run(*args, "--namespace", "inference").stdout == "compositepodgroup/llm-serving-0\n"
    assert len(run(*args, "-A").stdout.splitlines()) == 4
    assert len(run(*args, "-n", "training", "-A").stdout.splitlines()) == 4  # -A wins
    assert run(*args, "-n", "nowhere").stdout == ""
    table = run("place", CLUSTER, GANG, "-n", "training")
    assert lines(table.stdout)[0][0] == "KIND"  # one namespace: no NAMESPACE column
    result = run(*args, "-n", "Not_A_Namespace")
    assert result.exit_code == 2 and result.stderr.startswith("error: ")


def test_label_selector_equality_and_set_based(run: Run, pods: Path) -> None:
    def names(*selector: str) -> list[str]:
        result = run("place", pods, "-o", "name", *selector)
        assert result.exit_code in (0, 3), result.output
        return result.stdout.splitlines()

    assert names() == ["pod/web", "pod/db", "pod/batch"]
    assert names("-l", "app=web") == ["pod/web"]
    assert names("-l", "app==web,tier=front") == ["pod/web"]
    assert names("-l", "app!=web") == ["pod/db", "pod/batch"]
    assert names("--selector", "app in (web, db)") == ["pod/web", "pod/db"]
    assert names("-l", "app notin (web,db)") == ["pod/batch"]
    assert names("-l", "tier") == ["pod/web"]
    assert names("-l", "!tier") == ["pod/db", "pod/batch"]
    assert names("-l", "app in (web,db)", "-n", "team-a") == ["pod/web"]
    assert names("-l", "app=nothing") == []


@pytest.mark.parametrize("selector", ["app in (web", "a=b=c", "bad key!=x", "app in ()", ""])
def test_a_bad_selector_is_a_usage_error(run: Run, pods: Path, selector: str) -> None:
    result = run("place", pods, "-l", selector)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and "--selector" in line


def test_selector_matches_the_workloads_object(run: Run, tmp_path: Path) -> None:
    """A ModelServing's ServingGroups are matched by the ModelServing's labels."""
    labelled = KTHENA.read_text().replace("  name: sample\n",
                                          "  name: sample\n  labels: {team: llm}\n", 1)
    path = tmp_path / "ms.yaml"
    path.write_text(labelled)
    assert run("place", CLUSTER, path, "-l", "team=llm", "-o", "name").stdout == (
        "modelserving/sample-0\n")
    assert run("place", CLUSTER, path, "-l", "team=other", "-o", "name").stdout == ""
    assert "kind: PodGroup" in run("translate", path, "-l", "team=llm").stdout
    assert_one_line_error(run("translate", path, "-l", "team=other"), "match -n/-l")


def _options(command: Any, path: str = "gangsched") -> list[tuple[str, Any]]:
    found = [(path, p) for p in command.params]
    for name, sub in getattr(command, "commands", {}).items():
        found += _options(sub, f"{path} {name}")
    return found


def test_one_meaning_per_flag_across_every_command() -> None:
    """-o is always the output format, each short flag means one long option everywhere,
    no option is called --output for a file or directory."""
    import typer.main

    from gangsched.cli.main import app

    meaning: dict[str, set[str]] = {}
    for where, p in _options(typer.main.get_command(app)):
        opts = [o for o in getattr(p, "opts", []) if o.startswith("-")]
        longs = sorted(o for o in opts if o.startswith("--"))
        for short in (o for o in opts if not o.startswith("--")):
            meaning.setdefault(short, set()).add(longs[0] if longs else "?")
        if "-o" in opts:
            assert "--output" in opts and hasattr(p.type, "choices"), where
        if "--output" in opts:
            assert "-o" in opts, where
    assert {k: v for k, v in meaning.items() if len(v) > 1} == {}
    assert meaning["-f"] == {"--file"} and meaning["-n"] == {"--namespace"}  # --filename too
    assert meaning["-l"] == {"--selector"} and meaning["-A"] == {"--all-namespaces"}
    assert meaning["-R"] == {"--recursive"} and meaning["-v"] == {"--verbose"}


def test_every_help_renders_cleanly(run: Run) -> None:
    """No ``raw backquotes``, no ``<bool>`` type tags (typer 0.29), flags listed."""
    import typer.main

    from gangsched.cli.main import app

    commands = {w for w, _ in _options(typer.main.get_command(app))}
    assert {"gangsched place", "gangsched explain", "gangsched bench quality",
            "gangsched cluster generate", "gangsched simulate"} <= commands
    for command in sorted(commands):
        result = run(*command.split()[1:], "--help")
        assert result.exit_code == 0, command
        assert "``" not in result.stdout and "<bool>" not in result.stdout, command
        assert "--help" in result.stdout
    top = run("--help").stdout
    assert "Exit status" in top and "3 a workload rejected" in " ".join(top.split())


@pytest.mark.parametrize("group", [(), ("cluster",), ("bench",)])
def test_command_lists_give_one_line_per_command(run: Run, group: tuple[str, ...]) -> None:
    # as kubectl's: each command and its summary on one row (wide enough a terminal), not
    # a docstring's line breaks
    text = run(*group, "--help").stdout
    panel = text.split("Commands", 1)[1].split("╰", 1)[0].splitlines()[1:]
    assert len(panel) >= 2
    for row in panel:
        name, summary = row.strip("│ ").split(None, 1)
        assert not name[0].isspace() and summary.strip().endswith("."), row


def test_bench_and_generate_keep_o_for_formats(run: Run, tmp_path: Path) -> None:
    result = run("bench", "load", "--nodes", "20", "-o", "json")
    assert json.loads(result.stdout)["nodes"] == 20
    generated = run("cluster", "generate", "--levels", "rack=1,host=2", "-o", "json")
    assert json.loads(generated.stdout)["kind"] == "List"
    file = tmp_path / "c.yaml"
    assert run("cluster", "generate", "--levels", "rack=1,host=2", "--output-file",
               file).exit_code == 0
    assert file.read_text().startswith("---\napiVersion")
    assert run("cluster", "generate", "--levels", "rack=1,host=2", "-o", file).exit_code == 2
    assert run("bench", "quality", "-n", "3").exit_code == 2  # --instances, no -n


# -- usage errors: one line, exit 2 --------------------------------------------------------


@pytest.mark.parametrize("args", [
    ("place", "--outpt", "json"),
    ("place", "-o", "xml", "x.yaml"),
    ("explain",),
    ("cluster", "generate"),
    ("bench", "load", "--nodes", "many"),
    ("simulate", "--seeds", "x"),
    ("completion", "tcsh"),
    ("nonsense",),
], ids=lambda a: "-".join(a))
def test_usage_errors_are_one_line(run: Run, args: tuple[str, ...]) -> None:
    result = run(*args)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and "--help" in line
    assert result.stdout == "" and not BOX & set(result.stderr)


# -- 4. exit codes ---------------------------------------------------------------------------


def test_exit_codes_for_ci(run: Run, pods: Path, small_racks: Path, tmp_path: Path) -> None:
    assert run("place", CLUSTER, KTHENA).exit_code == 0
    assert run("place", CLUSTER).exit_code == 0  # nothing to place
    assert run("place", pods).exit_code == 3  # batch does not fit
    assert run("place", pods, "--allow-rejected").exit_code == 0
    assert run("place", pods, "-l", "app=web").exit_code == 0  # the rejected one left out
    assert run("place", small_racks, GANG, "-o", "name").exit_code == 3
    waiting = tmp_path / "waiting.yaml"  # a gang of 4 with one pod: it waits
    waiting.write_text(GANG.read_text().split("---\napiVersion: v1\nkind: Pod")[0])
    result = run("place", CLUSTER, waiting, "-o", "json")
    statuses = {w["name"]: w["status"] for w in json.loads(result.stdout)["workloads"]}
    assert "Waiting" in statuses.values() and result.exit_code == 3
    assert run("place", "--allow-rejected", CLUSTER, waiting).exit_code == 0


def test_bad_input_wins_over_a_rejection(run: Run, pods: Path, tmp_path: Path) -> None:
    cycle = "".join(
        f"---\napiVersion: scheduling.k8s.io/v1alpha3\nkind: CompositePodGroup\n"
        f"metadata: {{name: {name}, namespace: inference}}\n"
        f"spec:\n  parentCompositePodGroupName: {parent}\n"
        f"  workloadRef: {{workloadName: llm-serving, templateName: serving}}\n"
        f"  schedulingPolicy: {{gang: {{minGroupCount: 1}}}}\n"
        for name, parent in (("loop-a", "loop-b"), ("loop-b", "loop-a")))
    broken = tmp_path / "cycle.yaml"
    broken.write_text(cycle)
    result = run("place", pods, broken, "--no-headers")
    assert result.exit_code == 1
    statuses = {r[2]: r[3] for r in lines(result.stdout)}
    assert statuses == {"web": "Admitted", "db": "Admitted", "batch": "Rejected",
                        "loop-a": "Invalid"}
    assert [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def test_validate_counts_every_file_it_read(run: Run, tmp_path: Path) -> None:
    files = sorted(EXAMPLES.glob("*.yaml"))
    assert len(files) >= 6
    result = run("validate", "-f", EXAMPLES)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{len(files)} files valid\n"
    assert run("validate", CLUSTER).stdout == "1 file valid\n"
    assert run("validate", "-f", "-", input=CLUSTER.read_text()).stdout == "1 file valid\n"


# -- 6. explain ------------------------------------------------------------------------------


def test_explain_a_rejection_level_by_level(run: Run, small_racks: Path) -> None:
    result = run("explain", "PodGroup/llama-pretrain-workers-0", "-f", small_racks, "-f", GANG)
    assert result.exit_code == 3, result.output
    text = result.stdout
    assert text.startswith("PodGroup training/llama-pretrain-workers-0: Rejected")
    assert "inside one rack; the best rack (z0-r0) holds 3" in text
    assert "rack (gangsched.io/rack): 6 domains offered" in text
    assert "0 passed the capacity bound" in text
    assert text.count("cut: holds 3 of the 4 needed") >= 6
    assert "best: rack z0-r0, holds 3" in text


def test_explain_as_data_and_name_forms(run: Run, small_racks: Path) -> None:
    args = ("-f", small_racks, "-f", GANG, "-o", "json")
    for name in ("podgroup/llama-pretrain-workers-0", "llama-pretrain-workers-0",
                 "training/llama-pretrain-workers-0",
                 "podgroup.scheduling.k8s.io/llama-pretrain-workers-0"):
        result = run("explain", name, *args)
        assert result.exit_code == 3, (name, result.output)
    data = json.loads(result.stdout)
    assert data["workload"]["status"] == "Rejected"
    [first, *_] = data["attempts"]
    racks = next(t for t in first["levels"] if t["key"] == "gangsched.io/rack")
    assert racks["needed"] == 4 and racks["best"] == "z0-r0"
    assert [(d["label"], d["holds"], d["passed"]) for d in racks["domains"]][:2] == [
        ("z0-r0", 3, False), ("z0-r1", 3, False)]


def test_explain_an_admission_and_the_turn_it_had(run: Run) -> None:
    result = run("explain", "sample-0", "-f", CLUSTER, "-f", GANG, "-f", KTHENA)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ModelServing default/sample-0: Admitted")
    assert "after the minimums of 2 workloads" in result.stdout  # priority 1000 first
    assert "Attempt 1: the minimum, pods packed onto the fullest nodes: placed" in (
        result.stdout)


def test_explain_names_the_minimums_a_pod_count_implies(run: Run, tmp_path: Path) -> None:
    # minMember 3 over a task of 2 pods (minTaskMember 1) and one of 1: task a needs both
    group = """apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: default}
spec: {minMember: 3, minTaskMember: {a: 1, b: 1}, queue: default}
"""
    pods = [f"""apiVersion: v1
kind: Pod
metadata:
  name: pg-{task}-{i}
  namespace: default
  labels: {{volcano.sh/task-spec: {task}}}
  annotations: {{scheduling.k8s.io/group-name: pg}}
spec:
  schedulerName: volcano
  containers: [{{name: main, image: x, resources: {{requests: {{cpu: 100m}}}}}}]
""" for task, i in (("a", 0), ("a", 1), ("b", 0))]
    path = tmp_path / "pg.yaml"
    path.write_text("---\n".join([group, *pods]))
    result = run("explain", "pg", "-f", CLUSTER, "-f", path)
    assert result.exit_code == 0, result.output
    assert ("Attempt 1: the minimum, each child asked for what its group's pod count "
            "leaves to it, pods packed onto the fullest nodes: placed") in result.stdout
    result = run("explain", "pg", "-f", CLUSTER, "-f", path, "-o", "json")
    assert json.loads(result.stdout)["attempts"][0]["minimum"] == "implied"


def gang_yaml(name: str, pods: int, gpu: int = 8, priority: int = 0) -> list[str]:
    """A Workload API PodGroup of ``pods`` pods of ``gpu`` GPUs inside one rack, and its
    pods, as YAML documents."""
    group = f"""apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: default}}
spec:
  priority: {priority}
  schedulingPolicy: {{gang: {{minCount: {pods}}}}}
  schedulingConstraints: {{topology: [{{key: gangsched.io/rack}}]}}
"""
    return [group, *(f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}-{i}, namespace: default}}
spec:
  schedulerName: gangsched
  schedulingGroup: {{podGroupName: {name}}}
  containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: "{gpu}"}}}}}}]
""" for i in range(pods))]


def busy_yaml(node: str, gpus: int) -> str:
    """A running pod holding ``gpus`` GPUs of ``node``."""
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: busy-{node}, namespace: other}}
spec:
  nodeName: {node}
  containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}}}]
"""


def racks_of(run: Run, tmp_path: Path, hosts: int) -> Path:
    racks = tmp_path / "racks.yaml"
    assert run("cluster", "generate", "--levels", f"zone=1,rack=2,host={hosts}", "--node",
               "cpu=64,memory=512Gi,nvidia.com/gpu=8,pods=110",
               "--output-file", racks).exit_code == 0
    return racks


def test_explain_replays_the_order_place_chose(run: Run, tmp_path: Path) -> None:
    # two racks of two 8-GPU nodes; a one-pod gang then two two-pod gangs, each in one
    # rack: in input order the one-pod gang leaves no rack for the last gang, so place's
    # look-ahead rejects the one-pod gang instead, and explain tells that same story
    racks = racks_of(run, tmp_path, 2)
    gangs = tmp_path / "gangs.yaml"
    gangs.write_text("---\n".join(gang_yaml("one", 1) + gang_yaml("a", 2) + gang_yaml("b", 2)))
    placed = run("place", "-f", racks, "-f", gangs)
    assert [r[:4] for r in lines(placed.stdout)[1:]] == [
        ["default", "PodGroup", "one", "Rejected"], ["default", "PodGroup", "a", "Admitted"],
        ["default", "PodGroup", "b", "Admitted"]], placed.output
    one = run("explain", "PodGroup/one", "-f", racks, "-f", gangs)
    assert one.exit_code == 3
    assert "after the minimums of 2 workloads" in one.stdout
    assert "Attempt 1: the minimum, pods packed onto the fullest nodes: no placement" in (
        one.stdout)
    b = run("explain", "PodGroup/b", "-f", racks, "-f", gangs)
    assert b.exit_code == 0
    assert "after the minimums of 1 workload " in b.stdout
    assert ": placed" in b.stdout


def test_place_keeps_whole_nodes_for_the_gangs_that_need_them(run: Run, tmp_path: Path) -> None:
    # rack r0: one whole 8-GPU node and one half node free; rack r1: four half nodes. The
    # high-priority gang of three 4-GPU pods fits r0 tightest, but there it would break
    # the only whole node the later one-node gang needs: place takes r1's half nodes
    racks = racks_of(run, tmp_path, 4)
    busy = {"node-z0-r0-h1": 4, "node-z0-r0-h2": 8, "node-z0-r0-h3": 8,
            **{f"node-z0-r1-h{h}": 4 for h in range(4)}}
    batch = tmp_path / "batch.yaml"
    batch.write_text("---\n".join([busy_yaml(n, g) for n, g in busy.items()]
                                  + gang_yaml("small", 3, gpu=4, priority=10)
                                  + gang_yaml("big", 1)))
    result = run("place", "-f", racks, "-f", batch, "-o", "wide")
    assert result.exit_code == 0, result.output
    rows = {r[2]: r for r in lines(result.stdout)[1:]}
    assert rows["small"][3] == rows["big"][3] == "Admitted"
    assert {rows[f"small-{i}"][6].rsplit("-", 1)[0] for i in range(3)} == {"node-z0-r1"}
    assert rows["big-0"][6] == "node-z0-r0-h0"


def test_explain_errors(run: Run, pods: Path) -> None:
    assert_one_line_error(run("explain", "nothing", "-f", pods), "no workload 'nothing'",
                          "Pod/web")
    assert_one_line_error(run("explain", "web", "-f", pods, "-n", "team-b"), "team-b")
    assert run("explain", "pod/web", "-f", pods, "-n", "team-a").exit_code == 0
    assert run("explain", "batch", "-f", pods).exit_code == 3
    assert run("explain", "pod/team-a/web", "-f", pods).exit_code == 0
    assert_one_line_error(run("explain", "team-a/web/x", "-f", pods),
                          "no workload of kind 'team-a'", "there are pod")


@pytest.mark.parametrize("ref", ["", "pod/", "/web", "pod//web", "pod/team-a/web/x"])
def test_explain_refuses_what_cannot_name_a_workload(run: Run, pods: Path, ref: str) -> None:
    """A usage error (exit 2), not a search for a workload called ''."""
    result = run("explain", ref, "-f", pods)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: Invalid value for WORKLOAD: {ref!r} is not KIND/NAME, "
                           "NAMESPACE/NAME or NAME (see '"), line


def test_explain_asks_for_kind_and_namespace_when_ambiguous(run: Run, tmp_path: Path) -> None:
    twice = tmp_path / "twice.yaml"
    twice.write_text(PODS.replace("name: db, namespace: team-b", "name: web, namespace: team-b"))
    assert_one_line_error(run("explain", "web", "-f", twice), "names several workloads",
                          "-n")
    assert run("explain", "web", "-f", twice, "-n", "team-b").exit_code == 0
