"""``gangsched place`` and ``gangsched validate`` from the user's side."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import Run, assert_one_line_error

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GOLDEN = Path(__file__).parent / "golden"
CLUSTER = EXAMPLES / "cluster-small.yaml"


def place_json(run: Run, *files: Path, cluster: Path = CLUSTER) -> dict[str, Any]:
    result = run("place", "-f", cluster, *(x for f in files for x in ("-f", f)), "-o", "json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.mark.parametrize(
    ("example", "cluster"),
    [
        ("kthena-2p2d.yaml", "cluster-small.yaml"),
        ("volcano-podgroup.yaml", "volcano-hypernodes.yaml"),
        ("workload-gang.yaml", "cluster-small.yaml"),
        ("workload-composite.yaml", "cluster-small.yaml"),
    ],
)
def test_examples_place_as_recorded(run: Run, example: str, cluster: str) -> None:
    """Golden placement of each front-end's example on a small example cluster
    (regenerate with UPDATE_GOLDEN=1 after an intended change)."""
    data = place_json(run, EXAMPLES / example, cluster=EXAMPLES / cluster)
    golden = GOLDEN / f"place-{example.removesuffix('.yaml')}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    assert data == json.loads(golden.read_text())


def test_json_output_has_the_documented_fields(run: Run) -> None:
    data = place_json(run, EXAMPLES / "kthena-2p2d.yaml")
    assert data["apiVersion"] == "gangsched.io/v1" and data["kind"] == "PlacementResult"
    [w] = data["workloads"]
    assert (w["kind"], w["namespace"], w["name"]) == ("ModelServing", "default", "sample-0")
    assert w["status"] == "Admitted" and "reason" not in w and w["minimum"] == 6
    assert len(w["pods"]) == 8
    assert all(p["name"].startswith("sample-0-") and p["node"] for p in w["pods"])
    root = w["groups"][0]
    assert root["path"] == "default/sample-0" and root["kind"] == "Group"
    assert root["pods"] == {"placed": 8, "minimum": 6, "total": 8}
    assert root["children"] == {"satisfied": 2, "minimum": 2, "total": 2}


def slot_nodes(tmp_path: Path, slots: int) -> Path:
    """A cluster whose nodes take exactly one 100m pod each."""
    docs = [
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\n"
        f"status: {{allocatable: {{cpu: 100m, memory: 1Gi, pods: 1}}}}\n"
        for i in range(slots)
    ]
    path = tmp_path / "slots.yaml"
    path.write_text("---\n".join(docs))
    return path


def test_seed_example_with_room_for_six_admits_the_minimum(run: Run, tmp_path: Path) -> None:
    result = run("place", "-f", slot_nodes(tmp_path, 6), "-f", EXAMPLES / "kthena-2p2d.yaml",
                 "-o", "json")
    assert result.exit_code == 0, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert w["status"] == "Admitted"
    pods = {p["name"] for p in w["pods"] if p["node"]}
    assert {p for p in pods if "-prefill-" in p} == {
        f"sample-0-prefill-{j}-{k}" for j in (0, 1) for k in (0, 1)}
    assert len([p for p in pods if "-decode-" in p]) == 2


def test_seed_example_with_room_for_five_places_nothing(run: Run, tmp_path: Path) -> None:
    result = run("place", "-f", slot_nodes(tmp_path, 5), "-f", EXAMPLES / "kthena-2p2d.yaml",
                 "-o", "json")
    assert result.exit_code == 3  # a workload rejected: the CI gate fails
    [w] = json.loads(result.stdout)["workloads"]
    assert w["status"] == "Rejected" and all(p["node"] is None for p in w["pods"])
    assert len(w["pods"]) == 8
    assert "decode" in w["reason"]


def test_table_output_names_the_reason(run: Run, tmp_path: Path) -> None:
    result = run("place", "-f", slot_nodes(tmp_path, 5), "-f", EXAMPLES / "kthena-2p2d.yaml")
    assert result.exit_code == 3
    assert "sample-0" in result.stdout and "decode" in result.stdout


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("kind: Node\napiVersion: v1\nmetadata: {name: [x]}\n", "metadata.name",
                     id="wrong-type"),
        pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: a\n", "invalid YAML",
                     id="invalid-yaml"),
        pytest.param("apiVersion: v1\nkind: Gadget\nmetadata: {name: a}\n", "Gadget",
                     id="unknown-kind"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    run: Run, tmp_path: Path, text: str, fragment: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    assert_one_line_error(run("place", "-f", CLUSTER, "-f", bad), str(bad), fragment)


def test_place_without_nodes_is_an_error(run: Run) -> None:
    assert_one_line_error(run("place", "-f", EXAMPLES / "kthena-2p2d.yaml"), "no Node")


def test_validate_reports_every_problem(run: Run, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "status: {allocatable: {cpu: -1}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\n"
        "spec: {priority: high, containers: [{name: c}]}\n"
    )
    result = run("validate", "-f", bad)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2
    assert "[doc 0]: Node/n1: status.allocatable.cpu" in lines[0]
    assert "[doc 1]: Pod/p1: spec.priority" in lines[1]


@pytest.mark.parametrize("cluster", ["cluster-small.yaml", "volcano-hypernodes.yaml"])
def test_validate_accepts_the_examples(run: Run, cluster: str) -> None:
    others = [f for f in sorted(EXAMPLES.glob("*.yaml"))
              if f.name not in ("cluster-small.yaml", "volcano-hypernodes.yaml")
              and (cluster != "cluster-small.yaml" or not f.name.startswith("volcano"))]
    result = run("validate", EXAMPLES / cluster, *others)  # positional files work too
    assert result.exit_code == 0, result.stderr


def test_waiting_podgroup_shows_its_minimum_and_pending_pods(run: Run, tmp_path: Path) -> None:
    """A Volcano PodGroup with fewer pods than minMember waits: the result says how many
    pods it needs and lists the pending ones (unplaced), and pods naming a PodGroup that
    does not exist wait with it."""
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: w-{i}\n  annotations:\n"
        f"    scheduling.k8s.io/group-name: {group}\nspec:\n  schedulerName: volcano\n"
        "  containers:\n  - name: c\n    resources: {requests: {cpu: 100m}}\n"
        for i, group in enumerate(["train", "train", "train", "gone"]))
    path = tmp_path / "waiting.yaml"
    path.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
                    "metadata: {name: train}\nspec: {minMember: 4}\n" + pods)
    result = run("place", "-f", slot_nodes(tmp_path, 8), "-f", path, "-o", "json")
    assert result.exit_code == 3, result.output  # waiting
    by_name = {w["name"]: w for w in json.loads(result.stdout)["workloads"]}
    train, gone = by_name["train"], by_name["gone"]
    assert (train["status"], train["minimum"]) == ("Waiting", 4)
    assert sorted(p["name"] for p in train["pods"]) == ["w-0", "w-1", "w-2"]
    assert not any(p["node"] for p in train["pods"])
    assert [p["name"] for p in gone["pods"]] == ["w-3"] and gone["status"] == "Waiting"


def gpu_gang(tmp_path: Path, resources: str, deadline: str = "") -> Path:
    """A two-pod Workload API gang (``train``) whose pods each state ``resources``."""
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: t-{i}}}\nspec:\n"
        f"  schedulerName: gangsched\n  schedulingGroup: {{podGroupName: train}}\n{deadline}"
        f"  containers:\n  - name: c\n    image: x\n    resources: {resources}\n"
        for i in range(2))
    path = tmp_path / "gang.yaml"
    path.write_text("apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\n"
                    "metadata: {name: train}\nspec:\n  schedulingPolicy:\n"
                    "    gang: {minCount: 2}\n" + pods)
    return path


def test_a_gpu_request_from_limits_only_is_named_in_the_reason(
        run: Run, tmp_path: Path) -> None:
    """Kubernetes defaults a container's requests to its limits: a pod stating only
    ``limits: {nvidia.com/gpu: 16}`` requests 16 GPUs, and the rejection says where the
    request comes from (no node of the 16 has more than 8)."""
    path = gpu_gang(tmp_path, "{limits: {nvidia.com/gpu: 16}}")
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 3, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert w["status"] == "Rejected"
    assert w["reason"].endswith("0/16 nodes are available for a pod like t-0: "
                                "16 Insufficient nvidia.com/gpu (requested through its limit)")


@pytest.mark.parametrize("resources", [
    "{requests: {nvidia.com/gpu: 16}, limits: {nvidia.com/gpu: 16}}",
    "{requests: {nvidia.com/gpu: 16}}",
], ids=["request-and-limit", "request-only"])
def test_a_stated_gpu_request_is_not_said_to_come_from_limits(
        run: Run, tmp_path: Path, resources: str) -> None:
    path = gpu_gang(tmp_path, resources)
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 3, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert w["reason"].endswith("16 Insufficient nvidia.com/gpu"), w["reason"]


@pytest.mark.parametrize("value", ["0", "-1", "2147483648", "'60'"])
def test_a_bad_active_deadline_is_one_line_naming_the_field(
        run: Run, tmp_path: Path, value: str) -> None:
    path = gpu_gang(tmp_path, "{requests: {cpu: 100m}}",
                    f"  activeDeadlineSeconds: {value}\n")
    assert_one_line_error(run("place", "-f", CLUSTER, "-f", path),
                          f"{path}[doc 1]: Pod/t-0: spec.activeDeadlineSeconds: must be")


def test_pods_with_deadlines_place_as_without(run: Run, tmp_path: Path) -> None:
    path = gpu_gang(tmp_path, "{requests: {cpu: 100m}}", "  activeDeadlineSeconds: 600\n")
    [w] = place_json(run, path)["workloads"]
    assert w["status"] == "Admitted" and all(p["node"] for p in w["pods"])


def test_min_member_over_tasks_of_different_sizes_is_reached_with_the_small_pods(
        run: Run, tmp_path: Path) -> None:
    """A Volcano PodGroup whose minMember (16) counts pods of any task: two nodes of 8 GPUs
    hold 16 one-GPU pods, but not once an 8-GPU pod takes a node. Shared fairly between
    the tasks the count is not met; the engine then reaches it with the small pods, and
    the 8-GPU pods wait as extras."""
    nodes = "---\n".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\nstatus:\n  allocatable:"
        f" {{cpu: '64', memory: 256Gi, nvidia.com/gpu: '8', pods: '110'}}\n"
        for i in range(2))
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {task}-{i}\n  annotations:\n"
        f"    scheduling.k8s.io/group-name: mixed\n    volcano.sh/task-spec: {task}\n"
        f"spec:\n  schedulerName: volcano\n  containers:\n  - name: c\n"
        f"    resources: {{limits: {{nvidia.com/gpu: '{gpu}'}}}}\n"
        for task, n, gpu in (("big", 2, 8), ("small", 16, 1)) for i in range(n))
    (tmp_path / "nodes.yaml").write_text(nodes)
    path = tmp_path / "mixed.yaml"
    path.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
                    "metadata: {name: mixed}\nspec: {minMember: 16}\n" + pods)
    result = run("place", "-f", tmp_path / "nodes.yaml", "-f", path, "-o", "json")
    assert result.exit_code == 0, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert w["status"] == "Admitted"
    placed = sorted(p["name"] for p in w["pods"] if p["node"])
    assert placed == sorted(f"small-{i}" for i in range(16))


def test_pods_asking_for_ephemeral_storage_fit_the_example_cluster_and_generated_ones(
        run: Run, tmp_path: Path) -> None:
    """Real nodes report ephemeral-storage and upstream examples (vLLM on LWS, Volcano's
    and Kthena's) request it: the example cluster and ``cluster generate``'s default
    nodes offer it, so such pods are placed rather than refused for a resource no node
    offers."""
    path = gpu_gang(tmp_path, "{requests: {cpu: '4', ephemeral-storage: 200Gi, "
                              "nvidia.com/gpu: '8'}}")
    generated = tmp_path / "generated.yaml"
    made = run("cluster", "generate", "--levels", "rack=1,host=2", "--output-file", generated)
    assert made.exit_code == 0, made.output
    for cluster in (EXAMPLES / "cluster-small.yaml", generated):
        result = run("place", "-f", cluster, "-f", path, "-o", "json")
        assert result.exit_code == 0, result.output
        [w] = json.loads(result.stdout)["workloads"]
        assert w["status"] == "Admitted" and len({p["node"] for p in w["pods"]}) == 2


BASIC_NODE = """apiVersion: v1
kind: Node
metadata: {name: n0, labels: {kubernetes.io/hostname: n0}}
status: {allocatable: {cpu: '8', memory: 64Gi, pods: '110'}}
"""


def basic_group(cpus: tuple[str, ...]) -> str:
    docs = ["""apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: g, namespace: default}
