"""Volcano Job (``batch.volcano.sh/v1alpha1``, a vcjob) from the user's side: the YAML a
user writes, ``gangsched place`` on it, and what Volcano's job controller and webhook
would make of it (one PodGroup, pods ``<job>-<task>-<index>``, the webhook's refusals)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from frontend_helpers import EXAMPLES, example, write
from typer.testing import CliRunner

from gangsched.cli.main import app

CLUSTER = EXAMPLES / "cluster-small.yaml"  # 1 zone, 2 blocks x 2 racks x 4 hosts of 8 GPUs
EXAMPLE = EXAMPLES / "volcano-job.yaml"


def run(*args: str | Path) -> Result:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, [str(a) for a in args])


def job(tasks: list[dict[str, Any]], name: str = "train", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {**spec, "tasks": tasks}}


def task(name: str, replicas: int, gpu: int = 8, **more: Any) -> dict[str, Any]:
    resources = {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpu)}} if gpu else {
        "requests": {"cpu": "1"}}
    return {"name": name, "replicas": replicas, **more, "template": {"spec": {
        "containers": [{"name": "main", "image": "x", "resources": resources}]}}}


def flat(count: int, gpu: int = 8) -> dict[str, Any]:
    """A List of ``count`` nodes without topology labels."""
    return {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
         "status": {"allocatable": {"cpu": "64", "memory": "512Gi",
                                    "nvidia.com/gpu": str(gpu), "pods": "110"}}}
        for i in range(count)]}


def place_json(*files: Path) -> tuple[Result, dict[str, Any]]:
    result = run("place", *[a for f in files for a in ("-f", f)], "-o", "json")
    assert result.exit_code in (0, 3), result.output
    return result, json.loads(result.stdout)


def node_labels() -> dict[str, dict[str, str]]:
    return {d["metadata"]["name"]: d["metadata"]["labels"] for d in example("cluster-small.yaml")
            if d["kind"] == "Node"}


# -- the example: the controller's PodGroup and pods, placed ---------------------------------


def test_example_places_the_pods_the_controller_creates() -> None:
    result, data = place_json(CLUSTER, EXAMPLE)
    assert result.exit_code == 0, result.output
    (w,) = data["workloads"]
    assert (w["kind"], w["namespace"], w["name"], w["status"], w["minimum"]) == (
        "Job", "default", "llm-train", "Admitted", 9)
    names = sorted(p["name"] for p in w["pods"])
    assert names == ["llm-train-launcher-0"] + [f"llm-train-worker-{i}" for i in range(8)]
    labels = node_labels()
    where = {p["name"]: labels[p["node"]] for p in w["pods"]}
    # the job inside one block (tier 2), each partition of 4 inside one rack (tier 1)
    assert len({v["gangsched.io/block"] for v in where.values()}) == 1
    for part in (range(4), range(4, 8)):
        assert len({where[f"llm-train-worker-{i}"]["gangsched.io/rack"] for i in part}) == 1


def test_example_tree_is_the_podgroup_the_controller_creates() -> None:
    result = run("translate", "-o", "tree", CLUSTER, EXAMPLE)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Job default/llm-train" in out
    assert "min 9 pods · requires gangsched.io/block" in out
    assert "worker  all of 2 children" in out
    assert out.count("min 4 pods · requires gangsched.io/rack") == 2
    assert result.stderr == ""  # minTaskMember of worker is what the partitions imply


# -- minAvailable, task minAvailable -----------------------------------------------------------


def test_min_available_admits_the_job_with_part_of_its_pods(tmp_path: Path) -> None:
    path = write(tmp_path, [flat(3), job([task("worker", 5)], minAvailable=3)])
    result, data = place_json(path)
    assert result.exit_code == 0, result.output  # admitted with 3 of its 5 pods
    (w,) = data["workloads"]
    assert w["status"] == "Admitted" and w["minimum"] == 3
    assert len([p for p in w["pods"] if p.get("node")]) == 3


def test_default_min_available_is_the_sum_of_the_tasks_minimums(tmp_path: Path) -> None:
    tasks = [task("ps", 1, gpu=0), task("worker", 4, minAvailable=2)]
    path = write(tmp_path, [flat(2), job(tasks)])
    result, data = place_json(path)
    (w,) = data["workloads"]
    assert w["minimum"] == 3 and w["status"] == "Admitted", result.output


def test_task_min_available_is_a_gang_of_its_own(tmp_path: Path) -> None:
    """minAvailable 2 of the job could be met by 2 workers; the ps task needs its pod."""
    tasks = [task("ps", 1, gpu=8), task("worker", 2, gpu=8, minAvailable=1)]
    path = write(tmp_path, [flat(1), job(tasks, minAvailable=2)])
    result, data = place_json(path)
    assert result.exit_code == 3
    (w,) = data["workloads"]
    assert w["status"] == "Rejected"
    assert not [p for p in w["pods"] if p.get("node")]


def test_job_without_room_for_its_minimum_places_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, [flat(3), job([task("worker", 4)])])
    result, data = place_json(path)
    assert result.exit_code == 3
    (w,) = data["workloads"]
    assert w["status"] == "Rejected" and w["minimum"] == 4
    assert not [p for p in w["pods"] if p.get("node")]


def test_pods_already_in_the_inputs_are_not_created_again(tmp_path: Path) -> None:
    bound = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "train-worker-0", "namespace": "default",
                          "annotations": {"scheduling.k8s.io/group-name": "train",
                                          "volcano.sh/task-spec": "worker"}},
             "spec": {"nodeName": "n0", "containers": [{"name": "main", "image": "x",
                      "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}
    path = write(tmp_path, [flat(2), job([task("worker", 2)]), bound])
    result = run("place", "-f", path, "-o", "wide")
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    assert [r[2] for r in rows if r[1] == "Pod"] == ["train-worker-1"]
    assert "n1" in result.stdout


def test_the_podgroup_the_controller_made_is_placed_as_it_is(tmp_path: Path) -> None:
    """A live cluster's objects: the Job, its PodGroup (named <job>-<uid>) and one pod
    already created. The PodGroup present gangs the Job's pods as it is (its minMember,
    not the Job's); no second gang of the same pods is made from the Job."""
    made = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "train-u1", "namespace": "default"},
            "spec": {"minMember": 2, "queue": "default"}}
    first = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "train-worker-0", "namespace": "default",
                          "annotations": {"scheduling.k8s.io/group-name": "train-u1",
                                          "volcano.sh/task-spec": "worker"}},
             "spec": {"containers": [{"name": "main", "image": "x",
                      "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}
    vcjob = job([task("worker", 3)])
    vcjob["metadata"]["uid"] = "u1"
    path = write(tmp_path, [flat(2), vcjob, made, first])
    result, data = place_json(path)
    assert result.exit_code == 0, result.output
    (w,) = data["workloads"]
    assert (w["kind"], w["name"], w["minimum"]) == ("PodGroup", "train-u1", 2)
    assert sorted(p["name"] for p in w["pods"]) == [f"train-worker-{i}" for i in range(3)]
    assert len([p for p in w["pods"] if p.get("node")]) == 2  # two nodes of 8 GPUs


# -- networkTopology ---------------------------------------------------------------------------


HYPERNODES = [
    {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
     "metadata": {"name": f"leaf-{i}"},
     "spec": {"tier": 1, "tierName": "leaf", "members": [
         {"type": "Node", "selector": {"exactMatch": {"name": f"n{2 * i + j}"}}}
         for j in range(2)]}}
    for i in range(2)
] + [{"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
      "metadata": {"name": "spine"},
      "spec": {"tier": 2, "tierName": "spine", "members": [
          {"type": "HyperNode", "selector": {"exactMatch": {"name": f"leaf-{i}"}}}
          for i in range(2)]}}]


def test_highest_tier_name_is_resolved_through_hypernodes(tmp_path: Path) -> None:
    spec = {"networkTopology": {"mode": "hard", "highestTierName": "leaf"}}
    path = write(tmp_path, [flat(4), *HYPERNODES, job([task("worker", 3)], **spec)])
    result, data = place_json(path)
    assert result.exit_code == 3  # one leaf holds 2 of the 3 pods
    assert data["workloads"][0]["status"] == "Rejected"
    spec["networkTopology"]["highestTierName"] = "spine"
    path = write(tmp_path, [flat(4), *HYPERNODES, job([task("worker", 3)], **spec)])
    result, data = place_json(path)
    assert result.exit_code == 0, result.output


def test_network_topology_without_any_level_is_a_warning(tmp_path: Path) -> None:
    spec = {"networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    path = write(tmp_path, [flat(2), job([task("worker", 2)], **spec)])
    result = run("place", path)
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("warning:")]
    assert f"{path}[doc 1]: Job/train: spec.networkTopology" in line
    assert "no constraint" in line


# -- fields gangsched does not model -----------------------------------------------------------


def test_depends_on_is_a_warning_not_a_silent_drop(tmp_path: Path) -> None:
    tasks = [task("ps", 1, gpu=0), task("worker", 1, dependsOn={"name": ["ps"]})]
    path = write(tmp_path, [flat(1), job(tasks)])
    result = run("place", path)
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("warning:")]
    assert f"{path}[doc 1]: Job/train: spec.tasks[1].dependsOn" in line


# -- the webhook's and the CRD's refusals: one line naming file, object and field -------------


def _edit(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    obj = job([task("ps", 1, gpu=0), task("worker", 4)])
    change(obj)
    return obj


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return change


def _partition(**policy: Any) -> Callable[[dict[str, Any]], None]:
    return _set("spec.tasks.1.partitionPolicy", policy)


INVALID = [
    (_set("spec.tasks.1.replicas", "four"), "spec.tasks[1].replicas", "integer"),
    (_set("spec.tasks.1.replicas", -1), "spec.tasks[1].replicas", "-1"),
    (_set("spec.tasks.1.minAvailable", -2), "spec.tasks[1].minAvailable", "-2"),
    (_set("spec.tasks.1.minAvailable", 5), "spec.tasks[1].minAvailable",
     "greater than replicas (4)"),
    (_set("spec.minAvailable", 6), "spec.minAvailable", "greater than the tasks' 5 replicas"),
    (_set("spec.minAvailable", -1), "spec.minAvailable", "-1"),
    (_set("spec.tasks.1.name", "ps"), "spec.tasks[1].name", "duplicate task name 'ps'"),
    (_set("spec.tasks.1.name", "Worker"), "spec.tasks[1].name", "'Worker'"),
    (_set("spec.tasks", []), "spec.tasks", "at least one task"),
    (_set("spec.tasks.1.template", None), "spec.tasks[1].template", "required"),
    (_set("spec.queue", "Bad_Queue"), "spec.queue", "'Bad_Queue'"),
    (_set("spec.networkTopology", {"highestTierAllowed": 1, "highestTierName": "leaf"}),
     "spec.networkTopology", "mutually exclusive"),
    (_partition(totalPartitions=3, partitionSize=2), "spec.tasks[1].partitionPolicy",
     "replicas (4) must equal totalPartitions x partitionSize (6)"),
    (_partition(totalPartitions=2, partitionSize=0),
     "spec.tasks[1].partitionPolicy.partitionSize", "0"),
    # upstream defaults minAvailable to 3 x 2 and then refuses it as greater than replicas;
    # the field to change is minPartitions
    (_partition(totalPartitions=2, partitionSize=2, minPartitions=3),
     "spec.tasks[1].partitionPolicy.minPartitions",
     "minPartitions (3) is greater than totalPartitions (2)"),
    (_set("metadata.name", "a" * 64), "metadata.name", "63"),
    # the longest pod name counts: <54 a's>-worker-10 has 64 characters, -worker-1 only 63
    (lambda obj: (_set("metadata.name", "a" * 54)(obj), _set("spec.tasks.1.replicas", 11)(obj)),
     "spec.tasks[1].name", "-worker-10'"),
    # lifecycle policies, as the webhook's validatePolicies checks them
    (_set("spec.policies", [{"event": "PodFailed", "action": "RestartJob"},
                            {"event": "PodFailed", "action": "AbortJob"}]),
     "spec.policies[1]", "duplicate event PodFailed across different policy"),
    (_set("spec.policies", [{"events": ["PodEvicted", "PodFailed"], "action": "RestartJob"},
                            {"event": "PodEvicted", "action": "AbortJob"}]),
     "spec.policies[1]", "duplicate event PodEvicted"),
    (_set("spec.policies", [{"event": "PodFailed", "exitCode": 3, "action": "AbortJob"}]),
     "spec.policies[0]", "must not specify event and exitCode simultaneously"),
    (_set("spec.policies", [{"action": "AbortJob"}]), "spec.policies[0]",
     "either event and exitCode should be specified"),
    (_set("spec.policies", [{"event": "PodRunning", "action": "AbortJob"}]),
     "spec.policies[0].event", "invalid policy event 'PodRunning'"),
    (_set("spec.policies", [{"event": "PodFailed", "action": "SyncJob"}]),
     "spec.policies[0].action", "invalid policy action 'SyncJob'"),
    (_set("spec.policies", [{"exitCode": 0, "action": "RestartJob"}]),
     "spec.policies[0].exitCode", "0 is not a valid error code"),
    (_set("spec.policies", [{"exitCode": 3, "action": "RestartJob"},
                            {"exitCode": 3, "action": "AbortJob"}]),
     "spec.policies[1].exitCode", "duplicate exitCode 3"),
    (_set("spec.policies", [{"event": "*", "action": "RestartJob"},
                            {"event": "PodEvicted", "action": "AbortJob"}]),
     "spec.policies", "if there's * here, no other policy should be here"),
    (_set("spec.tasks.1.policies", [{"event": "TaskCompleted", "action": "CompleteJob"},
                                    {"event": "TaskCompleted", "action": "AbortJob"}]),
     "spec.tasks[1].policies[1]", "duplicate event TaskCompleted"),
]


@pytest.mark.parametrize(("change", "field", "message"), INVALID,
                         ids=[f"{f}:{m}" for _, f, m in INVALID])
def test_invalid_job_is_a_one_line_error(tmp_path: Path, change: Callable[[dict[str, Any]], None],
                                         field: str, message: str) -> None:
    obj = _edit(change)
    name = obj["metadata"]["name"]
    path = write(tmp_path, [flat(1), obj])
    for command in ("place", "validate"):
        result = run(command, path)
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("error: ") or command == "validate"
        assert f"{path}[doc 1]" in line and f"Job/{name}" in line, line
        assert field in line and message in line, line


def test_valid_lifecycle_policies_are_accepted(tmp_path: Path) -> None:
    # exit codes and events in separate policies, one event list, a task's own policies
    obj = job([task("ps", 1, gpu=0, policies=[{"event": "TaskCompleted",
                                               "action": "CompleteJob"}]),
               task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}])],
              policies=[{"events": ["PodEvicted", "PodFailed"], "action": "RestartJob"},
                        {"exitCode": 137, "action": "AbortJob"},
                        {"event": "Unknown", "action": "RestartJob", "timeout": "1m"}])
    result = run("validate", write(tmp_path, [flat(2), obj]))
    assert result.exit_code == 0, result.output


def test_a_bad_job_places_nothing_else(tmp_path: Path) -> None:
    good = job([task("worker", 1)], name="good")
    bad = job([task("worker", 1, minAvailable=3)], name="bad")
    result = run("place", write(tmp_path, [flat(2), good, bad]))
    assert result.exit_code == 1 and result.stdout == ""


def test_vcjob_and_batch_job_of_one_name_are_two_objects(tmp_path: Path) -> None:
    batch = {"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": "train", "namespace": "default"},
             "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                 {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}}
    result = run("place", write(tmp_path, [flat(2), job([task("worker", 1)]), batch]))
    assert result.exit_code == 0, result.output


def test_example_is_a_real_upstream_shape() -> None:
    """The example keeps to the fields of the upstream CRD (no unknown-field warning)."""
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    assert [d["kind"] for d in docs] == ["Job"]
    result = run("validate", "--validate", "strict", EXAMPLE)
    assert result.exit_code == 0, result.output
    assert copy.deepcopy(docs[0])["spec"]["tasks"][1]["partitionPolicy"]["minPartitions"] == 2
