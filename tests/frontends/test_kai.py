"""KAI-Scheduler PodGroup: the subGroups tree, levels through KAI Topologies, which pods
join, what waits, what is rejected (the webhook's rules) and where pods land."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from frontend_helpers import find
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
    write,
)
from typer.testing import CliRunner

from gangsched.cli.main import app
from gangsched.frontends.kai import POD_GROUP_ANNOTATION, SUBGROUP_LABEL
from gangsched.gang import Constraint, PodSet

TOPOLOGY = {
    "apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology",
    "metadata": {"name": "fabric"},
    "spec": {"levels": [{"nodeLabel": BLOCK, "alias": "block"},
                        {"nodeLabel": RACK, "alias": "rack"}, {"nodeLabel": HOST}]},
}


def podgroup(spec: dict[str, Any], name: str = "llm", ns: str = "team") -> dict[str, Any]:
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def pod(name: str, group: str = "llm", subgroup: str | None = None, gpu: int = 4,
        ns: str = "team", node: str | None = None) -> dict[str, Any]:
    labels = {SUBGROUP_LABEL: subgroup} if subgroup else {}
    spec: dict[str, Any] = {"schedulerName": "kai-scheduler", "containers": [
        {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": str(gpu)}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels,
                         "annotations": {POD_GROUP_ANNOTATION: group}}, "spec": spec}


DISAGG = {
    "minSubGroup": 2,
    "topologyConstraint": {"topology": "fabric", "requiredTopologyLevel": "block"},
    "subGroups": [
        {"name": "prefill", "minSubGroup": 1},
        {"name": "prefill-0", "parent": "prefill", "minMember": 2,
         "topologyConstraint": {"topology": "fabric", "requiredTopologyLevel": RACK}},
        {"name": "prefill-1", "parent": "prefill", "minMember": 2,
         "topologyConstraint": {"topology": "fabric", "requiredTopologyLevel": "rack"}},
        {"name": "decode", "minMember": 2,
         "topologyConstraint": {"topology": "fabric", "preferredTopologyLevel": "rack"}},
    ],
}


def disagg_pods() -> list[dict[str, Any]]:
    return [*(pod(f"p0-{i}", subgroup="prefill-0") for i in range(2)),
            *(pod(f"p1-{i}", subgroup="prefill-1") for i in range(2)),
            *(pod(f"d-{i}", subgroup="decode", gpu=2) for i in range(2))]


# -- the tree -----------------------------------------------------------------------------


def test_subgroups_become_a_tree_with_their_minimums(tmp_path: Path) -> None:
    w = only(plan(tmp_path, TOPOLOGY, podgroup(DISAGG), *disagg_pods()))
    root = tree(w)
    assert (w.kind, w.name, root.kind, root.source) == ("PodGroup", "team/llm", "PodGroup",
                                                        "team/llm")
    assert outline(root) == [
        ("team/llm", 2, 0, 6),
        ("team/llm/prefill", 1, 0, 4),
        ("team/llm/prefill/prefill-0", -1, 2, 2),
        ("team/llm/prefill/prefill-1", -1, 2, 2),
        ("team/llm/decode", -1, 2, 2),
    ]
    assert root.topology == (Constraint(BLOCK),)
    prefill0 = root.children[0].children[0]  # type: ignore[union-attr]
    assert prefill0.topology == (Constraint(RACK),)  # a nodeLabel or an alias, same key
    assert root.children[1].topology == (Constraint(RACK, "preferred"),)


def test_min_sub_group_absent_needs_every_child(tmp_path: Path) -> None:
    spec = copy.deepcopy(DISAGG)
    del spec["minSubGroup"]
    del spec["subGroups"][0]["minSubGroup"]
    root = tree(only(plan(tmp_path, TOPOLOGY, podgroup(spec), *disagg_pods())))
    assert [n[1] for n in outline(root) if n[1] >= 0] == [2, 2]


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param({}, [("team/llm", 1, 1, 3), ("team/llm/pods", -1, 1, 3)], id="absent-is-1"),
    pytest.param({"minMember": 3}, [("team/llm", 1, 3, 3), ("team/llm/pods", -1, 3, 3)],
                 id="three"),
    pytest.param({"minMember": 0}, [("team/llm", 0, 0, 3), ("team/llm/pods", -1, 0, 3)],
                 id="zero-is-no-gang"),
])
def test_flat_podgroup_min_member(tmp_path: Path, spec: dict[str, Any],
                                  expected: list[tuple[str, int, int, int]]) -> None:
    pods = [pod(f"w-{i}") for i in range(3)]
    assert outline(tree(only(plan(tmp_path, podgroup(spec), *pods)))) == expected


def test_no_gang_keeps_the_root_constraint_on_each_set(tmp_path: Path) -> None:
    spec = {"minMember": 0, "topologyConstraint": {"topology": "fabric",
                                                   "requiredTopologyLevel": "rack"}}
    root = tree(only(plan(tmp_path, TOPOLOGY, podgroup(spec), pod("a"), pod("b"))))
    assert root.topology == ()
    assert root.children[0].topology == (Constraint(RACK),)


def test_pods_of_several_shapes_in_a_leaf(tmp_path: Path) -> None:
    spec = {"subGroups": [{"name": "workers", "minMember": 3}]}
    pods = [pod("a", subgroup="workers"), pod("b", subgroup="workers", gpu=8),
            pod("c", subgroup="workers")]
    leaf = tree(only(plan(tmp_path, podgroup(spec), *pods))).children[0]
    assert outline(leaf) == [("team/llm/workers", 2, 3, 3), ("team/llm/workers/pods-0", -1, 2, 2),
                             ("team/llm/workers/pods-1", -1, 1, 1)]


# -- membership ---------------------------------------------------------------------------


def test_pods_that_name_no_leaf_are_claimed_but_not_scheduled(tmp_path: Path) -> None:
    pods = [*disagg_pods(), pod("mid", subgroup="prefill"), pod("none"),
            pod("ghost", subgroup="nope")]
    p = plan(tmp_path, TOPOLOGY, podgroup(DISAGG), *pods)
    w = only(p)
    assert "team/mid" not in w.pods and "team/none" not in w.pods
    assert sum("is not scheduled" in x for x in p.warnings) == 3
    assert not [x for x in p.workloads if x.kind == "Pod"]  # claimed: no loose pods


def test_a_labelled_pod_of_a_flat_podgroup_is_not_scheduled(tmp_path: Path) -> None:
    p = plan(tmp_path, podgroup({"minMember": 1}), pod("a"), pod("b", subgroup="x"))
    assert list(only(p).pods) == ["team/a"]
    assert any("has a subgroup label" in x for x in p.warnings)


def test_pods_join_through_the_annotation_in_their_namespace(tmp_path: Path) -> None:
    p = plan(tmp_path, podgroup({"minMember": 1}), pod("a"), pod("b", ns="other"))
    names = {w.name: w for w in p.workloads}
    assert list(names["team/llm"].pods) == ["team/a"]
    assert names["other/llm"].waiting == "waiting for PodGroup other/llm: not found"
    assert list(names["other/llm"].pods) == ["other/b"]  # it waits with its pods


def test_too_few_pods_waits_and_a_leaf_short_of_pods_is_left_out(tmp_path: Path) -> None:
    pods = [p for p in disagg_pods() if p["metadata"]["name"] != "p1-1"]
    root = tree(only(plan(tmp_path, TOPOLOGY, podgroup(DISAGG), *pods)))
    assert [n[0] for n in outline(root)] == [
        "team/llm", "team/llm/prefill", "team/llm/prefill/prefill-0", "team/llm/decode"]
    pods = [p for p in pods if p["metadata"]["name"] != "d-1"]
    w = only(plan(tmp_path, TOPOLOGY, podgroup(DISAGG), *pods))
    assert w.tree is None and w.waiting == "waiting for pods: decode has 1 of minMember 2"


def test_bound_pods_count_toward_their_leaf(tmp_path: Path) -> None:
    nodes = cluster()
    pods = disagg_pods()
    pods[0]["spec"]["nodeName"] = nodes[0].name
    p = plan(tmp_path, TOPOLOGY, podgroup(DISAGG), *pods, with_nodes=nodes)
    leaf = tree(only(p)).children[0].children[0]  # type: ignore[union-attr]
    assert isinstance(leaf, PodSet) and (leaf.size, leaf.min_pods) == (1, 1)


# -- placement ----------------------------------------------------------------------------


def test_the_disaggregated_example_lands_as_its_constraints_say(tmp_path: Path) -> None:
    p = plan(tmp_path, TOPOLOGY, podgroup(DISAGG), *disagg_pods(), with_nodes=cluster())
    out = place(p)["team/llm"]
    assert out.admitted, out.reason
    assert len(domains(p, out, BLOCK)) == 1
    for prefix in ("p0-", "p1-"):
        placed = domains(p, out, RACK, prefix)
        assert len(placed) <= 1  # each prefill replica in one rack (one may stay out)
    assert len(domains(p, out, RACK, "p0-") | domains(p, out, RACK, "p1-")) >= 1


def test_a_required_rack_too_small_is_rejected_with_a_reason(tmp_path: Path) -> None:
    spec = {"minMember": 5, "topologyConstraint": {"topology": "fabric",
                                                   "requiredTopologyLevel": "rack"}}
    pods = [pod(f"w-{i}", gpu=4) for i in range(5)]  # 20 GPUs; a rack has 16
    p = plan(tmp_path, TOPOLOGY, podgroup(spec), *pods, with_nodes=cluster())
    out = place(p)["team/llm"]
    assert not out.admitted
    assert "rack" in out.reason


def test_kai_example_shapes_load_jobs_and_all(tmp_path: Path) -> None:
    """As KAI's examples/external-podgroup: Jobs whose pods name the PodGroup, two
    Topologies with different levels, a level named by an alias."""
    other = {"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology",
             "metadata": {"name": "zones"},
             "spec": {"levels": [{"nodeLabel": "topology.kubernetes.io/zone"},
                                 {"nodeLabel": HOST}]}}
    spec = {"queue": "default-queue", "minSubGroup": 2, "subGroups": [
        {"name": "racked", "minMember": 2,
         "topologyConstraint": {"topology": "fabric", "requiredTopologyLevel": "rack"}},
        {"name": "zoned", "minMember": 2,
         "topologyConstraint": {"topology": "zones",
                                "requiredTopologyLevel": "topology.kubernetes.io/zone"}}]}

    def job(name: str, subgroup: str) -> dict[str, Any]:
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name, "namespace": "team",
                             "annotations": {"kai.scheduler/skip-podgrouper": "true"}},
                "spec": {"parallelism": 2, "completions": 2, "template": {
                    "metadata": {"annotations": {POD_GROUP_ANNOTATION: "llm"},
                                 "labels": {SUBGROUP_LABEL: subgroup}},
                    "spec": {"schedulerName": "kai-scheduler", "restartPolicy": "Never",
                             "containers": [{"name": "c", "image": "x", "resources": {
                                 "limits": {"nvidia.com/gpu": "4"}}}]}}}}

    p = plan(tmp_path, TOPOLOGY, other, podgroup(spec), job("a", "racked"), job("b", "zoned"),
             with_nodes=cluster())
    w = only(p, "PodGroup")
    assert [x.kind for x in p.workloads] == ["PodGroup"]  # the Jobs have no Kueue queue
    assert outline(tree(w))[1:] == [("team/llm/racked", -1, 2, 2), ("team/llm/zoned", -1, 2, 2)]
    assert place(p)["team/llm"].admitted


# -- rejected on load: the webhook's rules ------------------------------------------------


def _sub(i: int, **fields: Any) -> Callable[[dict[str, Any]], None]:
    def edit(spec: dict[str, Any]) -> None:
        spec["subGroups"][i].update(fields)
    return edit


BAD = [
    pytest.param(lambda s: s.update(minMember=0), "spec.minSubGroup",
                 "minMember and minSubGroup are mutually exclusive", id="both-min-fields"),
    pytest.param(_sub(1, minSubGroup=1), "spec.subGroups[1].minSubGroup",
                 "mutually exclusive (subgroup prefill-0)", id="both-min-fields-subgroup"),
    pytest.param(_sub(3, name="prefill"), "spec.subGroups[3].name",
                 "duplicate subgroup name prefill", id="duplicate-name"),
    pytest.param(_sub(3, parent="nope"), "spec.subGroups[3].parent",
                 "parent nope of decode was not found", id="dangling-parent"),
    pytest.param(_sub(0, parent="prefill-0"), "spec.subGroups[0].parent",
                 "cycle detected in subgroups: prefill -> prefill-0 -> prefill", id="cycle"),
    pytest.param(_sub(3, minMember=None), "spec.subGroups[3].minMember",
                 "minMember is required for leaf subgroup decode", id="leaf-without-min"),
    pytest.param(_sub(3, minMember=None, minSubGroup=1), "spec.subGroups[3].minSubGroup",
                 "is a leaf", id="leaf-with-min-sub-group"),
    pytest.param(_sub(0, minSubGroup=None, minMember=2), "spec.subGroups[0].minMember",
                 "has child subgroups", id="mid-level-with-min-member"),
    pytest.param(_sub(0, minSubGroup=3), "spec.subGroups[0].minSubGroup",
                 "exceeds its 2 child subgroups", id="min-sub-group-over-children"),
    pytest.param(lambda s: s.update(minSubGroup=3), "spec.minSubGroup",
                 "exceeds its 2 root subgroups", id="root-min-sub-group-over-children"),
    pytest.param(_sub(3, name="Decode"), "spec.subGroups[3].name", "invalid subgroup name",
                 id="name-pattern"),
    pytest.param(lambda s: s.update(preemptibility="sometimes"), "spec.preemptibility",
                 "must be one of: preemptible, non-preemptible", id="preemptibility"),
    pytest.param(_sub(3, topologyConstraint={"topology": "fabric"}),
                 "spec.subGroups[3].topologyConstraint", "no topology constraints were found",
                 id="topology-without-levels"),
    pytest.param(lambda s: s.update(minMember=-1, minSubGroup=None), "spec.minMember",
                 "must be >= 0", id="negative"),
]


@pytest.mark.parametrize(("edit", "field", "message"), BAD)
def test_bad_podgroups_are_one_line_errors(tmp_path: Path, edit: Callable[[dict[str, Any]], None],
                                           field: str, message: str) -> None:
    spec = copy.deepcopy(DISAGG)
    edit(spec)
    spec["subGroups"] = [{k: v for k, v in s.items() if v is not None} for s in spec["subGroups"]]
    if spec.get("minSubGroup") is None:
        spec.pop("minSubGroup", None)
    err = load_error(tmp_path, TOPOLOGY, podgroup(spec))
    assert (err.file, err.doc, err.obj, err.field) == (str(tmp_path / "in.yaml"), 1,
                                                       "PodGroup/llm", field)
    assert message in err.message
    assert "\n" not in str(err)


def test_a_long_subgroup_chain_is_refused_quickly(tmp_path: Path) -> None:
    """3,000 subgroups each the parent of the next: one line naming the first too deep,
    not a recursion error (nor the quadratic walk that never answered)."""
    chain = [{"name": "s0"}] + [{"name": f"s{i}", "parent": f"s{i - 1}"} for i in range(1, 3000)]
    chain[-1]["minMember"] = 1
    err = load_error(tmp_path, podgroup({"subGroups": chain}))
    assert err.field == "spec.subGroups[16].parent"
    assert "subgroup s16 is 17 levels deep" in err.message


def test_lower_case_subgroups_is_refused_with_a_hint(tmp_path: Path) -> None:
    obj = podgroup({"minMember": 1, "subgroups": [{"name": "a", "minMember": 1}]})
    err = load_error(tmp_path, obj)
    assert err.field == "spec.subgroups"


# -- invalid across objects: the Topology -------------------------------------------------

TOPO_BAD = [
    pytest.param({"topology": "nope", "requiredTopologyLevel": "rack"},
                 "spec.topologyConstraint.topology", "topology 'nope' not found",
                 id="missing-topology"),
    pytest.param({"topology": "fabric", "requiredTopologyLevel": "row"},
                 "spec.topologyConstraint.requiredTopologyLevel",
                 "level 'row' is not a level of topology fabric", id="unknown-level"),
    pytest.param({"topology": "fabric", "requiredTopologyLevel": "rack",
                  "preferredTopologyLevel": "block"},
                 "spec.topologyConstraint.preferredTopologyLevel", "is wider than",
                 id="preferred-wider-than-required"),
]


@pytest.mark.parametrize(("constraint", "field", "message"), TOPO_BAD)
def test_constraints_the_topology_cannot_resolve_make_the_workload_invalid(
        tmp_path: Path, constraint: dict[str, Any], field: str, message: str) -> None:
    w = only(plan(tmp_path, TOPOLOGY, podgroup({"minMember": 1,
                                                "topologyConstraint": constraint}), pod("a")))
    assert w.tree is None
    assert f"in.yaml[doc 1]: PodGroup/llm: {field}: " in w.invalid
    assert message in w.invalid


def test_a_child_looser_than_its_parent_is_invalid(tmp_path: Path) -> None:
    spec = copy.deepcopy(DISAGG)
    spec["topologyConstraint"]["requiredTopologyLevel"] = "rack"
    spec["subGroups"][0]["topologyConstraint"] = {"topology": "fabric",
                                                  "requiredTopologyLevel": "block"}
    w = only(plan(tmp_path, TOPOLOGY, podgroup(spec), *disagg_pods()))
    assert "PodGroup/llm: spec.subGroups[0].topologyConstraint.requiredTopologyLevel: " \
        "requiredTopologyLevel 'block' is wider than its parent's" in w.invalid


def test_empty_topology_name_ignores_the_levels_with_a_warning(tmp_path: Path) -> None:
    spec = {"minMember": 1, "topologyConstraint": {"requiredTopologyLevel": "rack"}}
    p = plan(tmp_path, podgroup(spec), pod("a"))
    assert tree(only(p)).topology == ()
    assert any("no topology named" in x for x in p.warnings)


def test_old_api_fields_load_and_are_ignored(tmp_path: Path) -> None:
    spec = {"minMember": 2, "parallelism": 2, "completions": 2, "backoffLimit": 3}
    assert tree(only(plan(tmp_path, podgroup(spec), pod("a"), pod("b")))).min_pods == 2


def test_without_any_kai_topology_prefixed_levels_are_node_label_keys(tmp_path: Path) -> None:
    spec = {"minMember": 1, "topologyConstraint": {"topology": "cluster-topology",
                                                   "requiredTopologyLevel": RACK}}
    p = plan(tmp_path, podgroup(spec), pod("a"))
    assert tree(only(p)).topology == (Constraint(RACK),)
    assert any("levels are read as node label keys" in x for x in p.warnings)
    alias = {"minMember": 1, "topologyConstraint": {"topology": "cluster-topology",
                                                    "requiredTopologyLevel": "rack"}}
    assert "topology 'cluster-topology' not found" in only(
        plan(tmp_path, podgroup(alias), pod("a"))).invalid


# -- kai.scheduler/batch-min-member on a batch Job: KAI's podgrouper ---------------------


def _batch_job(annotations: dict[str, str], scheduler: str = "kai-scheduler",
               count: int = 4) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "hpo", "namespace": "team", "annotations": annotations,
                         "labels": {"kai.scheduler/queue": "research"}},
            "spec": {"parallelism": count, "completions": count, "template": {"spec": {
                "schedulerName": scheduler, "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "x",
                                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}


def _nodes(count: int) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": f"n{i}", "labels": {HOST: f"n{i}"}},
             "status": {"allocatable": {"cpu": "64", "nvidia.com/gpu": "8", "pods": "110"}}}
            for i in range(count)]


def _place(tmp_path: Path, *objects: dict[str, Any]) -> Any:
    path = write(tmp_path, objects)
    return path, CliRunner().invoke(app, ["place", str(path), "-o", "json"])


def _placed(result: Any) -> int:
    data = json.loads(result.stdout)
    return sum(1 for w in data["workloads"] for p in w["pods"] if p.get("node"))


def test_batch_min_member_makes_the_job_one_gang(tmp_path: Path) -> None:
    """4 pods, room for 3: with batch-min-member 4 none runs (all or nothing), with 3 the
    PodGroup runs 3; without the annotation KAI's PodGroup needs 1 and 3 run too."""
    _, result = _place(tmp_path, *_nodes(3), _batch_job({"kai.scheduler/batch-min-member": "4"}))
    assert result.exit_code == 3, result.output
    assert _placed(result) == 0
    (w,) = json.loads(result.stdout)["workloads"]
    assert (w["kind"], w["name"], w["minimum"], w["status"]) == (
        "PodGroup", "pg-hpo", 4, "Rejected")
    _, result = _place(tmp_path, *_nodes(3), _batch_job({"kai.scheduler/batch-min-member": "3"}))
    assert _placed(result) == 3
    _, result = _place(tmp_path, *_nodes(3), _batch_job({}))
    assert _placed(result) == 3


