"""Shapes found by running the projects' own example and test manifests through the CLI
(kubernetes-sigs/jobset, kueue, lws; ai-dynamo/grove; kai-scheduler; volcano-sh/volcano,
kthena): each test is a trimmed copy of such a manifest's shape, written here, and checks
what ``gangsched`` makes of it from the user's side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import Run, assert_one_line_error

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = EXAMPLES / "cluster-small.yaml"  # a Kueue Topology: zone, block, rack, hostname


def placed(run: Run, tmp_path: Path, text: str, *extra: str | Path) -> dict[str, Any]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    result = run("place", "-f", CLUSTER, *extra, "-f", path, "-o", "json")
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


# -- batch/v1 Job defaults: neither parallelism nor completions is one pod ----------------

# jobset site/static/examples/depends-on: replicated Jobs whose template sets no counts;
# JobSet defaults completionMode to Indexed and the Job defaults both counts to 1.
DEPENDS_ON = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: depends-on
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  replicatedJobs:
  - name: initializer
    template:
      spec:
        template:
          spec:
            containers:
            - {name: initializer, image: busybox, resources: {requests: {cpu: "1"}}}
  - name: worker
    dependsOn: [{name: initializer, status: Complete}]
    template:
      spec:
        parallelism: 4
        completions: 4
        template:
          spec:
            containers:
            - {name: worker, image: busybox, resources: {requests: {cpu: "1"}}}
"""


def test_jobset_job_without_counts_is_one_indexed_pod(run: Run, tmp_path: Path) -> None:
    [w] = placed(run, tmp_path, DEPENDS_ON)["workloads"]
    assert (w["kind"], w["name"], w["status"]) == ("JobSet", "depends-on", "Admitted")
    names = sorted(p["name"].rsplit("-", 1)[0] for p in w["pods"])
    assert names == ["depends-on-initializer-0-0", *(f"depends-on-worker-0-{i}"
                                                     for i in range(4))]
    assert w["minimum"] == 5


INDEXED_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: single
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  completionMode: Indexed
  PARALLELISM
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox, resources: {requests: {cpu: "1"}}}
"""


def test_indexed_job_without_counts_is_one_pod(run: Run, tmp_path: Path) -> None:
    [w] = placed(run, tmp_path, INDEXED_JOB.replace("PARALLELISM", ""))["workloads"]
    assert (w["kind"], w["name"], w["minimum"]) == ("Job", "single", 1)
    [pod] = w["pods"]
    assert pod["name"].startswith("single-0-")


def test_indexed_job_with_parallelism_but_no_completions_is_still_refused(
        run: Run, tmp_path: Path) -> None:
    # Only when both are unset does the Job default them; the API server refuses this one.
    path = tmp_path / "in.yaml"
    path.write_text(INDEXED_JOB.replace("PARALLELISM", "parallelism: 2"))
    result = run("validate", path)
    assert_one_line_error(result, "in.yaml[doc 0]: Job/single: spec.completions: ",
                          "when completionMode is Indexed, completions must be set")


# -- a JobSet without replicated Jobs ----------------------------------------------------

# jobset config/samples/batch_v1alpha2_jobset.yaml: replicatedJobs is optional in the API
# and the JobSet webhook accepts none; such a JobSet creates no Jobs and no pods.
EMPTY_JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  labels:
    app.kubernetes.io/name: jobset
  name: jobset-sample
spec:
  # TODO(user): Add fields here
"""