spec: {schedulingPolicy: {basic: {}}}
"""]
    docs += [f"""apiVersion: v1
kind: Pod
metadata: {{name: g-{i}, namespace: default}}
spec:
  schedulerName: gangsched
  schedulingGroup: {{podGroupName: g}}
  containers: [{{name: m, image: x, resources: {{requests: {{cpu: '{cpu}'}}}}}}]
""" for i, cpu in enumerate(cpus)]
    return "---\n".join(docs)


@pytest.mark.parametrize(("cpus", "status", "placed"), [
    (("4", "16"), "Admitted", 1),  # independent pods: the one that fits is placed
    (("16", "16"), "Rejected", 0),  # none fits
], ids=["one-fits", "none-fits"])
def test_a_basic_pod_group_is_admitted_with_the_pods_that_fit(
        run: Run, tmp_path: Path, cpus: tuple[str, ...], status: str, placed: int) -> None:
    (tmp_path / "node.yaml").write_text(BASIC_NODE)
    (tmp_path / "work.yaml").write_text(basic_group(cpus))
    result = run("place", tmp_path / "node.yaml", tmp_path / "work.yaml", "-o", "json")
    (w,) = json.loads(result.stdout)["workloads"]
    assert w["status"] == status, w
    assert sum(p["node"] is not None for p in w["pods"]) == placed
    assert result.exit_code == (0 if status == "Admitted" else 3)
    assert ("reason" in w) == (status == "Rejected")


SERVING_NO_ROLE_MINIMUM = """apiVersion: workload.serving.volcano.sh/v1alpha1
kind: ModelServing
metadata: {name: ms, namespace: default}
spec:
  schedulerName: volcano
  replicas: 1
  template:
    gangPolicy: {minRoleReplicas: {decode: 0, prefill: 0}}
    roles:
    - name: decode
      replicas: 2
      workerReplicas: 0
      entryTemplate:
        spec:
          containers: [{name: m, image: x, resources: {requests: {cpu: '2'}}}]
    - name: prefill
      replicas: 1
      workerReplicas: 0
      entryTemplate:
        spec:
          containers: [{name: m, image: x, resources: {requests: {cpu: '%s'}}}]