def test_batch_min_member_that_is_no_integer_is_a_one_line_error(tmp_path: Path) -> None:
    path, result = _place(tmp_path, *_nodes(3),
                          _batch_job({"kai.scheduler/batch-min-member": "four"}))
    assert result.exit_code == 1, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}[doc 3]: Job/hpo: metadata.annotations."
                           "kai.scheduler/batch-min-member: ")
    assert "'four'" in line and "Traceback" not in result.output


def test_batch_min_member_on_pods_kai_does_not_schedule_is_a_warning(tmp_path: Path) -> None:
    path, result = _place(tmp_path, *_nodes(3), _batch_job(
        {"kai.scheduler/batch-min-member": "4"}, scheduler="default-scheduler"))
    assert _placed(result) == 3  # scheduled one by one, as without KAI
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("warning:")]
    assert f"{path}[doc 3]: Job/hpo: metadata.annotations.kai.scheduler/batch-min-member" \
        in line
    assert "default-scheduler" in line


# -- KAI's podgrouper for a JobSet: a SubGroup per replicatedJob, a leaf per replica ---------


def _jobset(annotations: dict[str, str] | None = None, scheduler: str = "kai-scheduler",
            order: str | None = None, leaf: dict[str, str] | None = None) -> dict[str, Any]:
    def rj(name: str, replicas: int, parallelism: int, ann: dict[str, str]) -> dict[str, Any]:
        return {"name": name, "replicas": replicas, "template": {
            "metadata": {"annotations": ann},
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {
                "spec": {"schedulerName": scheduler, "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "x", "resources": {
                             "limits": {"nvidia.com/gpu": "8"}}}]}}}}}

    spec: dict[str, Any] = {"replicatedJobs": [rj("workers", 2, 2, leaf or {}),
                                               rj("driver", 1, 1, {})]}
    if order is not None:
        spec["startupPolicy"] = {"startupPolicyOrder": order}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "team", "annotations": annotations or {}},
            "spec": spec}