def test_jobset_without_replicated_jobs_is_valid_and_places_nothing(
        run: Run, tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(EMPTY_JOBSET)
    result = run("validate", path)
    assert result.exit_code == 0, result.output
    assert "1 file valid" in result.stdout
    assert placed(run, tmp_path, EMPTY_JOBSET)["workloads"] == []
    # queued by Kueue: nothing to place, so it waits (Kueue makes no Workload of no
    # PodSets), neither an error nor admitted
    path.write_text(EMPTY_JOBSET.replace("    app.kubernetes.io/name: jobset",
                                         "    kueue.x-k8s.io/queue-name: user-queue"))
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 3, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert (w["kind"], w["name"], w["status"]) == ("JobSet", "jobset-sample", "Waiting")
    assert w["pods"] == []


# -- Volcano Job lifecycle policies the webhook denies -----------------------------------

# volcano example/invalid_jobs/duplicatedPolicyEvent-webhook-deny.yaml: "this job will be
# rejected because one event should not have different action"
DUPLICATED_POLICY_EVENT = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: test-job-webhook-disallow
spec:
  schedulerName: volcano
  minAvailable: 1
  tasks:
  - replicas: 2
    name: task-1
    template:
      spec:
        containers:
        - {image: nginx, name: nginx, resources: {requests: {cpu: "1"}}}
        restartPolicy: OnFailure
  policies:
  - event: PodFailed
    action: RestartJob
  - event: PodFailed
    action: AbortJob
"""


def test_vcjob_with_one_event_in_two_policies_is_refused(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(DUPLICATED_POLICY_EVENT)
    for command in (("validate", path), ("place", "-f", CLUSTER, "-f", path)):
        result = run(*command)
        assert_one_line_error(result, "in.yaml[doc 0]: Job/test-job-webhook-disallow: "
                              "spec.policies[1]: duplicate event PodFailed across "
                              "different policy")
    path.write_text(DUPLICATED_POLICY_EVENT.replace("  - event: PodFailed\n    action: Abort",
                                                    "  - event: PodEvicted\n    action: Abort"))
    assert placed(run, tmp_path, path.read_text())["workloads"][0]["status"] == "Admitted"


# -- KAI topology annotations on a batch Job ---------------------------------------------

# kai-scheduler docs/topology/README.md: a batch/v1 Job annotated with kai.scheduler/topology
# and a required (and/or preferred) placement level; KAI's podgrouper copies the top
# owner's annotations into the Job's PodGroup topologyConstraint, and the scheduler then
# places the whole workload inside one domain of that level.
KAI_TOPOLOGY_JOB = """\
apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata:
  name: cluster-topology
spec:
  levels:
  - nodeLabel: topology.kubernetes.io/zone
  - nodeLabel: gangsched.io/rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    kai.scheduler/topology: TOPOLOGY
    kai.scheduler/topology-required-placement: gangsched.io/rack
MORE
spec:
  parallelism: 5
  completions: 5
  template:
    metadata:
      labels: {kai.scheduler/queue: default-queue}
    spec:
      schedulerName: kai-scheduler
      restartPolicy: Never
      containers:
      - name: main
        image: ubuntu
        resources:
          limits: {nvidia.com/gpu: "8"}
"""


def _kai_job(topology: str = "cluster-topology", more: str = "") -> str:
    return KAI_TOPOLOGY_JOB.replace("TOPOLOGY", topology).replace("MORE\n", more)


def test_kai_job_topology_annotations_constrain_its_podgroup(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(_kai_job())
    result = run("translate", "-o", "tree", "-f", path)
    assert result.exit_code == 0, result.output
    assert "PodGroup default/pg-train" in result.stdout
    assert "requires gangsched.io/rack" in result.stdout
    # a rack holds 4 of the 5 pods (8 GPUs each, 4 nodes of 8): those run together in one
    # rack, the fifth waits (minMember 1 by default), none lands in another rack
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json", "--allow-rejected")
    [w] = json.loads(result.stdout)["workloads"]
    assert (w["kind"], w["name"]) == ("PodGroup", "pg-train")
    nodes = [p["node"] for p in w["pods"] if p["node"]]
    assert len(nodes) == 4
    assert len({n.rsplit("-", 1)[0] for n in nodes}) == 1


def test_kai_job_topology_with_batch_min_member_is_one_gang_in_one_domain(
        run: Run, tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(_kai_job(more='    kai.scheduler/batch-min-member: "5"\n'))
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 3, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert (w["name"], w["status"]) == ("pg-train", "Rejected")
    assert "rack" in w["reason"]
    assert all(p["node"] is None for p in w["pods"])


def test_kai_job_topology_annotation_naming_no_topology_is_invalid(
        run: Run, tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(_kai_job(topology="nope"))
    result = run("validate", path)
    assert_one_line_error(result, "in.yaml[doc 1]: Job/train: "
                          "metadata.annotations.kai.scheduler/topology: topology 'nope' "
                          "not found")


def test_kai_job_placement_level_without_topology_is_ignored_with_a_warning(
        run: Run, tmp_path: Path) -> None:
    # as for a PodGroup's topologyConstraint: no topology named, so KAI ignores the level
    path = tmp_path / "in.yaml"
    path.write_text(_kai_job().replace("    kai.scheduler/topology: cluster-topology\n", ""))
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 0, result.output
    assert "metadata.annotations.kai.scheduler/topology: no topology named" in result.stderr
    workloads = json.loads(result.stdout)["workloads"]
    assert [w["kind"] for w in workloads] == ["Pod"] * 5


# -- JobSet exclusive placement: each Job owns a domain ------------------------------------

# jobset site/static/examples/simple/exclusive-placement.yaml, on racks instead of node pools;
# each Job (2 pods of 1 GPU) would fit beside the others in one rack of 4 nodes
EXCLUSIVE_JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: NAME
  namespace: NAMESPACE
  annotations:
    alpha.jobset.sigs.k8s.io/exclusive-topology: KEY
spec:
  failurePolicy: {maxRestarts: 3}
  replicatedJobs:
  - name: workers
    replicas: REPLICAS
    template:
      spec:
        parallelism: 2
        completions: 2
        backoffLimit: 10
        template:
          spec:
            containers:
            - name: sleep
              image: busybox
              command: [sleep]
              args: [1000s]
              resources: {requests: {cpu: "1", nvidia.com/gpu: "1"}}
"""


def _exclusive(name: str, namespace: str = "ml", replicas: int = 2,
               key: str = "gangsched.io/rack") -> str:
    return (EXCLUSIVE_JOBSET.replace("NAMESPACE", namespace).replace("NAME", name)
            .replace("REPLICAS", str(replicas)).replace("KEY", key))


def _racks(workload: dict[str, Any]) -> dict[str, set[str]]:
    """Job -> the racks its pods were placed in (nodes are named node-<rack>-h<i>)."""
    out: dict[str, set[str]] = {}
    for pod in workload["pods"]:
        job = pod["name"].rsplit("-", 2)[0]
        out.setdefault(job, set()).add(pod["node"] and pod["node"][5:].rsplit("-", 1)[0])
    return out


def test_jobset_exclusive_topology_gives_each_job_a_rack_of_its_own(
        run: Run, tmp_path: Path) -> None:
    """The pod webhook gives each Job's leader a pod affinity to its own job-key and an
    anti-affinity to any other on the key, in every namespace: two JobSets' four Jobs take
    the cluster's four racks, one each, and a fifth Job has none left."""
    text = "---\n".join([_exclusive("a"), _exclusive("b", namespace="other")])
    workloads = placed(run, tmp_path, text)["workloads"]
    assert [(w["kind"], w["name"], w["status"]) for w in workloads] == [
        ("JobSet", "a", "Admitted"), ("JobSet", "b", "Admitted")]
    racks = {**_racks(workloads[0]), **_racks(workloads[1])}
    assert sorted(racks) == ["a-workers-0", "a-workers-1", "b-workers-0", "b-workers-1"]
    assert all(len(r) == 1 for r in racks.values())
    assert len({r for rs in racks.values() for r in rs}) == 4
    domains = [g["domain"] for g in workloads[0]["groups"] if g["path"].count("/") == 2]
    assert [d["key"] for d in domains] == ["gangsched.io/rack"] * 2
    # a third JobSet: every rack is held by another Job
    (tmp_path / "c.yaml").write_text(_exclusive("c", replicas=1))
    result = run("place", "-f", CLUSTER, "-f", tmp_path / "in.yaml", "-f", tmp_path / "c.yaml",
                 "-o", "json")
    assert result.exit_code == 3, result.output
    third = json.loads(result.stdout)["workloads"][2]
    assert (third["name"], third["status"]) == ("c", "Rejected")
    assert "every rack is held exclusively" in third["reason"]
    assert all(p["node"] is None for p in third["pods"])


ONE_EXCLUSIVE = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: mixed, namespace: ml}
spec:
  replicatedJobs:
  - name: driver
    template:
      spec:
        template:
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
  - name: workers
    replicas: 2
    template:
      metadata:
        annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: gangsched.io/rack}
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def test_jobset_exclusive_topology_on_one_replicated_job_only(run: Run, tmp_path: Path) -> None:
    """The annotation on a replicated Job's template applies to its Jobs alone (the JobSet
    controller copies it onto them); the driver's pod is scheduled on its own."""
    workloads = placed(run, tmp_path, ONE_EXCLUSIVE)["workloads"]
    assert [(w["kind"], w["status"]) for w in workloads] == [("JobSet", "Admitted"),
                                                            ("Pod", "Admitted")]
    assert workloads[1]["name"].startswith("mixed-driver-0-0-")
    racks = _racks(workloads[0])
    assert sorted(racks) == ["mixed-workers-0", "mixed-workers-1"]
    assert all(len(r) == 1 for r in racks.values()) and len(set().union(*racks.values())) == 2


def test_kueue_jobset_with_exclusive_topology_needs_every_job_each_in_its_own_rack(
        run: Run, tmp_path: Path) -> None:
    """Under Kueue the JobSet is one Workload admitted whole; its Jobs still each own a
    rack."""
    text = _exclusive("a", replicas=4).replace(
        "  namespace: ml\n", "  namespace: ml\n  labels: {kueue.x-k8s.io/queue-name: q}\n")
    [w] = placed(run, tmp_path, text)["workloads"]
    assert (w["kind"], w["name"], w["status"], w["minimum"]) == ("JobSet", "a", "Admitted", 8)
    racks = _racks(w)
    assert len(racks) == 4 and len(set().union(*racks.values())) == 4
    path = tmp_path / "five.yaml"
    path.write_text(text.replace("replicas: 4", "replicas: 5"))
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["workloads"][0]["status"] == "Rejected"


def test_jobset_exclusive_topology_must_be_a_label_key(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(_exclusive("a", key='"not a key!"'))
    assert_one_line_error(run("validate", path), "in.yaml[doc 0]: JobSet/a: metadata."
                          "annotations.alpha.jobset.sigs.k8s.io/exclusive-topology: "
                          "invalid label key 'not a key!'")
