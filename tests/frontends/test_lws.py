"""LeaderWorkerSet: the pods LWS creates, one gang per group, subgroups, exclusive
topology (a group owns its domain), Kueue's annotations, and the webhook's rules."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from tas_helpers import (
    BLOCK,
    HOST,
    RACK,
    cluster,
    domains,
    load_error,
    outline,
    place,
    plan,
    tree,
)

from gangsched.frontends.lws import (
    EXCLUSIVE,
    GROUP_KEY,
    SUBGROUP_EXCLUSIVE,
    SUBGROUP_INDEX,
    SUBGROUP_KEY,
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


# -- KAI: the PodGroup KAI's podgrouper writes for an LWS it schedules -----------------------

KAI_TOPOLOGY = yaml.safe_load(f"""
apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata: {{name: cluster-topology}}
spec:
  levels:
  - {{nodeLabel: {BLOCK}, alias: block}}
  - {{nodeLabel: {RACK}, alias: rack}}
  - {{nodeLabel: {HOST}}}
""")

# KAI's docs/topology/segments.md "LeaderWorkerSet -- LeaderWorker Policy", segment size
# as an annotation, KAI's queue label, pods of 4 GPUs (4 to a rack of 2 hosts of 8)
KAI_LWS = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: lws-segmented
  namespace: infer
  labels: {kai.scheduler/queue: default-queue}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 5
    workerTemplate:
      metadata:
        annotations:
          kai.scheduler/topology: cluster-topology
          kai.scheduler/segment-size: "2"
          kai.scheduler/segment-topology-required-placement: rack
      spec:
        schedulerName: kai-scheduler
        containers:
        - name: worker
          image: my/image:latest
          resources: {limits: {nvidia.com/gpu: "4"}}
"""


def kai_lws(gpu: int = 4, **edits: Any) -> dict[str, Any]:
    """KAI_LWS with ``edits``: ``spec``/``lwt`` fields, ``annotations`` (the LWS's),
    ``worker`` (the workerTemplate's annotations; None drops one)."""
    obj: dict[str, Any] = yaml.safe_load(KAI_LWS)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    lwt["workerTemplate"]["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpu"] = str(gpu)
    obj["spec"].update(edits.pop("spec", {}))
    lwt.update(edits.pop("lwt", {}))
    obj["metadata"]["annotations"] = edits.pop("annotations", {})
    worker = lwt["workerTemplate"]["metadata"]["annotations"]
    for key, value in edits.pop("worker", {}).items():
        if value is None:
            worker.pop(key)
        else:
            worker[key] = value
    assert not edits, edits
    return obj


def racks(p: Any, out: Any, *pods: str, key: str = RACK) -> set[str]:
    """The ``key`` domains (racks) the named pods landed in."""
    by_name = {n.name: n for n in p.nodes}
    return {by_name[out.pods[f"infer/{pod}"]].labels[key] for pod in pods}


SEGMENT0 = ("lws-segmented-0", "lws-segmented-0-1", "lws-segmented-0-2")
SEGMENT1 = ("lws-segmented-0-3", "lws-segmented-0-4")


def test_kai_segments_each_take_a_rack_the_leader_in_the_first(tmp_path: Path) -> None:
    """size 5, segment size 2: 4 divides into segments, so the leader is the extra pod
    of segment 0 (3 pods), segment 1 has 2; each segment in one rack (16 GPUs), the
    group (20 GPUs) in two."""
    p = plan(tmp_path, KAI_TOPOLOGY, kai_lws(), with_nodes=cluster())
    root = tree(p.workloads[0])
    assert outline(root) == [
        ("infer/lws-segmented-0", 2, 0, 5),
        ("infer/lws-segmented-0/segment-0", 2, 0, 3),
        ("infer/lws-segmented-0/segment-0/leader", -1, 1, 1),
        ("infer/lws-segmented-0/segment-0/workers", -1, 2, 2),
        ("infer/lws-segmented-0/segment-1", -1, 2, 2)]
    assert root.kind == "LeaderWorkerSet" and root.topology == ()
    assert [c.topology for c in root.children] == [(Constraint(RACK),)] * 2
    assert root.children[0].children[0].pods == ("infer/lws-segmented-0",)
    out = place(p)["infer/lws-segmented-0"]
    assert out.admitted, out.reason
    assert len(racks(p, out, *SEGMENT0)) == len(racks(p, out, *SEGMENT1)) == 1
    assert p.warnings == []


