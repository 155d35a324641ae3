"""Kueue TAS: Jobs, JobSets and plain pod groups become gangs with their topology
requests; pods named as the Job controller and JobSet name them; Kueue's webhook rules."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tas_helpers import (
    BLOCK,
    HOST,
    RACK,
    cluster,
    domains,
    load_error,
    only,
    outline,
    place,
    plan,
    tree,
)

from gangsched.api.errors import InputError
from gangsched.api.types import Node
from gangsched.frontends import base
from gangsched.frontends.kueue import (
    COMPLETION_INDEX,
    EXCLUSIVE,
    GROUP_NAME,
    JOB_INDEX_LABEL,
    JOB_KEY_LABEL,
    JOB_NAME_LABEL,
    JOBSET_NAME_LABEL,
    NAMESPACED_JOB,
    NO_SCHEDULE,
    NODE_SELECTOR_STRATEGY,
    POD_GROUP_NAME,
    POD_GROUP_TOTAL_COUNT,
    PREFERRED,
    QUEUE_LABEL,
    REQUIRED,
    SLICE_CONSTRAINTS,
    SLICE_REQUIRED,
    SLICE_SIZE,
    UNCONSTRAINED,
    exclusive_set,
)
from gangsched.gang import Constraint, PodSet

TOPOLOGY = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {"levels": [{"nodeLabel": "topology.kubernetes.io/zone"},
                                {"nodeLabel": BLOCK}, {"nodeLabel": RACK},
                                {"nodeLabel": HOST}]}}


def pod_template(annotations: dict[str, str] | None = None, gpu: int = 2,
                 restart: str | None = "Never") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {
        "requests": {"cpu": "1", "nvidia.com/gpu": str(gpu)}}}]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"annotations": annotations or {}}, "spec": spec}


def job(annotations: dict[str, str] | None = None, *, parallelism: int = 4,
        completions: int | None = 4, queue: str | None = "q", name: str = "train",
        indexed: bool = True, gpu: int = 2, **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"parallelism": parallelism,
                            "template": pod_template(annotations, gpu)}
    if completions is not None:
        spec["completions"] = completions
    if indexed:
        spec["completionMode"] = "Indexed"
    metadata: dict[str, Any] = {"name": name, "namespace": "ml", **meta}
    if queue:
        metadata.setdefault("labels", {})[QUEUE_LABEL] = queue
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def jobset(*replicated: dict[str, Any], name: str = "trainer") -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "ml", "labels": {QUEUE_LABEL: "q"}},
            "spec": {"replicatedJobs": list(replicated)}}


def rjob(name: str, replicas: int, parallelism: int, annotations: dict[str, str] | None = None,
         gpu: int = 2) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": {"spec": {
        "parallelism": parallelism, "completions": parallelism,
        "template": pod_template(annotations, gpu, restart=None)}}}


def grouped_pod(name: str, group: str = "g", total: str | None = "2",
                annotations: dict[str, str] | None = None, gpu: int = 2,
                queue: str = "q") -> dict[str, Any]:
    ann = dict(annotations or {})
    if total is not None:
        ann[POD_GROUP_TOTAL_COUNT] = total
    labels = {QUEUE_LABEL: queue, POD_GROUP_NAME: group} if group else {QUEUE_LABEL: queue}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "labels": labels, "annotations": ann},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                "requests": {"cpu": "1", "nvidia.com/gpu": str(gpu)}}}]}}


# -- Jobs -------------------------------------------------------------------------------------


def test_a_job_is_one_gang_of_its_pods_named_as_the_job_controller_names_them(
        tmp_path: Path) -> None:
    w = only(plan(tmp_path, job({REQUIRED: RACK}, parallelism=4, completions=6)))
    assert (w.kind, w.name) == ("Job", "ml/train")
    assert outline(tree(w)) == [("ml/train", 1, 0, 4), ("ml/train/main", -1, 4, 4)]
    assert tree(w).children[0].topology == (Constraint(RACK),)
    pods = list(w.pods.values())
    assert [p.name.rsplit("-", 1)[0] for p in pods] == [f"train-{i}" for i in range(4)]
    assert all(len(p.name.rsplit("-", 1)[1]) == 5 for p in pods)
    assert [p.labels[COMPLETION_INDEX] for p in pods] == ["0", "1", "2", "3"]
    assert all(p.labels[JOB_NAME_LABEL] == "train" for p in pods)


def test_completions_cap_the_count_and_non_indexed_pods_have_no_index(tmp_path: Path) -> None:
    w = only(plan(tmp_path, job(parallelism=4, completions=2, indexed=False)))
    assert tree(w).size == 2
    assert all(COMPLETION_INDEX not in p.labels and p.name.count("-") == 1
               for p in w.pods.values())


def test_partial_admission_lowers_the_minimum(tmp_path: Path) -> None:
    obj = job(parallelism=6, completions=6,
              annotations={"kueue.x-k8s.io/job-min-parallelism": "2"})
    obj["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": "2"}
    obj["spec"]["template"]["metadata"]["annotations"] = {}
    assert outline(tree(only(plan(tmp_path, obj))))[1] == ("ml/train/main", -1, 2, 6)


def test_required_topology_keeps_the_job_in_one_rack(tmp_path: Path) -> None:
    p = plan(tmp_path, job({REQUIRED: RACK}, parallelism=6, completions=6, gpu=2),
             with_nodes=cluster())
    out = place(p)["ml/train"]
    assert out.admitted and len(out.pods) == 6 and len(domains(p, out, RACK)) == 1


def test_required_topology_too_big_for_any_rack_is_rejected(tmp_path: Path) -> None:
    p = plan(tmp_path, job({REQUIRED: RACK}, parallelism=5, completions=5, gpu=4),
             with_nodes=cluster())
    out = place(p)["ml/train"]
    assert not out.admitted and "rack" in out.reason


def test_preferred_topology_may_spread(tmp_path: Path) -> None:
    p = plan(tmp_path, job({PREFERRED: RACK}, parallelism=5, completions=5, gpu=4),
             with_nodes=cluster())
    out = place(p)["ml/train"]
    assert out.admitted and len(domains(p, out, RACK)) == 2


def test_slices_each_take_a_rack_inside_one_block(tmp_path: Path) -> None:
    ann = {REQUIRED: BLOCK, SLICE_REQUIRED: RACK, SLICE_SIZE: "4"}
    p = plan(tmp_path, job(ann, parallelism=8, completions=8, gpu=4), with_nodes=cluster())
    root = tree(only(p))
    assert outline(root)[1:] == [("ml/train/main", 2, 0, 8), ("ml/train/main/slice-0", -1, 4, 4),
                                 ("ml/train/main/slice-1", -1, 4, 4)]
    out = place(p)["ml/train"]
    assert out.admitted and len(domains(p, out, BLOCK)) == 1
    firsts = [f"train-{i}-" for i in range(4)]
    assert len(set().union(*(domains(p, out, RACK, f) for f in firsts))) == 1


def test_multi_layer_slices_nest(tmp_path: Path) -> None:
    layers = json.dumps([{"topology": RACK, "size": 4}, {"topology": HOST, "size": 2}])
    root = tree(only(plan(tmp_path, job({SLICE_CONSTRAINTS: layers}, parallelism=8,
                                        completions=8))))
    main = root.children[0]
    assert [n[0].rsplit("/", 2)[-2:] for n in outline(main)][:4] == [
        ["train", "main"], ["main", "slice-0"], ["slice-0", "slice-0"], ["slice-0", "slice-1"]]
    assert outline(main)[2][1:] == (-1, 2, 2)


def test_unconstrained_is_no_constraint(tmp_path: Path) -> None:
    assert tree(only(plan(tmp_path, job({UNCONSTRAINED: "true"})))).children[0].topology == ()


def test_a_job_without_a_queue_is_not_kueues_its_pods_are_loose(tmp_path: Path) -> None:
    p = plan(tmp_path, job({REQUIRED: RACK}, queue=None))
    assert [w.kind for w in p.workloads] == ["Pod"] * 4
    assert any("Kueue does not manage it" in x for x in p.warnings)


def test_pods_of_the_job_in_the_inputs_are_used(tmp_path: Path) -> None:
    running = grouped_pod("train-0-abcde", group="", total=None)
    running["metadata"]["labels"].update({JOB_NAME_LABEL: "train", COMPLETION_INDEX: "0"})
    running["spec"]["nodeName"] = "n-z0-b0-r0-h0"
    p = plan(tmp_path, job(parallelism=3, completions=3), running, with_nodes=cluster())
    w = only(p)
    assert "ml/train-0-abcde" not in w.pods and len(w.pods) == 2
    assert outline(tree(w))[1] == ("ml/train/main", -1, 2, 2)  # the running one counts


# -- JobSets ----------------------------------------------------------------------------------


def test_a_jobset_has_a_podset_per_replicated_job(tmp_path: Path) -> None:
    ann = {PREFERRED: RACK, SLICE_REQUIRED: HOST, SLICE_SIZE: "4"}
    p = plan(tmp_path, jobset(rjob("driver", 1, 1), rjob("workers", 2, 4, ann)),
             with_nodes=cluster())
    w = only(p)
    assert outline(tree(w)) == [
        ("ml/trainer", 2, 0, 9), ("ml/trainer/driver", -1, 1, 1),
        ("ml/trainer/workers", 2, 0, 8), ("ml/trainer/workers/slice-0", -1, 4, 4),
        ("ml/trainer/workers/slice-1", -1, 4, 4)]
    workers = tree(w).children[1]
    assert workers.topology == (Constraint(RACK, "preferred"),)
    names = [p.name.rsplit("-", 1)[0] for p in w.pods.values()]
    assert names[:3] == ["trainer-driver-0-0", "trainer-workers-0-0", "trainer-workers-0-1"]
    assert {x.labels[JOB_INDEX_LABEL] for x in w.pods.values()
            if "workers" in x.name} == {"0", "1"}
    out = place(p)["ml/trainer"]
    assert out.admitted
    for j in range(2):  # one Job per host
        assert len(domains(p, out, HOST, f"trainer-workers-{j}-")) == 1


def test_a_podset_group_puts_leader_and_workers_in_one_domain(tmp_path: Path) -> None:
    ann = {REQUIRED: RACK, GROUP_NAME: "pair"}
    root = tree(only(plan(tmp_path, jobset(rjob("leader", 1, 1, ann), rjob("workers", 1, 3, ann)))))
    assert outline(root) == [("ml/trainer", 1, 0, 4), ("ml/trainer/pair", 2, 0, 4),
                             ("ml/trainer/pair/leader", -1, 1, 1),
                             ("ml/trainer/pair/workers", -1, 3, 3)]
    assert root.children[0].topology == (Constraint(RACK),)
    assert root.children[0].children[0].topology == ()  # type: ignore[union-attr]



def test_the_pods_of_one_load_are_counted_before_any_is_created(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every object's count, over all the front-ends, against the load's budget: up to it
    the plan is built; one pod more is refused naming the object and field that ask."""
    monkeypatch.setattr(base, "MAX_LOAD_PODS", 12)
    objects = [job(parallelism=4), jobset(rjob("driver", 1, 1), rjob("workers", 7, 1))]
    assert len(plan(tmp_path, *objects).workloads) == 2
    objects[1]["spec"]["replicatedJobs"][1]["replicas"] = 8
    with pytest.raises(InputError) as info:
        plan(tmp_path, *objects)
    err = info.value
    assert (err.doc, err.obj, err.field) == (1, "JobSet/trainer",
                                            "spec.replicatedJobs[1].replicas")
    assert err.message == ("asks for 8 pods, 13 with those before it; gangsched creates at "
                           "most 12 pods per load")


