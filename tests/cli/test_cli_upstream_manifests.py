"""Manifests as upstream controllers and users write them, through ``gangsched place`` and
``gangsched explain``: the Workload API at ``scheduling.k8s.io/v1alpha2`` (Kubernetes
1.36, what current JobSet/Kueue integrations emit), Kueue TAS annotations naming levels
no Topology has, and objects named by ``metadata.generateName``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cli_helpers import Run, assert_one_line_error

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = EXAMPLES / "cluster-small.yaml"  # a Kueue Topology: zone, block, rack, hostname

# -- 1. scheduling.k8s.io/v1alpha2 -------------------------------------------------------

V1ALPHA2 = """\
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: trainer, namespace: ml}
spec:
  controllerRef: {apiGroup: jobset.x-k8s.io, kind: JobSet, name: trainer}
  podGroupTemplates:
  - name: workers
    schedulingPolicy: {gang: {minCount: 4}}
    schedulingConstraints: {topology: [{key: gangsched.io/rack}]}
    disruptionMode: PodGroup
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: trainer-workers-0, namespace: ml}
spec:
  podGroupTemplateRef:
    workload: {workloadName: trainer, podGroupTemplateName: workers}
  schedulingPolicy: {gang: {minCount: 4}}
  schedulingConstraints: {topology: [{key: gangsched.io/rack}]}
  disruptionMode: PodGroup
""" + "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: trainer-workers-0-{i}, namespace: ml}}
spec:
  schedulingGroup: {{podGroupName: trainer-workers-0}}
  containers:
  - name: c
    resources: {{requests: {{cpu: "8", nvidia.com/gpu: "8"}}}}
""" for i in range(4))