def test_kai_segments_when_size_minus_one_does_not_divide(tmp_path: Path) -> None:
    """size 4, segment size 2: worker w is in segment w/2, the leader with worker 1."""
    p = plan(tmp_path, KAI_TOPOLOGY, kai_lws(lwt={"size": 4}), with_nodes=cluster())
    root = tree(p.workloads[0])
    assert outline(root) == [
        ("infer/lws-segmented-0", 2, 0, 4),
        ("infer/lws-segmented-0/segment-0", 2, 0, 2),
        ("infer/lws-segmented-0/segment-0/leader", -1, 1, 1),
        ("infer/lws-segmented-0/segment-0/workers", -1, 1, 1),
        ("infer/lws-segmented-0/segment-1", -1, 2, 2)]
    assert root.children[1].pods == ("infer/lws-segmented-0-2", "infer/lws-segmented-0-3")


def test_a_first_segment_that_fits_no_rack_leaves_the_group_unplaced(tmp_path: Path) -> None:
    """Pods of 6 GPUs: the leader's segment (3 pods, 18 GPUs) fits no rack of 16, though
    the cluster has room for the group; with LeaderExcluded (subGroupPolicy, whose
    subGroupSize is KAI's segment size) the segments are 2 pods and fit."""
    p = plan(tmp_path, KAI_TOPOLOGY, kai_lws(gpu=6), with_nodes=cluster())
    out = place(p)["infer/lws-segmented-0"]
    assert not out.admitted
    policy = {"subGroupPolicy": {"subGroupSize": 2, "subGroupPolicyType": "LeaderExcluded"}}
    p = plan(tmp_path, KAI_TOPOLOGY,
             kai_lws(gpu=6, lwt=policy, worker={"kai.scheduler/segment-size": None}),
             with_nodes=cluster())
    root = tree(p.workloads[0])
    assert outline(root) == [
        ("infer/lws-segmented-0", 3, 0, 5), ("infer/lws-segmented-0/leader", -1, 1, 1),
        ("infer/lws-segmented-0/segment-0", -1, 2, 2),
        ("infer/lws-segmented-0/segment-1", -1, 2, 2)]
    assert root.children[0].topology == ()
    out = place(p)["infer/lws-segmented-0"]
    assert out.admitted, out.reason
    assert len(racks(p, out, "lws-segmented-0-1", "lws-segmented-0-2")) == 1


def test_kai_segment_preferred_level_and_workload_level_topology(tmp_path: Path) -> None:
    """docs/topology/segments.md's multi-level shape: the LWS's own kai.scheduler/topology
    annotations put the group in one block, the segments prefer a rack."""
    obj = kai_lws(annotations={"kai.scheduler/topology": "cluster-topology",
                               "kai.scheduler/topology-required-placement": "block"},
                  worker={"kai.scheduler/topology": None,
                          "kai.scheduler/segment-topology-required-placement": None,
                          "kai.scheduler/segment-topology-preferred-placement": "rack"})
    p = plan(tmp_path, KAI_TOPOLOGY, obj, with_nodes=cluster())
    root = tree(p.workloads[0])
    assert root.topology == (Constraint(BLOCK),)
    assert [c.topology for c in root.children] == [(Constraint(RACK, "preferred"),)] * 2
    out = place(p)["infer/lws-segmented-0"]
    assert out.admitted and len(domains(p, out, BLOCK)) == 1


def test_kai_topology_named_on_the_lws_serves_the_segments(tmp_path: Path) -> None:
    """kai.scheduler/topology on the LWS alone (segments.md: it may be set at the
    workload level): the segments' levels resolve through it; the group has none."""
    obj = kai_lws(annotations={"kai.scheduler/topology": "cluster-topology"},
                  worker={"kai.scheduler/topology": None})
    p = plan(tmp_path, KAI_TOPOLOGY, obj, with_nodes=cluster())
    root = tree(p.workloads[0])
    assert root.topology == ()
    assert [c.topology for c in root.children] == [(Constraint(RACK),)] * 2
    assert p.warnings == []


def test_kai_workload_level_topology_without_segments(tmp_path: Path) -> None:
    """No segment size: SubGroups leader and workers; the LWS's required rack holds the
    group (5 x 2 GPUs) in one rack, where every group of the old single gang spread."""
    obj = kai_lws(gpu=2, annotations={"kai.scheduler/topology": "cluster-topology",
                                      "kai.scheduler/topology-required-placement": "rack"},
                  worker={"kai.scheduler/segment-size": None,
                          "kai.scheduler/segment-topology-required-placement": None},
                  spec={"replicas": 2})
    p = plan(tmp_path, KAI_TOPOLOGY, obj, with_nodes=cluster())
    for w in p.workloads:
        root = tree(w)
        assert outline(root)[1:] == [(f"{w.name}/leader", -1, 1, 1),
                                     (f"{w.name}/workers", -1, 4, 4)]
        assert root.topology == (Constraint(RACK),)
    out = place(p)
    assert all(len(domains(p, o, RACK)) == 1 and o.admitted for o in out.values())