def exclusive(js: dict[str, Any], key: str = RACK, **more: str) -> dict[str, Any]:
    """``js`` not managed by Kueue, with the exclusive-topology annotation on ``key``."""
    js["metadata"].pop("labels")
    js["metadata"]["annotations"] = {EXCLUSIVE: key, **more}
    return js


def test_exclusive_jobs_are_gangs_each_owning_a_domain(tmp_path: Path) -> None:
    w = only(plan(tmp_path, exclusive(jobset(rjob("workers", 2, 2))), with_nodes=cluster()))
    assert outline(tree(w)) == [
        ("ml/trainer", 0, 0, 4), ("ml/trainer/trainer-workers-0", 1, 0, 2),
        ("ml/trainer/trainer-workers-0/pods", -1, 2, 2), ("ml/trainer/trainer-workers-1", 1, 0, 2),
        ("ml/trainer/trainer-workers-1/pods", -1, 2, 2)]
    owned = Constraint(RACK, "required", None, exclusive_set(0))
    assert [c.topology for c in tree(w).children] == [(owned,), (owned,)]
    pod = next(iter(w.pods.values()))
    assert pod.annotations[EXCLUSIVE] == RACK and len(pod.labels[JOB_KEY_LABEL]) == 40


def test_a_running_pod_pins_its_job_and_holds_the_domain(tmp_path: Path) -> None:
    running = grouped_pod("trainer-workers-0-0-abcde", group="", total=None, queue="")
    running["metadata"]["labels"] = {JOBSET_NAME_LABEL: "trainer",
                                     JOB_NAME_LABEL: "trainer-workers-0", COMPLETION_INDEX: "0"}
    running["spec"]["nodeName"] = "n-z0-b0-r1-h0"
    p = plan(tmp_path, exclusive(jobset(rjob("workers", 2, 2))), running, with_nodes=cluster())
    first = tree(only(p, "JobSet")).children[0]
    assert first.topology == (Constraint(RACK, "required", "z0-b0-r1", exclusive_set(0)),)
    assert first.size == 1
    assert p.claims["ml/trainer-workers-0-0-abcde"] == (
        (exclusive_set(0), RACK, "ml/trainer/trainer-workers-0"),)