"""


@pytest.mark.parametrize(("prefill_cpu", "status", "placed"), [
    ("64", "Admitted", 2),  # the decode replicas fit, the prefill one fits on no node
    ("4", "Admitted", 3),
], ids=["prefill-too-big", "all-fit"])
def test_a_serving_group_of_no_role_minimum_keeps_the_replicas_that_fit(
        run: Run, tmp_path: Path, prefill_cpu: str, status: str, placed: int) -> None:
    # minRoleReplicas 0 for every role: each role replica is its own gang, independent
    # of the others
    (tmp_path / "node.yaml").write_text(BASIC_NODE)
    (tmp_path / "ms.yaml").write_text(SERVING_NO_ROLE_MINIMUM % prefill_cpu)
    result = run("place", tmp_path / "node.yaml", tmp_path / "ms.yaml", "-o", "json")
    assert result.exit_code == 0, result.output
    (w,) = json.loads(result.stdout)["workloads"]
    assert w["status"] == status, w
    assert sum(p["node"] is not None for p in w["pods"]) == placed
    if placed < len(w["pods"]):  # the replica left out is said, with the pods placed
        assert "64 cpu" in w["reason"], w
    else:
        assert "reason" not in w


RACKS_NAMED_ALIKE = """apiVersion: kueue.x-k8s.io/v1alpha1
kind: Topology
metadata: {name: default}
spec:
  levels:
  - nodeLabel: example.com/block
  - nodeLabel: example.com/rack
  - nodeLabel: kubernetes.io/hostname