def test_kai_workload_level_topology_naming_no_topology_is_invalid(tmp_path: Path) -> None:
    obj = kai_lws(annotations={"kai.scheduler/topology": "nope",
                               "kai.scheduler/topology-required-placement": "rack"})
    (w,) = plan(tmp_path, KAI_TOPOLOGY, obj, with_nodes=cluster()).workloads
    assert w.tree is None
    assert ("LeaderWorkerSet/lws-segmented: metadata.annotations.kai.scheduler/topology: "
            "topology 'nope' not found") in w.invalid


def _leader_pod(node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "lws-segmented-0", "namespace": "infer",
        "labels": {"leaderworkerset.sigs.k8s.io/name": "lws-segmented", WORKER_INDEX: "0"}},
        "spec": {"nodeName": node, "schedulerName": "kai-scheduler",
                 "containers": [{"name": "worker", "image": "x"}]}}


def test_kai_leader_created_needs_the_group_leader_ready_the_leader_first(
        tmp_path: Path) -> None:
    """LeaderCreated: minMember size (leader 1, workers 4). LeaderReady: minMember 1 while
    the leader is pending, the PodGroup holding it alone (LWS creates the workers once it
    is ready); with the leader running, the workers as a gang of 4."""
    plain = {"kai.scheduler/segment-size": None,
             "kai.scheduler/segment-topology-required-placement": None}
    created = tree(plan(tmp_path, kai_lws(worker=plain)).workloads[0])
    assert outline(created) == [
        ("infer/lws-segmented-0", 2, 0, 5), ("infer/lws-segmented-0/leader", -1, 1, 1),
        ("infer/lws-segmented-0/workers", -1, 4, 4)]
    ready = kai_lws(worker=plain, spec={"startupPolicy": "LeaderReady"})
    p = plan(tmp_path, ready, with_nodes=cluster())
    (w,) = p.workloads
    assert outline(tree(w)) == [
        ("infer/lws-segmented-0", 1, 0, 1), ("infer/lws-segmented-0/leader", -1, 1, 1)]
    assert list(w.pods) == ["infer/lws-segmented-0"]
    assert list(place(p)["infer/lws-segmented-0"].pods) == ["infer/lws-segmented-0"]
    nodes = cluster()
    p = plan(tmp_path, ready, _leader_pod(nodes[0].name), with_nodes=nodes)
    assert outline(tree(p.workloads[0])) == [
        ("infer/lws-segmented-0", 1, 0, 4), ("infer/lws-segmented-0/workers", -1, 4, 4)]


def test_kai_leader_ready_segments_once_the_leader_runs(tmp_path: Path) -> None:
    """Segments under LeaderReady: KAI segments minMember pods, 1 while the leader is
    pending, so its PodGroup fails (segment size above 1); with the leader running the
    segments are built, the leader counted in segment 0."""
    obj = kai_lws(spec={"startupPolicy": "LeaderReady"})
    (w,) = plan(tmp_path, KAI_TOPOLOGY, obj, with_nodes=cluster()).workloads
    assert w.tree is None
    assert "segment size 2 is greater than 1, the PodGroup's minMember while the leader is " \
        "pending (startupPolicy LeaderReady)" in w.invalid
    nodes = cluster()
    p = plan(tmp_path, KAI_TOPOLOGY, obj, _leader_pod(nodes[0].name), with_nodes=nodes)
    assert outline(tree(p.workloads[0])) == [
        ("infer/lws-segmented-0", 2, 0, 4),
        ("infer/lws-segmented-0/segment-0", 1, 0, 2),
        ("infer/lws-segmented-0/segment-0/workers", -1, 2, 2),
        ("infer/lws-segmented-0/segment-1", -1, 2, 2)]


WORKER_SEGMENT = ("spec.leaderWorkerTemplate.workerTemplate.metadata.annotations."
                  "kai.scheduler/segment-size")