def test_v1alpha2_workload_and_pod_group_are_placed(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "jobset-workload.yaml"
    path.write_text(V1ALPHA2)
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 0, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert (w["kind"], w["namespace"], w["name"]) == ("PodGroup", "ml", "trainer-workers-0")
    assert w["status"] == "Admitted" and w["minimum"] == 4
    assert len({p["node"] for p in w["pods"]}) == 4


def test_a_bundle_with_its_service_and_config_map_places_with_a_warning_each(
        run: Run, tmp_path: Path) -> None:
    # as people kubectl-apply a workload: beside it, its Service and ConfigMap
    path = tmp_path / "bundle.yaml"
    path.write_text(V1ALPHA2 + "---\napiVersion: v1\nkind: Service\n"
                    "metadata: {name: trainer, namespace: ml}\nspec: {clusterIP: None}\n"
                    "---\napiVersion: v1\nkind: ConfigMap\n"
                    "metadata: {name: trainer-env, namespace: ml}\ndata: {A: b}\n")
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 0, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert w["status"] == "Admitted"
    skipped = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert skipped == [
        f"warning: {path}[doc 6]: Service/trainer: v1/Service carries nothing gangsched "
        "schedules; skipped",
        f"warning: {path}[doc 7]: ConfigMap/trainer-env: v1/ConfigMap carries nothing "
        "gangsched schedules; skipped"]
    # a kind gangsched does not know is still refused
    path.write_text(V1ALPHA2 + "---\napiVersion: example.com/v1\nkind: Widget\n"
                    "metadata: {name: w}\n")
    assert_one_line_error(run("place", "-f", CLUSTER, "-f", path),
                          "unsupported kind example.com/v1/Widget")


def test_v1alpha2_field_of_another_version_is_one_line_error(run: Run, tmp_path: Path
                                                              ) -> None:
    path = tmp_path / "in.yaml"
    # the v1alpha3 union where v1alpha2 has a string
    path.write_text(V1ALPHA2.replace("    disruptionMode: PodGroup", "    disruptionMode: "
                                     "{all: {}}", 1))
    result = run("validate", path)
    assert_one_line_error(result, "in.yaml[doc 0]: Workload/trainer: "
                          "spec.podGroupTemplates[0].disruptionMode: ")
    # a v1alpha3 field: unknown in v1alpha2
    path.write_text(V1ALPHA2.replace("  podGroupTemplateRef:\n    workload: {workloadName: "
                                     "trainer, podGroupTemplateName: workers}",
                                     "  workloadRef: {workloadName: trainer, templateName: "
                                     "workers}"))
    result = run("validate", path)
    assert_one_line_error(result, "in.yaml[doc 1]: PodGroup/trainer-workers-0: "
                          "spec.workloadRef: ")


def test_unknown_workload_api_version_is_still_refused(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    workload = V1ALPHA2.split("---")[0]
    path.write_text(workload.replace("scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1alpha9"))
    result = run("validate", path)
    assert_one_line_error(result, "unsupported apiVersion 'scheduling.k8s.io/v1alpha9' for "
                          "kind Workload", "scheduling.k8s.io/v1alpha2")


# -- 2. Kueue TAS levels no Topology has --------------------------------------------------


def kueue_job(annotation: str, level: str, *, name: str = "generateName: allreduce-") -> str:
    return f"""\
apiVersion: batch/v1
kind: Job
metadata:
  {name}
  namespace: ml
  labels: {{kueue.x-k8s.io/queue-name: ml-queue}}
spec:
  parallelism: 4
  completions: 4
  completionMode: Indexed
  template:
    metadata:
      annotations: {{kueue.x-k8s.io/podset-{annotation}-topology: {level}}}
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        resources: {{requests: {{cpu: "8", nvidia.com/gpu: "4"}}}}
"""


def test_preferred_level_no_topology_has_is_a_warning_and_placed(run: Run, tmp_path: Path
                                                                  ) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(kueue_job("preferred", "example.com/superpod"))
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 0, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert w["kind"] == "Job" and w["status"] == "Admitted" and len(w["pods"]) == 4
    [warning] = [line for line in result.stderr.splitlines() if "superpod" in line]
    assert f"Job/{w['name']}" in warning
    assert "kueue.x-k8s.io/podset-preferred-topology" in warning
    assert ("topology.kubernetes.io/zone, gangsched.io/block, gangsched.io/rack, "
            "kubernetes.io/hostname") in warning


def test_required_level_no_topology_has_names_the_object_and_the_levels_in_order(
        run: Run, tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(kueue_job("required", "example.com/superpod"))
    result = run("place", "-f", CLUSTER, "-f", path, "-o", "json")
    assert result.exit_code == 1, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert w["status"] == "Invalid" and w["name"].startswith("allreduce-")
    reason = w["reason"]
    assert f"job.yaml[doc 0]: Job/{w['name']}: " in reason
    assert "spec.template.metadata.annotations.kueue.x-k8s.io/podset-required-topology" in (
        reason)
    assert reason.endswith("no requested topology level: example.com/superpod (levels: "
                           "topology.kubernetes.io/zone, gangsched.io/block, "
                           "gangsched.io/rack, kubernetes.io/hostname)")


# -- 3. names from metadata.generateName ---------------------------------------------------


def test_generated_names_do_not_depend_on_how_the_path_is_spelled(
        run: Run, tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(kueue_job("required", "gangsched.io/rack"))
    relative = os.path.relpath(path)
    dotted = tmp_path / "." / "job.yaml"
    named = set()
    for spelling in (path, relative, dotted):
        result = run("place", "-f", CLUSTER, "-f", spelling, "-o", "name")
        assert result.exit_code == 0, result.output
        named.add(result.stdout.strip())
    [name] = named
    assert name.startswith("job/allreduce-") and len(name) == len("job/allreduce-") + 5
    result = run("explain", name, "-f", CLUSTER, "-f", relative)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Job ml/{name.removeprefix('job/')}: Admitted")


def test_generated_names_are_unique_within_one_load(run: Run, tmp_path: Path) -> None:
    same = kueue_job("required", "gangsched.io/rack")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "job.yaml").write_text(same)
    (tmp_path / "b" / "job.yaml").write_text(same)
    (tmp_path / "two.yaml").write_text(f"{same}---\n{same}")
    result = run("place", "-f", CLUSTER, "-f", tmp_path / "a" / "job.yaml",
                 "-f", tmp_path / "b" / "job.yaml", "-f", tmp_path / "two.yaml", "-o", "name")
    assert result.exit_code == 0, result.output
    names = result.stdout.split()
    assert len(names) == 4 and len(set(names)) == 4


def _generated(text: str, name: str) -> str:
    """``text`` with the object named ``name`` named by ``generateName: <name>-`` instead."""
    assert text.count(f"  name: {name}\n") == 1
    return text.replace(f"  name: {name}\n", f"  generateName: {name}-\n")


def test_volcano_and_kthena_objects_may_be_named_by_generate_name(
        run: Run, tmp_path: Path) -> None:
    """As the API server names any object, CRDs included: a Volcano Job, a Kthena
    ModelServing, a Volcano PodGroup and a HyperNode named only by ``generateName`` get
    ``<prefix><five characters>`` and are placed (or checked) as when named."""
    job = tmp_path / "job.yaml"
    job.write_text(_generated((EXAMPLES / "volcano-job.yaml").read_text(), "llm-train"))
    result = run("place", "-f", CLUSTER, "-f", job, "-o", "name")
    assert result.exit_code == 0, result.output
    [name] = result.stdout.split()
    assert name.startswith("job/llm-train-") and len(name) == len("job/llm-train-") + 5

    serving = tmp_path / "serving.yaml"
    serving.write_text(_generated((EXAMPLES / "kthena-2p2d.yaml").read_text(), "sample"))
    result = run("place", "-f", CLUSTER, "-f", serving, "-o", "name")
    assert result.exit_code == 0, result.output
    [name] = result.stdout.split()  # one gang per serving group: <serving>-0
    assert name.startswith("modelserving/sample-") and name.endswith("-0")
    assert len(name) == len("modelserving/sample-") + 5 + len("-0")

    pg = tmp_path / "pg.yaml"
    pg.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
                  "metadata:\n  generateName: pg-\nspec:\n  minMember: 1\n")
    result = run("validate", "-f", pg)
    assert result.exit_code == 0, result.output

    # a spine nothing refers to by name; the leaves stay named, as the spines select them
    hypernodes = tmp_path / "hypernodes.yaml"
    hypernodes.write_text(_generated((EXAMPLES / "volcano-hypernodes.yaml").read_text(),
                                     "spine-1"))
    result = run("place", "-f", hypernodes, "-f", EXAMPLES / "volcano-podgroup.yaml")
    assert result.exit_code == 0, result.output
    result = run("place", "-f", EXAMPLES / "volcano-hypernodes.yaml",
                 "-f", EXAMPLES / "volcano-podgroup.yaml")
    assert result.exit_code == 0, result.output


def test_a_kueue_workload_names_the_object_to_give_instead(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "wl.yaml"
    path.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n"
                    "  name: job-sample\nspec:\n  queueName: user-queue\n  podSets: []\n")
    result = run("validate", path)
    assert_one_line_error(result, "for kind Workload (Kueue makes its Workload from the Job",
                          "--ignore-unknown skips it")
    assert run("validate", "--ignore-unknown", path).exit_code == 0


_WPC_JOB = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: sample-priority
value: 10000
description: "Sample priority"
---
apiVersion: batch/v1
kind: Job
metadata:
  name: sample-job
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/priority-class: CLASS
spec:
  parallelism: 3
  completions: 3
  template:
    spec:
      containers:
      - name: dummy-job
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        resources:
          requests:
            cpu: 1
            memory: "200Mi"
      restartPolicy: Never
"""


def test_kueue_docs_workload_priority_class_job(run: Run, tmp_path: Path) -> None:
    """Kueue's docs (concepts/workload_priority_class.md): the Job's workload takes the
    class's value; a label naming no class leaves the Job invalid, exit 1, naming it."""
    good = tmp_path / "good.yaml"
    good.write_text(_WPC_JOB.replace("CLASS", "sample-priority"))
    result = run("place", "-o", "json", EXAMPLES / "cluster-small.yaml", good)
    assert result.exit_code == 0, result.output
    [w] = json.loads(result.stdout)["workloads"]
    assert (w["name"], w["status"], w["priority"]) == ("sample-job", "Admitted", 10000)
    bad = tmp_path / "bad.yaml"
    bad.write_text(_WPC_JOB.replace("CLASS", "nope"))
    result = run("place", EXAMPLES / "cluster-small.yaml", bad)
    assert result.exit_code == 1
    assert ('Job/sample-job: metadata.labels.kueue.x-k8s.io/priority-class: '
            'WorkloadPriorityClass "nope" not found') in result.output
