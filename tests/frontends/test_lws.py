"""LeaderWorkerSet: the pods LWS creates, one gang per group, subgroups, exclusive
topology (a group owns its domain), Kueue's annotations, and the webhook's rules."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tas_helpers import HOST, RACK, cluster, domains, load_error, outline, place, plan, tree

from gangsched.frontends.lws import (
    EXCLUSIVE,
    GROUP_KEY,
    SUBGROUP_EXCLUSIVE,
    SUBGROUP_INDEX,
    WORKER_INDEX,
    exclusive_set,
)
from gangsched.gang import Constraint


def container(gpu: int = 2, cpu: str = "1") -> dict[str, Any]:
    return {"name": "c", "image": "x",
            "resources": {"requests": {"cpu": cpu, "nvidia.com/gpu": str(gpu)}}}


def lws(name: str = "dsr", replicas: int = 2, size: int = 4, *, leader: bool = False,
        annotations: dict[str, str] | None = None, policy: dict[str, Any] | None = None,
        ns: str = "infer", gpu: int = 2, **spec: Any) -> dict[str, Any]:
    template: dict[str, Any] = {"size": size,
                                "workerTemplate": {"spec": {"containers": [container(gpu)]}}}
    if leader:
        template["leaderTemplate"] = {"metadata": {"labels": {"role": "leader"}},
                                      "spec": {"containers": [container(0, "4")]}}
    if policy is not None:
        template["subGroupPolicy"] = policy
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": meta,
            "spec": {"replicas": replicas, "leaderWorkerTemplate": template, **spec}}


# -- pods ---------------------------------------------------------------------------------


def test_pods_are_named_and_labelled_as_lws_creates_them(tmp_path: Path) -> None:
    p = plan(tmp_path, lws(leader=True))
    by_name = {w.name: w for w in p.workloads}
    assert list(by_name) == ["infer/dsr-0", "infer/dsr-1"]
    pods = by_name["infer/dsr-1"].pods
    assert list(pods) == ["infer/dsr-1", "infer/dsr-1-1", "infer/dsr-1-2", "infer/dsr-1-3"]
    leader, worker = pods["infer/dsr-1"], pods["infer/dsr-1-2"]
    key = hashlib.sha1(b"infer/dsr-1").hexdigest()
    assert leader.labels[GROUP_KEY] == worker.labels[GROUP_KEY] == key
    assert (leader.labels[WORKER_INDEX], worker.labels[WORKER_INDEX]) == ("0", "2")
    assert leader.labels["role"] == "leader" and "role" not in worker.labels
    assert worker.annotations["leaderworkerset.sigs.k8s.io/leader-name"] == "dsr-1"
    assert leader.requests["cpu"] == 4000 and "nvidia.com/gpu" not in leader.requests


@pytest.mark.parametrize(("size", "sgs", "kind", "expected"), [
    pytest.param(5, 2, "LeaderWorker", ["0", "0", "0", "1", "1"], id="leader-is-the-extra"),
    pytest.param(4, 2, "LeaderWorker", ["0", "0", "1", "1"], id="even"),
    pytest.param(5, 2, "LeaderExcluded", [None, "0", "0", "1", "1"], id="leader-excluded"),
    pytest.param(3, 1, "LeaderExcluded", [None, "1", "2"], id="size-one-excluded"),
])
def test_subgroup_indices_follow_the_pod_webhook(tmp_path: Path, size: int, sgs: int,
                                                 kind: str, expected: list[str | None]) -> None:
    p = plan(tmp_path, lws(replicas=1, size=size,
                           policy={"subGroupPolicyType": kind, "subGroupSize": sgs}))
    pods = list(p.workloads[0].pods.values())
    assert [x.labels.get(SUBGROUP_INDEX) for x in pods] == expected


# -- the tree -----------------------------------------------------------------------------


def test_one_gang_per_group_all_pods_required(tmp_path: Path) -> None:
    p = plan(tmp_path, lws(leader=True))
    assert outline(tree(p.workloads[0])) == [
        ("infer/dsr-0", 2, 0, 4), ("infer/dsr-0/leader", -1, 1, 1),
        ("infer/dsr-0/workers", -1, 3, 3)]
    assert outline(tree(plan(tmp_path, lws()).workloads[0])) == [
        ("infer/dsr-0", 1, 0, 4), ("infer/dsr-0/pods", -1, 4, 4)]


def test_subgroups_are_groups_and_an_excluded_leader_stands_beside_them(tmp_path: Path) -> None:
    obj = lws(size=5, leader=True,
              policy={"subGroupPolicyType": "LeaderExcluded", "subGroupSize": 2},
              annotations={EXCLUSIVE: RACK, SUBGROUP_EXCLUSIVE: HOST})
    root = tree(plan(tmp_path, obj).workloads[0])
    assert outline(root) == [
        ("infer/dsr-0", 3, 0, 5), ("infer/dsr-0/leader", -1, 1, 1),
        ("infer/dsr-0/subgroup-0", 1, 0, 2), ("infer/dsr-0/subgroup-0/workers", -1, 2, 2),
        ("infer/dsr-0/subgroup-1", 1, 0, 2), ("infer/dsr-0/subgroup-1/workers", -1, 2, 2)]
    assert root.topology == (Constraint(RACK, exclusive=exclusive_set("infer", GROUP_KEY)),)
    assert root.children[1].topology == (
        Constraint(HOST, exclusive="infer/leaderworkerset.sigs.k8s.io/subgroup-key"),)
    assert root.kind == "LeaderWorkerSet"


# -- exclusive topology: placement --------------------------------------------------------


def test_each_exclusive_group_takes_a_rack_of_its_own(tmp_path: Path) -> None:
    p = plan(tmp_path, lws(replicas=4, gpu=1, annotations={EXCLUSIVE: RACK}),
             with_nodes=cluster())
    out = place(p)
    racks = [domains(p, out[f"infer/dsr-{g}"], RACK) for g in range(4)]
    assert all(len(r) == 1 for r in racks)  # 4 pods of 1 GPU: one host would do
    assert len(set().union(*racks)) == 4


def test_a_fifth_exclusive_group_finds_no_rack(tmp_path: Path) -> None:
    p = plan(tmp_path, lws(replicas=5, gpu=1, annotations={EXCLUSIVE: RACK}),
             with_nodes=cluster())
    out = place(p)
    assert [out[f"infer/dsr-{g}"].admitted for g in range(5)] == [True] * 4 + [False]
    assert "held exclusively by other groups" in out["infer/dsr-4"].reason


def test_without_the_annotation_groups_share_racks(tmp_path: Path) -> None:
    p = plan(tmp_path, lws(replicas=5, gpu=1), with_nodes=cluster())
    assert all(o.admitted for o in place(p).values())


def test_exclusive_subgroups_each_take_a_host(tmp_path: Path) -> None:
    obj = lws(replicas=1, size=5, leader=True, gpu=1,
              policy={"subGroupPolicyType": "LeaderExcluded", "subGroupSize": 2},
              annotations={EXCLUSIVE: RACK, SUBGROUP_EXCLUSIVE: HOST})
    p = plan(tmp_path, obj, with_nodes=cluster())
    out = place(p)["infer/dsr-0"]
    assert out.admitted, out.reason
    sub0 = domains(p, out, HOST, "dsr-0-1") | domains(p, out, HOST, "dsr-0-2")
    sub1 = domains(p, out, HOST, "dsr-0-3") | domains(p, out, HOST, "dsr-0-4")
    assert len(sub0) == len(sub1) == 1 and sub0 != sub1
    assert len(domains(p, out, RACK)) == 1


def test_a_running_group_keeps_its_rack_and_pins_its_missing_pods(tmp_path: Path) -> None:
    nodes = cluster()
    running = lws(replicas=2, gpu=1, annotations={EXCLUSIVE: RACK})
    objects: list[dict[str, Any]] = [running]
    for w, name in enumerate(["dsr-0", "dsr-0-1", "dsr-0-2"]):  # group 0 runs, minus one
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": "infer", "labels": {
                "leaderworkerset.sigs.k8s.io/name": "dsr", WORKER_INDEX: str(w)}},
            "spec": {"nodeName": nodes[0].name, "containers": [container(1)]}})
    p = plan(tmp_path, *objects, with_nodes=nodes)
    by_name = {w.name: w for w in p.workloads}
    g0 = tree(by_name["infer/dsr-0"])
    assert g0.topology[0].value == nodes[0].labels[RACK]  # the missing pod joins the rest
    assert list(by_name["infer/dsr-0"].pods) == ["infer/dsr-0-3"]
    assert set(p.claims) == {"infer/dsr-0", "infer/dsr-0-1", "infer/dsr-0-2"}
    out = place(p)
    assert domains(p, out["infer/dsr-0"], RACK) == {nodes[0].labels[RACK]}
    assert nodes[0].labels[RACK] not in domains(p, out["infer/dsr-1"], RACK)


# -- Kueue ------------------------------------------------------------------------------------


def test_kueue_annotations_on_the_templates(tmp_path: Path) -> None:
    """Kueue's sample-leaderworkerset-tas shape: leader and workers in one rack."""
    ann = {"kueue.x-k8s.io/podset-required-topology": RACK,
           "kueue.x-k8s.io/podset-group-name": "lws-group"}
    obj = lws(size=3, leader=True)
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "tas-user-queue"}
    lwt = obj["spec"]["leaderWorkerTemplate"]
    lwt["leaderTemplate"]["metadata"]["annotations"] = ann
    lwt["workerTemplate"]["metadata"] = {"annotations": ann}
    p = plan(tmp_path, obj, with_nodes=cluster())
    root = tree(p.workloads[0])
    assert outline(root) == [
        ("infer/dsr-0", 1, 0, 3), ("infer/dsr-0/lws-group", 2, 0, 3),
        ("infer/dsr-0/lws-group/leader", -1, 1, 1), ("infer/dsr-0/lws-group/worker", -1, 2, 2)]
    assert root.children[0].topology == (Constraint(RACK),)
    out = place(p)["infer/dsr-0"]
    assert out.admitted and len(domains(p, out, RACK)) == 1