@pytest.mark.parametrize(("edits", "field", "message"), [
    pytest.param({"worker": {"kai.scheduler/segment-size": "0"}}, WORKER_SEGMENT,
                 "segment size 0 is not valid: it must be greater than 1", id="zero"),
    pytest.param({"worker": {"kai.scheduler/segment-size": "-2"}}, WORKER_SEGMENT,
                 "segment size -2 is not valid: it must be greater than 1", id="negative"),
    pytest.param({"worker": {"kai.scheduler/segment-size": "1"}}, WORKER_SEGMENT,
                 "segment size 1 is not valid: it must be greater than 1", id="one"),
    pytest.param({"worker": {"kai.scheduler/segment-size": "2.5"}}, WORKER_SEGMENT,
                 "invalid segment size '2.5': not an integer", id="non-integer"),
    pytest.param({"worker": {"kai.scheduler/segment-size": "six"}}, WORKER_SEGMENT,
                 "invalid segment size 'six': not an integer", id="word"),
    pytest.param({"worker": {"kai.scheduler/segment-size": "6"}}, WORKER_SEGMENT,
                 "segment size 6 is greater than 5, the PodGroup's minMember", id="above-size"),
    pytest.param({"annotations": {"kai.scheduler/segment-size": "x"}},
                 "metadata.annotations.kai.scheduler/segment-size",
                 "invalid segment size 'x': not an integer", id="lws-annotation-first"),
    pytest.param({"lwt": {"subGroupPolicy": {"subGroupSize": 1}}},
                 "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize",
                 "segment size 1 is not valid", id="sub-group-size-one"),
])
def test_kai_invalid_segment_sizes_are_one_line_errors(
        tmp_path: Path, edits: dict[str, Any], field: str, message: str) -> None:
    """KAI's grouper fails (no PodGroup: the pods never run): every group is invalid,
    the error naming file, object and field."""
    p = plan(tmp_path, KAI_TOPOLOGY, kai_lws(spec={"replicas": 2}, **edits),
             with_nodes=cluster())
    assert [w.name for w in p.workloads] == ["infer/lws-segmented-0", "infer/lws-segmented-1"]
    for w in p.workloads:
        assert w.tree is None and "\n" not in w.invalid
        assert f"in.yaml[doc 1]: LeaderWorkerSet/lws-segmented: {field}: {message}" in w.invalid
        assert "so its pods never run" in w.invalid


def test_kai_single_divisible_segment_asks_one_pod_too_many(tmp_path: Path) -> None:
    """size 3, segment size 2: one segment, and KAI counts the leader twice (in
    fixLastSegmentSize and handleLeaderInFirstSegment): workers minMember 3 of 2 pods, so
    the group waits, as on KAI, with a warning."""
    p = plan(tmp_path, KAI_TOPOLOGY, kai_lws(lwt={"size": 3}), with_nodes=cluster())
    (w,) = p.workloads
    assert w.tree is None and w.waiting == "waiting for pods: workers has 2 of minMember 3"
    (note,) = p.warnings
    assert f"{WORKER_SEGMENT}: KAI's LWS grouper asks SubGroup workers for 3 pods" in note


def test_kai_exclusive_subgroups_are_the_segments(tmp_path: Path) -> None:
    """LWS's exclusive topology (pod affinities KAI honours) on KAI's tree: the group owns
    a rack, each segment (LWS's subgroup) a host."""
    obj = kai_lws(gpu=1, lwt={"subGroupPolicy": {"subGroupSize": 2}},
                  annotations={EXCLUSIVE: RACK, SUBGROUP_EXCLUSIVE: HOST},
                  worker={"kai.scheduler/segment-size": None})
    p = plan(tmp_path, KAI_TOPOLOGY, obj, with_nodes=cluster())
    root = tree(p.workloads[0])
    assert root.topology == (Constraint(RACK, exclusive=exclusive_set("infer", GROUP_KEY)),)
    sub = Constraint(HOST, exclusive=exclusive_set("infer", SUBGROUP_KEY))
    assert [c.topology for c in root.children] == [(sub, Constraint(RACK))] * 2
    out = place(p)["infer/lws-segmented-0"]
    assert out.admitted, out.reason
    first, second = racks(p, out, *SEGMENT0, key=HOST), racks(p, out, *SEGMENT1, key=HOST)
    assert len(first) == len(second) == 1 and first != second
    assert len(domains(p, out, RACK)) == 1


def test_kai_annotations_it_ignores_are_warnings(tmp_path: Path) -> None:
    """Segment placement on the LWS itself and batch-min-member are not read by KAI's LWS
    grouper; the leader's own segment level is, when it groups the leader (not
    modelled); the same annotations on an LWS of another scheduler say nothing."""
    obj = kai_lws(annotations={"kai.scheduler/segment-topology-required-placement": "block",
                               "kai.scheduler/batch-min-member": "1"})
    obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = {
        "metadata": {"annotations": {
            "kai.scheduler/segment-topology-required-placement": "block"}},
        "spec": {"schedulerName": "kai-scheduler",
                 "containers": [{"name": "leader", "image": "x"}]}}
    notes = plan(tmp_path, KAI_TOPOLOGY, obj).warnings
    assert [n.split("LeaderWorkerSet/lws-segmented: ")[1].split(":")[0] for n in notes] == [
        "metadata.annotations.kai.scheduler/segment-topology-required-placement",
        "metadata.annotations.kai.scheduler/batch-min-member",
        "spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations."
        "kai.scheduler/segment-topology-required-placement"]
    assert "not modelled" in notes[2]
    other = copy.deepcopy(obj)
    for template in ("workerTemplate", "leaderTemplate"):
        other["spec"]["leaderWorkerTemplate"][template]["spec"].pop("schedulerName")
    assert plan(tmp_path, KAI_TOPOLOGY, other).warnings == []