""" + "".join(f"""---
apiVersion: v1
kind: Node
metadata:
  name: {b}-h{h}
  labels: {{example.com/block: {b}, example.com/rack: r0, kubernetes.io/hostname: {b}-h{h}}}
status:
  allocatable: {{cpu: '8', memory: 32Gi, pods: '110', nvidia.com/gpu: '8'}}
""" for b in ("b0", "b1") for h in range(2))

RACK_JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: q}
spec:
  parallelism: %d
  completions: %d
  template:
    metadata:
      annotations: {kueue.x-k8s.io/podset-required-topology: example.com/rack}
    spec:
      restartPolicy: Never
      containers:
      - {name: w, image: x, resources: {requests: {nvidia.com/gpu: '8'}}}
"""


@pytest.mark.parametrize(("pods", "status"), [(3, "Rejected"), (2, "Admitted")])
def test_racks_named_alike_in_two_blocks_are_two_racks(
        run: Run, tmp_path: Path, pods: int, status: str) -> None:
    # Kueue's topology: a rack label need not be unique across blocks. Each r0 holds two
    # pods; the Job's three would span both, which are two racks
    (tmp_path / "cluster.yaml").write_text(RACKS_NAMED_ALIKE)
    (tmp_path / "job.yaml").write_text(RACK_JOB % (pods, pods))
    result = run("place", tmp_path / "cluster.yaml", tmp_path / "job.yaml", "-o", "json")
    (w,) = json.loads(result.stdout)["workloads"]
    assert w["status"] == status, w
    blocks = {p["node"].split("-")[0] for p in w["pods"] if p["node"] is not None}
    assert len(blocks) == (0 if status == "Rejected" else 1)
    if status == "Rejected":
        assert "the best rack (b0/r0) holds 2" in w["reason"]


def test_a_closed_volcano_queue_makes_its_gang_wait(run: Run, tmp_path: Path) -> None:
    """The queue in the same inputs as the PodGroup, as a Volcano bundle applies it: the
    gang waits (exit 3) with Volcano's words; with the queue Open it is admitted."""
    queue = tmp_path / "queue.yaml"
    args = ("place", EXAMPLES / "cluster-small.yaml", EXAMPLES / "volcano-podgroup.yaml",
            queue, "-o", "json")
    for state, code in (("Open", 0), ("Closed", 3)):
        queue.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                         f"metadata: {{name: default}}\nspec: {{weight: 1}}\n"
                         f"status: {{state: {state}}}\n")
        result = run(*args)
        assert result.exit_code == code, result.output
        [workload] = json.loads(result.stdout)["workloads"]
        assert workload["status"] == ("Admitted" if state == "Open" else "Waiting")
        if state == "Closed":
            assert workload["reason"] == (
                "waiting for queue default: can only submit PodGroup to queue with state "
                "`Open`, queue `default` status is `Closed`")