def test_a_jobset_kai_schedules_is_one_podgroup_of_replica_subgroups(tmp_path: Path) -> None:
    """KAI's JobSetGrouper: every replicatedJob, all its replicas, each replica whole;
    room for 4 of the 5 pods places none (they were placed one by one: 4 of 5)."""
    w = only(plan(tmp_path, _jobset()))
    assert (w.kind, w.name) == ("PodGroup", "team/pg-js")
    assert outline(tree(w)) == [
        ("team/pg-js", 2, 0, 5),
        ("team/pg-js/workers", 2, 0, 4),
        ("team/pg-js/workers/workers-replica-0", -1, 2, 2),
        ("team/pg-js/workers/workers-replica-1", -1, 2, 2),
        ("team/pg-js/driver", 1, 0, 1),
        ("team/pg-js/driver/driver-replica-0", -1, 1, 1)]
    _, result = _place(tmp_path, *_nodes(4), _jobset())
    assert result.exit_code == 3 and _placed(result) == 0, result.output
    _, result = _place(tmp_path, *_nodes(5), _jobset())
    assert _placed(result) == 5


def test_a_kai_jobset_minimum_startup_order_and_replica_topology(tmp_path: Path) -> None:
    assert tree(only(plan(tmp_path, _jobset(order="InOrder")))).min_groups == 1
    assert tree(only(plan(tmp_path, _jobset(
        {"kai.scheduler/batch-min-member": "5"})))).min_groups == 2  # at most every one
    leaf = {"kai.scheduler/topology": "cluster-topology",
            "kai.scheduler/topology-required-placement": RACK}
    w = only(plan(tmp_path, _jobset(leaf=leaf)))
    replica = find(tree(w), "team/pg-js/workers/workers-replica-0")
    assert replica.topology == (Constraint(RACK),)
    path, result = _place(tmp_path, *_nodes(3), _jobset({"kai.scheduler/batch-min-member": "0"}))
    assert result.exit_code == 1, result.output
    assert f"{path}[doc 3]: JobSet/js: metadata.annotations.kai.scheduler/batch-min-member" \
        in result.stderr and "must be >= 1" in result.stderr


def test_a_jobset_of_another_scheduler_is_not_kais(tmp_path: Path) -> None:
    p = plan(tmp_path, _jobset(scheduler="default-scheduler"))
    assert [w.kind for w in p.workloads] == ["Pod"] * 5
