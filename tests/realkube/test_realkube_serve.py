"""``gangsched serve`` on a real kube-apiserver (v1.37, built from the published modules),
under the least-privilege identity of deploy/rbac.yaml: a Kthena-shaped Volcano PodGroup,
a Workload API CompositePodGroup tree and a single pod are bound, each all-or-nothing; a
gang that does not fit binds nothing and says why."""

from __future__ import annotations

import time
from typing import Any

from realkube_helpers import (
    BLOCK,
    RACK,
    ROOT,
    VOLCANO_PODGROUPS,
    Kind,
    Obj,
    RealKube,
    gang_states,
    load_yaml,
    node,
    pod,
    rack_nodes,
    serve_config,
    start_replica,
    volcano_gang,
    wait_for,
)

from gangsched.k8s.api import EVENTS

PRIORITY_CLASSES = Kind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass",
                        namespaced=False)


def _events(kube: RealKube, namespace: str, reason: str) -> list[Obj]:
    items: list[Obj] = kube.api().list(EVENTS).get("items") or []
    return [e for e in items if e.get("reason") == reason
            and e["metadata"].get("namespace") == namespace]


def test_serve_identity_is_least_privilege(cluster: RealKube) -> None:
    """The ``gangsched`` context really is the ServiceAccount of deploy/rbac.yaml: it may
    bind pods but not create them, nor read secrets."""
    from kubernetes import client

    authz = client.AuthorizationV1Api(cluster.api("gangsched").api_client)
    review = authz.create_self_subject_rules_review(
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
         "spec": {"namespace": "default"}})
    rules = {(tuple(r.api_groups or ()), tuple(r.resources or ()), tuple(r.verbs))
             for r in review.status.resource_rules}
    assert (("",), ("pods/binding",), ("create",)) in rules
    ssr = client.AuthenticationV1Api(cluster.api("gangsched").api_client)
    who = ssr.create_self_subject_review({"apiVersion": "authentication.k8s.io/v1",
                                          "kind": "SelfSubjectReview"})
    assert who.status.user_info.username == "system:serviceaccount:kube-system:gangsched"
    assert "system:serviceaccounts:kube-system" in who.status.user_info.groups
    api = cluster.api("gangsched")
    from gangsched.k8s.api import PODS, KubeError

    try:
        api.create(PODS, "default", pod("not-allowed"))
        raise AssertionError("the gangsched identity could create a pod")
    except KubeError as err:
        assert err.status == 403


def test_kthena_podgroup_is_bound_whole(cluster: RealKube) -> None:
    cluster.create_all([node(f"n{i}", "1") for i in range(2)])
    objects = load_yaml(ROOT / "deploy" / "example-kthena-2p2d.yaml")
    cluster.create_all(objects)
    replica = start_replica(serve_config(cluster.kubeconfig))
    try:
        wait_for(lambda: gang_states(cluster.pods()).get("default/sample-0") == (8, 8), 30,
                 what="the 8 pods of sample-0 bound")

        def phase() -> Any:
            pg = cluster.api().get(VOLCANO_PODGROUPS, "default", "sample-0")
            return (pg.get("status") or {}).get("phase")

        # Volcano's CRD has no status subresource: status is patched on the object
        wait_for(lambda: phase() == "Running", 10, what="PodGroup status Running")
        pg = cluster.api().get(VOLCANO_PODGROUPS, "default", "sample-0")
        assert pg["status"]["running"] == 8
        wait_for(lambda: len(_events(cluster, "default", "Scheduled")) >= 8, 10,
                 what="Scheduled events")
    finally:
        replica.stop()
    assert replica.exit_code == [0]
    assert replica.server.metrics.bind_errors.value(reason="api_error") == 0


def _composite_objects(namespace: str) -> list[Obj]:
    """examples/workload-composite.yaml in ``namespace``; pods get their priority from
    the PriorityClass (the Priority admission plugin refuses a bare spec.priority)."""
    out = []
    for obj in load_yaml(ROOT / "examples" / "workload-composite.yaml"):
        if obj["kind"] == "PriorityClass":  # cluster-scoped: _priority_class creates it
            continue
        obj["metadata"]["namespace"] = namespace
        if obj["kind"] == "Pod":
            obj["spec"].pop("priority", None)
            obj["spec"]["priorityClassName"] = "inference"
        out.append(obj)
    return out


def _gpu_nodes(racks: int, per_rack: int, blocks: int) -> list[Obj]:
    nodes = []
    for r in range(racks):
        for h in range(per_rack):
            n = node(f"g-{r}-{h}", "64", "512Gi",
                     labels={RACK: f"rack-{r}", BLOCK: f"block-{r % blocks}"})
            for key in ("capacity", "allocatable"):
                n["status"][key]["nvidia.com/gpu"] = "8"
            nodes.append(n)
    return nodes


def _priority_class(cluster: RealKube) -> None:
    from gangsched.k8s.api import KubeError

    try:
        cluster.api().create(PRIORITY_CLASSES, None, {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "inference"}, "value": 5000})
    except KubeError as err:
        if err.status != 409:
            raise