KUEUE_TOPOLOGY = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                  "metadata": {"name": "default"},
                  "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]}}


def _kueue_lws(annotation: str, level: str) -> dict[str, Any]:
    obj = lws(size=2)
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "tas-user-queue"}
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] = {
        "annotations": {f"kueue.x-k8s.io/podset-{annotation}-topology": level}}
    return obj


def test_a_level_the_kueue_topology_lacks_makes_every_group_invalid_as_for_a_job(
        tmp_path: Path) -> None:
    p = plan(tmp_path, KUEUE_TOPOLOGY, _kueue_lws("required", "example.com/row"),
             with_nodes=cluster())
    assert [w.name for w in p.workloads] == ["infer/dsr-0", "infer/dsr-1"]
    for w in p.workloads:
        assert w.tree is None
        assert w.invalid.endswith(
            "in.yaml[doc 1]: LeaderWorkerSet/dsr: spec.leaderWorkerTemplate.workerTemplate."
            "metadata.annotations.kueue.x-k8s.io/podset-required-topology: no requested "
            f"topology level: example.com/row (levels: {RACK}, {HOST})")


def test_a_preferred_level_the_kueue_topology_lacks_is_dropped_with_a_warning(
        tmp_path: Path) -> None:
    p = plan(tmp_path, KUEUE_TOPOLOGY, _kueue_lws("preferred", "example.com/row"),
             with_nodes=cluster())
    (note,) = p.warnings
    assert "podset-preferred-topology: no requested topology level: example.com/row" in note
    placed = place(p)
    assert all(placed[w.name].admitted for w in p.workloads)