def test_the_node_selector_strategy_selects_the_jobs_own_nodes(tmp_path: Path) -> None:
    """``alpha.jobset.sigs.k8s.io/node-selector``: the controller selects nodes labelled
    with the Job's namespaced name and tolerates their taint; the scheduler only
    follows, so nothing is owned (and the pods are not ganged here)."""
    p = plan(tmp_path, exclusive(jobset(rjob("workers", 1, 2)), **{NODE_SELECTOR_STRATEGY: "true"}))
    assert [w.kind for w in p.workloads] == ["Pod", "Pod"]
    needs = next(iter(p.workloads[0].pods.values())).requirements
    assert dict(needs.node_selector) == {NAMESPACED_JOB: "ml_trainer-workers-0"}
    assert [(t.key, t.operator, t.effect) for t in needs.tolerations] == [
        (NO_SCHEDULE, "Exists", "NoSchedule")]


def test_kueue_exclusive_jobs_sit_in_their_podset_and_refuse_slices(tmp_path: Path) -> None:
    js = jobset(rjob("workers", 2, 2, {PREFERRED: BLOCK}))
    js["metadata"]["annotations"] = {EXCLUSIVE: RACK}
    root = tree(only(plan(tmp_path, js)))
    assert outline(root)[:3] == [("ml/trainer", 1, 0, 4), ("ml/trainer/workers", 2, 0, 4),
                                 ("ml/trainer/workers/trainer-workers-0", 1, 0, 2)]
    assert root.children[0].topology == (Constraint(BLOCK, "preferred"),)
    js = jobset(rjob("workers", 2, 2, {SLICE_REQUIRED: HOST, SLICE_SIZE: "2"}))
    js["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"annotations": {EXCLUSIVE: RACK}}
    err = load_error(tmp_path, js)
    assert err.field == f"spec.replicatedJobs[0].template.metadata.annotations.{EXCLUSIVE}"
    assert SLICE_SIZE in err.message

# -- plain pod groups -------------------------------------------------------------------------


def test_plain_pods_group_by_name_and_wait_for_the_total(tmp_path: Path) -> None:
    a = grouped_pod("a", total="3", annotations={REQUIRED: RACK})
    b = grouped_pod("b", total="3", annotations={REQUIRED: RACK})
    w = only(plan(tmp_path, a, b))
    assert w.waiting == f"waiting for pods: group has 2 of {POD_GROUP_TOTAL_COUNT} 3"
    c = grouped_pod("c", total="3", annotations={REQUIRED: RACK})
    p = plan(tmp_path, a, b, c, with_nodes=cluster())
    root = tree(only(p))
    assert outline(root) == [("ml/g", 1, 3, 3), ("ml/g/main", -1, 3, 3)]
    out = place(p)["ml/g"]
    assert out.admitted and len(domains(p, out, RACK)) == 1


def test_roles_of_a_pod_group_are_podsets(tmp_path: Path) -> None:
    w = only(plan(tmp_path, grouped_pod("a", gpu=0), grouped_pod("b", gpu=4)))
    assert [n[0] for n in outline(tree(w))] == ["ml/g", "ml/g/role-0", "ml/g/role-1"]


def test_a_queued_pod_with_a_topology_annotation_is_placed_with_it(tmp_path: Path) -> None:
    """Kueue-annotated plain pods were once placed without their topology."""
    solo = grouped_pod("solo", group="", total=None, annotations={REQUIRED: RACK})
    nodes = [Node("bare", {HOST: "bare"}, allocatable={"cpu": 64_000, "nvidia.com/gpu": 8,
                                                       "pods": 110}), *cluster()]
    p = plan(tmp_path, solo, with_nodes=nodes)
    w = only(p)
    assert isinstance(tree(w).children[0], PodSet)
    assert tree(w).children[0].topology == (Constraint(RACK),)
    out = place(p)["ml/solo"]
    assert out.admitted and out.pods["ml/solo"] != "bare"  # bare has no rack label


@pytest.mark.parametrize(("pods", "field", "message"), [
    pytest.param([grouped_pod("a", total=None)], f"metadata.annotations.{POD_GROUP_TOTAL_COUNT}",
                 "must be set with", id="no-total-count"),
    pytest.param([grouped_pod("a", total="x")], f"metadata.annotations.{POD_GROUP_TOTAL_COUNT}",
                 "must be an integer", id="total-not-integer"),
    pytest.param([grouped_pod("a", total="0")], f"metadata.annotations.{POD_GROUP_TOTAL_COUNT}",
                 "must be greater than or equal to 1", id="total-zero"),
    pytest.param([grouped_pod("a", total="2"), grouped_pod("b", total="3")],
                 f"metadata.annotations.{POD_GROUP_TOTAL_COUNT}", "the same", id="counts-differ"),
    pytest.param([grouped_pod("a"), grouped_pod("b", queue="other")],
                 f"metadata.labels.{QUEUE_LABEL}", "the same queue", id="queues-differ"),
    pytest.param([grouped_pod("a", group="Bad_Name")], f"metadata.labels.{POD_GROUP_NAME}",
                 "invalid pod group name", id="group-name"),
    pytest.param([grouped_pod("a", annotations={REQUIRED: RACK, PREFERRED: RACK}),
                  grouped_pod("b")], "metadata.annotations",
                 "must not contain more than one topology annotation", id="two-requests"),
])
def test_bad_pod_groups_are_invalid_naming_the_pod(tmp_path: Path, pods: list[dict[str, Any]],
                                                   field: str, message: str) -> None:
    w = only(plan(tmp_path, *pods))
    assert w.tree is None
    assert f"in.yaml[doc 0]: Pod/a: {field}" in w.invalid, w.invalid
    assert message in w.invalid


def test_a_total_count_without_a_group_name_is_invalid(tmp_path: Path) -> None:
    w = only(plan(tmp_path, grouped_pod("a", group="")))
    assert f"Pod/a: metadata.labels.{POD_GROUP_NAME}: " in w.invalid


# -- Kueue's webhook rules on Jobs and JobSets ----------------------------------------------


def _raw(annotations: dict[str, str]) -> Callable[[dict[str, Any]], None]:
    return lambda obj: obj["spec"]["template"]["metadata"].update(annotations=annotations)


A = "spec.template.metadata.annotations"
BAD = [
    pytest.param(_raw({REQUIRED: RACK, UNCONSTRAINED: "true"}), A,
                 "must not contain more than one topology annotation",
                 id="required-and-unconstrained"),
    pytest.param(_raw({UNCONSTRAINED: "maybe"}), f"{A}.{UNCONSTRAINED}", "must be a boolean value",
                 id="unconstrained-not-bool"),
    pytest.param(_raw({REQUIRED: "not a key"}), f"{A}.{REQUIRED}", "invalid label name",
                 id="bad-level"),
    pytest.param(_raw({SLICE_SIZE: "2"}), f"{A}.{SLICE_SIZE}",
                 f"may not be set when {SLICE_REQUIRED!r} is not specified", id="size-alone"),
    pytest.param(_raw({SLICE_REQUIRED: RACK}), f"{A}.{SLICE_SIZE}",
                 f"must be set when {SLICE_REQUIRED!r} is specified", id="topology-alone"),
    pytest.param(_raw({SLICE_REQUIRED: RACK, SLICE_SIZE: "8"}), f"{A}.{SLICE_SIZE}",
                 "must not be greater than pod set count 4", id="slice-over-count"),
    pytest.param(_raw({SLICE_REQUIRED: RACK, SLICE_SIZE: "3"}), f"{A}.{SLICE_SIZE}",
                 "must divide the pod set count 4", id="slice-not-dividing"),
    pytest.param(_raw({SLICE_REQUIRED: RACK, SLICE_SIZE: "0"}), f"{A}.{SLICE_SIZE}",
                 "must be greater than or equal to 1", id="slice-zero"),
    pytest.param(_raw({REQUIRED: RACK, GROUP_NAME: "42"}), f"{A}.{GROUP_NAME}",
                 "must not be a number", id="group-number"),
    pytest.param(_raw({GROUP_NAME: "g"}), f"{A}.{GROUP_NAME}",
                 "may not be set when neither", id="group-without-level"),
    pytest.param(_raw({REQUIRED: BLOCK, GROUP_NAME: "g", SLICE_REQUIRED: RACK, SLICE_SIZE: "2"}),
                 f"{A}.{GROUP_NAME}", "may not be set when", id="group-with-slices"),
    pytest.param(lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Always"),
                 "spec.template.spec.restartPolicy", "Never or OnFailure", id="restart-policy"),
    pytest.param(lambda o: o["spec"].pop("completions"), "spec.completions",
                 "when completionMode is Indexed, completions must be set", id="indexed"),
    pytest.param(lambda o: o["metadata"].update(
        annotations={"kueue.x-k8s.io/job-min-parallelism": "4"}),
        "metadata.annotations.kueue.x-k8s.io/job-min-parallelism", "should be between 0 and 4",
        id="min-parallelism"),
]


@pytest.mark.parametrize(("edit", "field", "message"), BAD)
def test_bad_jobs_are_one_line_errors(tmp_path: Path, edit: Callable[[dict[str, Any]], None],
                                      field: str, message: str) -> None:
    obj = copy.deepcopy(job())
    edit(obj)
    err = load_error(tmp_path, obj)
    assert (err.doc, err.obj, err.field) == (0, "Job/train", field), str(err)
    assert message in err.message


@pytest.mark.parametrize(("replicated", "message"), [
    pytest.param([rjob("a", 1, 1, {REQUIRED: RACK, GROUP_NAME: "g"})],
                 "can only define groups of exactly 2 pod sets, got: 1", id="group-of-one"),
    pytest.param([rjob("a", 1, 2, {REQUIRED: RACK, GROUP_NAME: "g"}),
                  rjob("b", 1, 2, {REQUIRED: RACK, GROUP_NAME: "g"})],
                 "at least one pod set has only 1 replica", id="no-single-pod"),
    pytest.param([rjob("a", 1, 1, {REQUIRED: RACK, GROUP_NAME: "g"}),
                  rjob("b", 1, 2, {REQUIRED: BLOCK, GROUP_NAME: "g"})],
                 "topology consistent with", id="different-levels"),
    pytest.param([rjob("a", 2, 2, {SLICE_REQUIRED: RACK, SLICE_SIZE: "3"})],
                 "must divide the pod set count 4", id="slice-over-the-whole-podset"),
])
def test_bad_jobsets_are_one_line_errors(tmp_path: Path, replicated: list[dict[str, Any]],
                                         message: str) -> None:
    err = load_error(tmp_path, jobset(*replicated))
    assert err.obj == "JobSet/trainer" and err.field is not None
    assert err.field.startswith("spec.replicatedJobs[0].template.spec.template.metadata")
    assert message in err.message


def test_a_level_the_kueue_topology_lacks_makes_the_job_invalid(tmp_path: Path) -> None:
    w = only(plan(tmp_path, TOPOLOGY, job({REQUIRED: "example.com/row"})))
    assert w.tree is None
    assert (f"in.yaml[doc 1]: Job/train: {A}.{REQUIRED}: no requested topology level: "
            "example.com/row") in w.invalid


def test_a_preferred_level_the_kueue_topology_lacks_is_dropped_with_a_warning(
        tmp_path: Path) -> None:
    """Kueue's webhook accepts any level; its flavor assigner then skips a flavor whose
    Topology lacks the level, required or preferred. gangsched keeps a required level an
    error but treats a preference as one: dropped, with a warning, and placed."""
    p = plan(tmp_path, TOPOLOGY, job({PREFERRED: "example.com/row"}),
             jobset(rjob("workers", 2, 2, {PREFERRED: "example.com/row"})),
             with_nodes=cluster())
    for w in p.workloads:
        assert not w.invalid and w.tree is not None
        assert all(not c.topology for c in w.tree.children)  # unconstrained
    assert sorted(w.kind for w in p.ready) == ["Job", "JobSet"]
    job_note, jobset_note = p.warnings
    assert (f"in.yaml[doc 1]: Job/train: {A}.{PREFERRED}: no requested topology level: "
            f"example.com/row (levels: topology.kubernetes.io/zone, {BLOCK}, {RACK}, {HOST}); "
            "placed without this preference") in job_note
    assert ("in.yaml[doc 2]: JobSet/trainer: spec.replicatedJobs[0].template.spec."
            f"template.metadata.annotations.{PREFERRED}: no requested") in jobset_note
    placed = place(p)
    assert placed["ml/train"].admitted and placed["ml/trainer"].admitted


def test_a_missing_slice_level_stays_an_error_levels_listed_widest_first(tmp_path: Path
                                                                        ) -> None:
    w = only(plan(tmp_path, TOPOLOGY, job({PREFERRED: BLOCK, SLICE_REQUIRED: "example.com/row",
                                            SLICE_SIZE: "2"})))
    assert w.tree is None
    assert w.invalid.endswith(f"{A}.{SLICE_REQUIRED}: no requested topology level: "
                              f"example.com/row (levels: topology.kubernetes.io/zone, "
                              f"{BLOCK}, {RACK}, {HOST})")


def test_errors_about_a_generated_name_name_the_object(tmp_path: Path) -> None:
    generated = job({REQUIRED: "example.com/row"})
    del generated["metadata"]["name"]
    generated["metadata"]["generateName"] = "train-"
    w = only(plan(tmp_path, TOPOLOGY, generated))
    name = w.name.removeprefix("ml/")
    assert name.startswith("train-") and len(name) == len("train-") + 5
    assert f"in.yaml[doc 1]: Job/{name}: {A}.{REQUIRED}: " in w.invalid
    generated["spec"]["parallelism"] = -1  # an error found while the Job is read
    err = load_error(tmp_path, generated)
    assert err.field == "spec.parallelism"
    assert err.obj is not None and err.obj.startswith("Job/train-") and len(err.obj) == 15


def test_kueue_site_examples_load(tmp_path: Path) -> None:
    """Shapes of Kueue's site/static/examples: generateName, a JobSet without
    completionMode or restartPolicy, a Topology beside them."""
    required = job({REQUIRED: RACK}, parallelism=3, completions=3)
    del required["metadata"]["name"]
    required["metadata"]["generateName"] = "tas-sample-required"
    sliced = jobset(rjob("workers", 1, 8, {SLICE_REQUIRED: RACK, SLICE_SIZE: "4"}), name="js")
    p = plan(tmp_path, TOPOLOGY, required, sliced)
    kinds = sorted((w.kind, w.name.startswith("ml/tas-sample-required")) for w in p.workloads)
    assert kinds == [("Job", True), ("JobSet", False)]