def test_workload_composite_tree_is_bound_whole(cluster: RealKube) -> None:
    ns = "inference"
    cluster.ensure_namespace(ns)
    _priority_class(cluster)
    # block-0 holds racks 0 and 2, block-1 rack 1; each rack has two 8-GPU nodes
    nodes = _gpu_nodes(racks=3, per_rack=2, blocks=2)
    cluster.create_all(nodes)
    cluster.create_all(_composite_objects(ns))
    replica = start_replica(serve_config(cluster.kubeconfig))
    try:
        def states() -> dict[str, tuple[int, int]]:
            return gang_states(cluster.pods(ns))

        wait_for(lambda: sum(b for b, _ in states().values()) == 5, 30,
                 what="the 5 pods of the composite bound")
        assert states() == {f"{ns}/llm-serving-0-prefill": (2, 2),
                            f"{ns}/llm-serving-0-decode": (2, 2),
                            f"{ns}/llm-serving-0-frontend": (1, 1)}
    finally:
        replica.stop()
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    placed = {p["metadata"]["name"]: labels[p["spec"]["nodeName"]] for p in cluster.pods(ns)}
    # prefill in one rack, decode in one rack, the whole tree in one block
    assert len({placed[f"llm-serving-0-prefill-{i}"][RACK] for i in range(2)}) == 1
    assert len({placed[f"llm-serving-0-decode-{i}"][RACK] for i in range(2)}) == 1
    assert len({v[BLOCK] for v in placed.values()}) == 1


def test_workload_composite_tree_that_does_not_fit_binds_nothing(cluster: RealKube) -> None:
    ns = "inference"
    cluster.ensure_namespace(ns)
    _priority_class(cluster)
    # one rack of two 8-GPU nodes: prefill would fit, but not decode beside it
    cluster.create_all(_gpu_nodes(racks=1, per_rack=2, blocks=1))
    cluster.create_all(_composite_objects(ns))
    replica = start_replica(serve_config(cluster.kubeconfig))
    try:
        wait_for(lambda: len(_events(cluster, ns, "FailedScheduling")) >= 5, 30,
                 what="FailedScheduling on every pod of the tree")
        time.sleep(1.0)
        assert all(b == 0 for b, _ in gang_states(cluster.pods(ns)).values())
        assert replica.server.metrics.binds.value() == 0
    finally:
        replica.stop()


def test_single_pod_is_bound(cluster: RealKube) -> None:
    cluster.create_all([node("solo-node", "2")])
    cluster.create(pod("solo", "1"))
    cluster.create(pod("not-ours", "1", scheduler="default-scheduler"))
    replica = start_replica(serve_config(cluster.kubeconfig))
    try:
        wait_for(lambda: any(p["metadata"]["name"] == "solo" and p["spec"].get("nodeName")
                             for p in cluster.pods()), 30, what="the single pod bound")
        time.sleep(0.5)
    finally:
        replica.stop()
    by_name = {p["metadata"]["name"]: p for p in cluster.pods()}
    assert by_name["solo"]["spec"]["nodeName"] == "solo-node"
    assert not by_name["not-ours"]["spec"].get("nodeName")  # another scheduler's pod


def test_oversized_gang_binds_nothing(cluster: RealKube) -> None:
    cluster.create_all(rack_nodes(racks=2, per_rack=2, cpu="2"))  # 4 CPU per rack
    cluster.create_all(volcano_gang("too-big", 6, "1"))  # 6 CPU inside one rack
    cluster.create_all(volcano_gang("fits", 4, "1"))
    replica = start_replica(serve_config(cluster.kubeconfig))
    try:
        wait_for(lambda: gang_states(cluster.pods()).get("default/fits") == (4, 4), 30,
                 what="the gang that fits bound")

        def unschedulable() -> bool:
            pg = cluster.api().get(VOLCANO_PODGROUPS, "default", "too-big")
            conds = (pg.get("status") or {}).get("conditions") or []
            return any(c.get("type") == "Unschedulable" for c in conds)

        wait_for(unschedulable, 15, what="an Unschedulable condition on too-big")
        failed = [e for e in _events(cluster, "default", "FailedScheduling")
                  if e["involvedObject"]["name"].startswith("too-big-")]
        assert failed and "rack" in failed[0]["message"], failed[:1]
        time.sleep(1.0)
    finally:
        replica.stop()
    assert gang_states(cluster.pods())["default/too-big"] == (0, 6)


def test_serve_watches_each_workload_kind_where_the_server_serves_it() -> None:
    """No server needed: discovery as kube-apiserver 1.37.2 answers it (checked by the
    tests above), CompositePodGroup only in v1alpha3."""
    from gangsched.k8s.serve import watched_kinds

    kinds = {"workloads": "Workload", "podgroups": "PodGroup",
             "compositepodgroups": "CompositePodGroup", "priorityclasses": "PriorityClass"}
    served_by = {("scheduling.k8s.io", "v1beta1"): ["workloads", "podgroups"],
                 ("scheduling.k8s.io", "v1alpha3"): ["workloads", "podgroups",
                                                     "compositepodgroups"],
                 ("scheduling.k8s.io", "v1"): ["priorityclasses"]}

    class Discovery:
        def resources(self, group: str, version: str) -> list[dict[str, object]] | None:
            served = served_by.get((group, version))
            return None if served is None else [
                {"name": p, "kind": kinds[p], "namespaced": p != "priorityclasses"}
                for p in served]

    ids = {k.id for k in watched_kinds(Discovery())}  # type: ignore[arg-type]
    assert {"workloads.scheduling.k8s.io/v1beta1", "podgroups.scheduling.k8s.io/v1beta1",
            "compositepodgroups.scheduling.k8s.io/v1alpha3",
            "priorityclasses.scheduling.k8s.io/v1", "pods", "nodes"} == ids