# -- rejected: the webhook's rules ----------------------------------------------------------


def _spec(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["spec"].update(fields)


def _lwt(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["spec"]["leaderWorkerTemplate"].update(fields)


BAD = [
    pytest.param(_lwt(size=0), "spec.leaderWorkerTemplate.size",
                 "size must be equal or greater than 1", id="size"),
    pytest.param(_spec(replicas=-1), "spec.replicas", "replicas must be equal or greater than 0",
                 id="replicas"),
    pytest.param(_lwt(size=5, subGroupPolicy={"subGroupSize": 3}),
                 "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize",
                 "size or size - 1 must be divisible by subGroupSize", id="not-divisible"),
    pytest.param(_lwt(size=4, subGroupPolicy={"subGroupSize": 2,
                                              "subGroupPolicyType": "LeaderExcluded"}),
                 "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize",
                 "size-1 must be divisible by subGroupSize when using LeaderExcluded",
                 id="leader-excluded"),
    pytest.param(_lwt(subGroupPolicy={"subGroupSize": 0}),
                 "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize",
                 "subGroupSize must be equal or greater than 1", id="sub-group-size"),
    pytest.param(_lwt(subGroupPolicy={"subGroupSize": 2, "subGroupPolicyType": "Other"}),
                 "spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType",
                 "must be one of: LeaderWorker, LeaderExcluded", id="policy-type"),
    pytest.param(lambda o: o["metadata"].update(annotations={SUBGROUP_EXCLUSIVE: HOST}),
                 f"metadata.annotations.{SUBGROUP_EXCLUSIVE}",
                 "cannot have subgroup-exclusive-topology without subGroupSize set",
                 id="subgroup-exclusive-without-policy"),
    pytest.param(lambda o: o["metadata"].update(annotations={EXCLUSIVE: "not a key"}),
                 f"metadata.annotations.{EXCLUSIVE}", "invalid node label key",
                 id="exclusive-key"),
    pytest.param(_spec(startupPolicy="Eventually"), "spec.startupPolicy",
                 "must be one of: LeaderCreated, LeaderReady", id="startup-policy"),
    pytest.param(_spec(rolloutStrategy={"rollingUpdateConfiguration": {"maxUnavailable": 0}}),
                 "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable",
                 "must not be 0 when `maxSurge` is 0", id="rollout"),
    pytest.param(lambda o: o["spec"]["leaderWorkerTemplate"].pop("workerTemplate"),
                 "spec.leaderWorkerTemplate.workerTemplate", "is required", id="worker-template"),
]


@pytest.mark.parametrize(("edit", "field", "message"), BAD)
def test_bad_leader_worker_sets_are_one_line_errors(
        tmp_path: Path, edit: Callable[[dict[str, Any]], None], field: str, message: str) -> None:
    obj = copy.deepcopy(lws(size=4))
    edit(obj)
    err = load_error(tmp_path, obj)
    assert (err.doc, err.obj, err.field) == (0, "LeaderWorkerSet/dsr", field)
    assert message in err.message and str(tmp_path) in str(err)


def test_the_name_must_be_a_dns_1035_label(tmp_path: Path) -> None:
    err = load_error(tmp_path, lws(name="7up"))
    assert err.field == "metadata.name"


def test_upstream_sample_shapes_load(tmp_path: Path) -> None:
    """lws config/samples and docs: volumeClaimTemplates, rolloutStrategy, restartPolicy,
    networkConfig, startupPolicy, limits-only resources."""
    obj = lws(leader=True, startupPolicy="LeaderReady",
              networkConfig={"subdomainPolicy": "UniquePerReplica"},
              rolloutStrategy={"type": "RollingUpdate", "rollingUpdateConfiguration": {
                  "maxUnavailable": "25%", "maxSurge": 1, "partition": 0}})
    lwt = obj["spec"]["leaderWorkerTemplate"]
    lwt["restartPolicy"] = "None"
    lwt["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}]
    p = plan(tmp_path, obj)
    assert len(p.workloads) == 2 and all(w.tree is not None for w in p.workloads)


def test_kai_topology_annotations_on_a_kai_scheduled_lws_are_a_warning(tmp_path: Path) -> None:
    """KAI's segments and topology on an LWS it schedules are not modelled: said, not
    silently dropped; the same annotations on an LWS of another scheduler say nothing."""
    seg = {"kai.scheduler/topology": "t", "kai.scheduler/segment-size": "2"}
    obj = lws(annotations=seg)
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["schedulerName"] = \
        "kai-scheduler"
    (note,) = plan(tmp_path, obj).warnings
    assert "LeaderWorkerSet/dsr: metadata.annotations.kai.scheduler/topology: " in note
    assert "not modelled" in note
    assert plan(tmp_path, lws(annotations=seg)).warnings == []
