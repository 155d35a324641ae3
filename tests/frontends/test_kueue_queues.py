"""Kueue's ResourceFlavor, ClusterQueue and LocalQueue: a Kueue-managed workload follows
its queue to a flavor, is placed only where the flavor's node labels and taints allow,
and waits, with Kueue's message, when the chain is broken or no flavor can hold it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from tas_helpers import BLOCK, HOST, RACK, cluster, load_error, only, place, plan, tree
from test_kueue import TOPOLOGY, grouped_pod, job
from test_volcano import pod as volcano_pod
from test_volcano import podgroup as volcano_podgroup

from gangsched.api.types import Node, Taint
from gangsched.frontends.kueue import QUEUE_LABEL, REQUIRED
from gangsched.frontends.lws import API_VERSION as LWS_API_VERSION

V2 = "kueue.x-k8s.io/v1beta2"
GROUP = "cloud.provider.com/node-group"


def flavor(name: str, labels: dict[str, str] | None = None, topology: str | None = "default",
           **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if labels is not None:
        body["nodeLabels"] = labels
    if topology:
        body["topologyName"] = topology
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": body}


def cluster_queue(*flavors: tuple[str, int], name: str = "cq", cohort: str = "",
                  borrowing: int | None = None, selector: Any = {},  # noqa: B006
                  covered: tuple[str, ...] = ("cpu", "nvidia.com/gpu")) -> dict[str, Any]:
    """A ClusterQueue over ``covered`` with (flavor, GPU quota) in order (CPU: 1,000)."""
    entries = []
    for fname, gpus in flavors:
        resources: list[dict[str, Any]] = []
        for r in covered:
            quota: dict[str, Any] = {"name": r, "nominalQuota": gpus if r != "cpu" else 1000}
            if borrowing is not None and r != "cpu":
                quota["borrowingLimit"] = borrowing
            resources.append(quota)
        entries.append({"name": fname, "resources": resources})
    spec: dict[str, Any] = {"resourceGroups": [{"coveredResources": list(covered),
                                                "flavors": entries}]}
    if selector is not None:
        spec["namespaceSelector"] = selector
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str = "q", target: str = "cq", namespace: str = "ml") -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": target}}


def grouped(block: str = "z0-b1", taint: Taint | None = None) -> list[Node]:
    """The test cluster with the nodes of ``block`` labelled ``node-group: a`` (and
    tainted), the others ``node-group: b``."""
    out = cluster()
    for n in out:
        mine = n.labels[BLOCK] == block
        n.labels[GROUP] = "a" if mine else "b"
        if mine and taint is not None:
            n.taints = (taint,)
    return out


def queues(*flavors: dict[str, Any], gpus: int = 64) -> list[dict[str, Any]]:
    return [TOPOLOGY, *flavors,
            cluster_queue(*((f["metadata"]["name"], gpus) for f in flavors)), local_queue()]


def test_a_job_is_placed_only_on_its_flavors_nodes_inside_the_required_rack(
        tmp_path: Path) -> None:
    p = plan(tmp_path, *queues(flavor("tas", {GROUP: "a"})), job({REQUIRED: RACK}),
             with_nodes=grouped())
    w = only(p, "Job")
    assert all(dict(pod.requirements.node_selector)[GROUP] == "a" for pod in w.pods.values())
    got = place(p)["ml/train"]
    assert got.admitted
    nodes = {n.name: n for n in p.nodes}
    assert {nodes[n].labels[GROUP] for n in got.pods.values()} == {"a"}
    assert len({nodes[n].labels[RACK] for n in got.pods.values()}) == 1


def test_without_queue_objects_the_job_may_use_every_node(tmp_path: Path) -> None:
    p = plan(tmp_path, TOPOLOGY, job({REQUIRED: RACK}), with_nodes=grouped())
    assert all(GROUP not in dict(pod.requirements.node_selector)
               for pod in only(p, "Job").pods.values())


def test_the_first_flavor_the_pods_node_selector_matches_is_chosen(tmp_path: Path) -> None:
    obj = job({REQUIRED: RACK})
    obj["spec"]["template"]["spec"]["nodeSelector"] = {GROUP: "b"}
    p = plan(tmp_path, *queues(flavor("fa", {GROUP: "a"}), flavor("fb", {GROUP: "b"})), obj,
             with_nodes=grouped())
    got = place(p)["ml/train"]
    nodes = {n.name: n for n in p.nodes}
    assert got.admitted and {nodes[n].labels[GROUP] for n in got.pods.values()} == {"b"}


def test_no_flavor_matching_the_node_affinity_leaves_the_job_waiting(tmp_path: Path) -> None:
    obj = job({REQUIRED: RACK})
    obj["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": GROUP, "operator": "In", "values": ["c"]}]}]}}}
    w = only(plan(tmp_path, *queues(flavor("fa", {GROUP: "a"})), obj, with_nodes=grouped()),
             "Job")
    assert w.tree is None
    assert w.waiting == "couldn't assign flavors to pod set main: flavor fa doesn't match " \
                       "node affinity"


def test_quota_too_small_for_the_job_leaves_it_waiting_until_a_cohort_lends(
        tmp_path: Path) -> None:
    small = [TOPOLOGY, flavor("tas", {GROUP: "a"}), cluster_queue(("tas", 6)), local_queue()]
    w = only(plan(tmp_path, *small, job({REQUIRED: RACK})), "Job")  # 4 pods x 2 GPUs
    assert w.waiting == (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in "
        "flavor tas, previously considered podsets requests (0) + current podset request "
        "(8) > maximum capacity (6)")
    lender = cluster_queue(("tas", 16), name="other", cohort="all")
    lent = [TOPOLOGY, flavor("tas", {GROUP: "a"}), lender, local_queue(),
            cluster_queue(("tas", 6), cohort="all", borrowing=1)]
    assert "maximum capacity (7)" in only(plan(tmp_path, *lent, job({REQUIRED: RACK})),
                                          "Job").waiting
    lent[-1] = cluster_queue(("tas", 6), cohort="all", borrowing=2)
    assert only(plan(tmp_path, *lent, job({REQUIRED: RACK})), "Job").tree is not None


def test_a_flavor_taint_skips_the_flavor_unless_tolerated_and_its_tolerations_reach_the_pods(
        tmp_path: Path) -> None:
    spot = Taint("spot", "true", "NoSchedule")
    taint = {"key": "spot", "value": "true", "effect": "NoSchedule"}
    tainted = flavor("spot", {GROUP: "a"}, nodeTaints=[taint])
    w = only(plan(tmp_path, *queues(tainted), job({REQUIRED: RACK})), "Job")
    assert w.waiting.endswith("untolerated taint spot=true:NoSchedule in flavor spot")
    tolerating = flavor("spot", {GROUP: "a"}, nodeTaints=[taint], tolerations=[
        {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}])
    p = plan(tmp_path, *queues(tolerating), job({REQUIRED: RACK}),
             with_nodes=grouped(taint=spot))
    got = place(p)["ml/train"]
    nodes = {n.name: n for n in p.nodes}
    assert got.admitted and {nodes[n].labels[GROUP] for n in got.pods.values()} == {"a"}


def test_tas_and_non_tas_flavors_are_kept_to_their_own_workloads(tmp_path: Path) -> None:
    plain = flavor("plain", {GROUP: "b"}, topology=None)
    tas = flavor("tas", {GROUP: "a"})
    objs = queues(tas, plain)
    assert only(plan(tmp_path, *objs, job({REQUIRED: RACK})), "Job").tree is not None
    untas = only(plan(tmp_path, *objs, job()), "Job")  # no topology annotation: plain
    assert all(dict(p.requirements.node_selector)[GROUP] == "b" for p in untas.pods.values())
    w = only(plan(tmp_path, *queues(plain), job({REQUIRED: RACK})), "Job")
    assert w.waiting.endswith("Flavor 'plain' does not support TopologyAwareScheduling")
    only_tas = only(plan(tmp_path, *queues(tas), job()), "Job")  # a TAS-only queue: implied
    assert only_tas.tree is not None


def test_a_flavor_whose_topology_lacks_the_level_is_skipped(tmp_path: Path) -> None:
    racks = copy.deepcopy(TOPOLOGY)
    racks["metadata"]["name"] = "racks"
    racks["spec"]["levels"] = [{"nodeLabel": RACK}, {"nodeLabel": HOST}]
    objs = [TOPOLOGY, racks, flavor("r", {GROUP: "a"}, "racks"), flavor("d", {GROUP: "b"}),
            cluster_queue(("r", 64), ("d", 64)), local_queue()]
    blocky = only(plan(tmp_path, *objs, job({REQUIRED: BLOCK})), "Job")
    assert all(dict(p.requirements.node_selector)[GROUP] == "b" for p in blocky.pods.values())
    racky = only(plan(tmp_path, *objs, job({REQUIRED: RACK})), "Job")
    assert all(dict(p.requirements.node_selector)[GROUP] == "a" for p in racky.pods.values())


@pytest.mark.parametrize(("objects", "message"), [
    ([flavor("f", {GROUP: "a"})], "LocalQueue q doesn't exist"),
    ([local_queue()], "ClusterQueue cq doesn't exist"),
    ([cluster_queue(("gone", 8)), local_queue()],
     "ClusterQueue cq is inactive: Can't admit new workloads: references missing "
     "ResourceFlavor(s): gone"),
    ([flavor("f", {GROUP: "a"}, "nowhere"), cluster_queue(("f", 8)), local_queue()],
     "ClusterQueue cq is inactive: Can't admit new workloads: there is no Topology "
     "'nowhere' for TAS flavor 'f'"),
    ([flavor("f", {GROUP: "a"}), cluster_queue(("f", 8), selector=None), local_queue()],
     "workload namespace doesn't match ClusterQueue selector"),
    ([flavor("f", {GROUP: "a"}), cluster_queue(("f", 8), selector={"matchLabels": {
        "kubernetes.io/metadata.name": "other"}}), local_queue()],
     "workload namespace doesn't match ClusterQueue selector"),
    ([flavor("f", {GROUP: "a"}), cluster_queue(("f", 64), covered=("cpu",)), local_queue()],
     "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in "
     "ClusterQueue"),
])
def test_a_broken_queue_chain_leaves_the_job_waiting_with_kueues_message(
        tmp_path: Path, objects: list[dict[str, Any]], message: str) -> None:
    w = only(plan(tmp_path, TOPOLOGY, *objects, job({REQUIRED: RACK})), "Job")
    assert (w.tree, w.invalid, w.waiting) == (None, "", message)


def test_a_pod_group_and_a_leaderworkerset_get_their_flavors(tmp_path: Path) -> None:
    pods = [grouped_pod(f"p{i}", annotations={REQUIRED: RACK}) for i in range(2)]
    lws = {"apiVersion": LWS_API_VERSION, "kind": "LeaderWorkerSet",
           "metadata": {"name": "serve", "namespace": "ml", "labels": {QUEUE_LABEL: "q"}},
           "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {
               "metadata": {"annotations": {REQUIRED: RACK}},
               "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                   "requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}]}}}}}
    p = plan(tmp_path, *queues(flavor("tas", {GROUP: "a"})), *pods, lws, with_nodes=grouped())
    for kind in ("Pod", "LeaderWorkerSet"):
        w = only(p, kind)
        tree(w)
        assert all(dict(pod.requirements.node_selector)[GROUP] == "a"
                   for pod in w.pods.values()), kind
    assert all(o.admitted for o in place(p).values())


def _with(**spec: Any) -> dict[str, Any]:
    """A valid ClusterQueue with ``spec`` fields added."""
    cq = cluster_queue(("f", 8))
    return {**cq, "spec": {**cq["spec"], **spec}}


@pytest.mark.parametrize(("obj", "field", "message"), [
    (flavor("f", None), "spec", "at least one nodeLabel is required when topology is set"),
    (cluster_queue(("f", 8), borrowing=2), "spec.resourceGroups[0].flavors[0].resources[1]"
     ".borrowingLimit", "borrowingLimit must be nil when cohort is empty"),
    ({**cluster_queue(("f", 8)), "spec": {"resourceGroups": [
        {"coveredResources": ["cpu", "memory"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}]}},
     "spec.resourceGroups[0].flavors[0].resources",
     "flavors must have the same number of resources as the coveredResources"),
    ({**cluster_queue(("f", 8)), "spec": {"resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "memory", "nominalQuota": 1}]}]}]}},
     "spec.resourceGroups[0].flavors[0].resources[0].name", "as coveredResources[0]"),
    ({**cluster_queue(("f", 8)), "spec": {"resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "-1"}]}]}]}},
     "resources[0].nominalQuota", "must not be negative"),
    ({**cluster_queue(("f", 8)), "spec": {"cohort": "old-name"}}, "spec.cohort",
     "unknown field"),
    ({"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {}},
     "spec.clusterQueue", "must be set"),
    # the CRD's enums, for fields gangsched does not model too
    (_with(queueingStrategy="Bogus"), "spec.queueingStrategy",
     "unsupported value 'Bogus'; must be one of: StrictFIFO, BestEffortFIFO"),
    (_with(preemption={"withinClusterQueue": "Always"}), "spec.preemption.withinClusterQueue",
     "must be one of: Never, LowerPriority, LowerOrNewerEqualPriority"),
    (_with(preemption={"borrowWithinCohort": {"policy": "Any"}}),
     "spec.preemption.borrowWithinCohort.policy", "must be one of: Never, LowerPriority"),
    (_with(preemption={"reclaimWithinCohort": "Any", "withinCohort": "Never"}),
     "spec.preemption.withinCohort", "unknown field"),
    (_with(flavorFungibility={"whenCanBorrow": "Borrow"}),
     "spec.flavorFungibility.whenCanBorrow", "must be one of: MayStopSearch, TryNextFlavor"),
])
def test_invalid_queue_objects_are_refused_naming_the_field(
        tmp_path: Path, obj: dict[str, Any], field: str, message: str) -> None:
    err = load_error(tmp_path, obj)
    assert field in str(err) and message in str(err)


def test_v1beta1_names_the_cohort_cohort(tmp_path: Path) -> None:
    cq = cluster_queue(("f", 8))
    cq["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    cq["spec"]["cohort"] = "all"
    w = only(plan(tmp_path, TOPOLOGY, flavor("f", {GROUP: "a"}), cq, local_queue(),
                  job({REQUIRED: RACK})), "Job")
    assert w.tree is not None


def test_a_running_group_is_not_held_by_a_missing_queue(tmp_path: Path) -> None:
    pods = [grouped_pod(f"p{i}", annotations={REQUIRED: RACK}) for i in range(2)]
    for i, pod in enumerate(pods):
        pod["spec"]["nodeName"] = f"n-z0-b0-r0-h{i}"
    w = only(plan(tmp_path, TOPOLOGY, flavor("f", {GROUP: "a"}), *pods), "Pod")
    assert (w.tree, w.waiting) == (None, "no pending pods")
    pods[1]["spec"].pop("nodeName")
    w = only(plan(tmp_path, TOPOLOGY, flavor("f", {GROUP: "a"}), *pods), "Pod")
    assert w.waiting == "LocalQueue q doesn't exist"


def test_partial_admission_admits_the_most_pods_the_quota_holds(tmp_path: Path) -> None:
    obj = job({REQUIRED: RACK}, parallelism=6, completions=6)  # 6 pods x 2 GPUs
    obj["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": "2"}
    objs = [TOPOLOGY, flavor("tas", {GROUP: "a"}), cluster_queue(("tas", 9)), local_queue()]
    p = plan(tmp_path, *objs, obj, with_nodes=grouped())
    w = only(p, "Job")
    assert (len(w.pods), tree(w).children[0].min_pods) == (4, 2)  # 4 x 2 GPUs <= 9
    assert all(pod.name.startswith(("train-0-", "train-1-", "train-2-", "train-3-"))
               for pod in w.pods.values())
    assert [wl.kind for wl in p.workloads] == ["Job"]  # the other 2 are never created
    objs[2] = cluster_queue(("tas", 3))
    assert "maximum capacity (3)" in only(plan(tmp_path, *objs, obj), "Job").waiting


def test_a_queued_pod_in_no_group_is_admitted_through_its_queue(tmp_path: Path) -> None:
    """Kueue's pod integration: a pod with the queue label and no pod group is a Workload
    of one pod. Its flavor's node labels reach it, and a LocalQueue that does not exist
    keeps it waiting, as a pod group in the same queue waits (it was placed anyway)."""
    solo = grouped_pod("solo", group="", total=None)
    p = plan(tmp_path, *queues(flavor("fb", {GROUP: "b"}, topology=None)), solo,
             with_nodes=grouped())
    w = only(p, "Pod")
    assert dict(w.pods["ml/solo"].requirements.node_selector)[GROUP] == "b"
    nodes = {n.name: n for n in p.nodes}
    got = place(p)["ml/solo"]
    assert got.admitted and nodes[got.pods["ml/solo"]].labels[GROUP] == "b"
    lost = grouped_pod("lost", group="", total=None, queue="missing")
    w = only(plan(tmp_path, *queues(flavor("fb", {GROUP: "b"}, topology=None)), lost,
                  with_nodes=grouped()), "Pod")
    assert (w.tree, w.waiting) == (None, "LocalQueue missing doesn't exist")


def test_a_queued_pod_another_gang_claims_stays_in_that_gang(tmp_path: Path) -> None:
    """A Volcano PodGroup's member carrying the queue label is that PodGroup's: Kueue's
    pod integration takes only pods no gang's controller owns."""
    members = []
    for i in range(2):
        members.append(volcano_pod(f"w{i}", labels={QUEUE_LABEL: "q"}))
    p = plan(tmp_path, volcano_podgroup(min_member=2), *members, with_nodes=grouped())
    w = only(p)
    assert w.kind == "PodGroup" and sorted(w.pods) == ["default/w0", "default/w1"]
