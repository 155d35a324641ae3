"""The official ``kubernetes`` Python client against the test API server, over loopback."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from apiserver_helpers import node, pod

from gangsched.testing.apiserver import Store, TestAPIServer

kubernetes = pytest.importorskip(
    "kubernetes", reason="the kubernetes client is not installed (pip install -e '.[test]')")
client = kubernetes.client
ApiException = kubernetes.client.exceptions.ApiException
Watch = kubernetes.watch.Watch

TIMEOUT = 5  # seconds: every watch and request in these tests is bounded


def core(api_client: Any) -> Any:
    return client.CoreV1Api(api_client)


def rv(obj: Any) -> int:
    return int(obj.metadata.resource_version)


# -- CRUD ------------------------------------------------------------------------------------


def test_pod_create_get_list_patch_delete(api_client: Any) -> None:
    v1 = core(api_client)
    created = v1.create_namespaced_pod("default", pod("p1", labels={"app": "a"}),
                                       _request_timeout=TIMEOUT)
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.status.phase == "Pending"
    assert created.spec.scheduler_name == "gangsched"

    got = v1.read_namespaced_pod("p1", "default")
    assert got.metadata.resource_version == created.metadata.resource_version

    listed = v1.list_namespaced_pod("default")
    assert [p.metadata.name for p in listed.items] == ["p1"]
    assert int(listed.metadata.resource_version) >= rv(created)
    raw = v1.list_namespaced_pod("default", _preload_content=False)
    assert raw.json()["kind"] == "PodList"

    patched = v1.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"x": "y"}}})
    assert patched.metadata.labels == {"app": "a", "x": "y"}
    assert rv(patched) > rv(created)

    deleted = v1.delete_namespaced_pod("p1", "default", grace_period_seconds=30)
    assert deleted.metadata.name == "p1"
    assert v1.list_namespaced_pod("default").items == []


def test_errors_are_status_objects_with_reason_and_code(api_client: Any) -> None:
    v1 = core(api_client)
    with pytest.raises(ApiException) as missing:
        v1.read_namespaced_pod("nope", "default")
    assert missing.value.status == 404
    assert '"reason":"NotFound"' in missing.value.body

    v1.create_namespaced_pod("default", pod("p1"))
    with pytest.raises(ApiException) as twice:
        v1.create_namespaced_pod("default", pod("p1"))
    assert twice.value.status == 409 and '"reason":"AlreadyExists"' in twice.value.body

    with pytest.raises(ApiException) as no_namespace:
        v1.create_namespaced_pod("missing", pod("p1", namespace="missing"))
    assert no_namespace.value.status == 404


def test_pod_spec_is_immutable_except_through_binding(api_client: Any) -> None:
    v1 = core(api_client)
    v1.create_namespaced_pod("default", pod("p1"))
    with pytest.raises(ApiException) as refused:
        v1.patch_namespaced_pod("p1", "default", {"spec": {"nodeName": "n1"}})
    assert refused.value.status == 422 and '"reason":"Invalid"' in refused.value.body


# -- watch -----------------------------------------------------------------------------------


def test_watch_sees_added_modified_deleted_in_order_and_resumes(api_client: Any) -> None:
    v1 = core(api_client)
    start = v1.list_namespaced_pod("default").metadata.resource_version
    v1.create_namespaced_pod("default", pod("p1"))
    v1.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"step": "2"}}})
    v1.delete_namespaced_pod("p1", "default")

    events = []
    w = Watch()
    for event in w.stream(v1.list_namespaced_pod, "default", resource_version=start,
                          timeout_seconds=TIMEOUT):
        events.append((event["type"], rv(event["object"])))
        if len(events) == 3:
            w.stop()
    assert [t for t, _ in events] == ["ADDED", "MODIFIED", "DELETED"]
    versions = [v for _, v in events]
    assert versions == sorted(versions) and len(set(versions)) == 3

    # Resume after the first event: only the later two come again.
    resumed = []
    w = Watch()
    for event in w.stream(v1.list_namespaced_pod, "default",
                          resource_version=str(versions[0]), timeout_seconds=TIMEOUT):
        resumed.append(event["type"])
        if len(resumed) == 2:
            w.stop()
    assert resumed == ["MODIFIED", "DELETED"]


def test_watch_without_resource_version_starts_with_current_objects(
        api_client: Any, server: TestAPIServer) -> None:
    server.store.create(pod("existing"))
    v1 = core(api_client)
    seen: list[tuple[str, str]] = []

    def later() -> None:
        time.sleep(0.2)
        server.store.create(pod("new"))

    threading.Thread(target=later, daemon=True).start()
    w = Watch()
    for event in w.stream(v1.list_namespaced_pod, "default", timeout_seconds=TIMEOUT):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            w.stop()
    assert seen == [("ADDED", "existing"), ("ADDED", "new")]


def test_watch_from_an_expired_resource_version_is_410_gone(tmp_path: Any) -> None:
    with TestAPIServer(port=0, history=5) as srv:
        api = kubernetes.config.new_client_from_config(str(srv.kubeconfig(tmp_path / "kc")))
        v1 = core(api)
        for i in range(10):
            srv.store.create(pod(f"p{i}"))
        with pytest.raises(ApiException) as gone:
            # timeout_seconds: the client does not retry on 410 itself
            for _ in Watch().stream(v1.list_namespaced_pod, "default", resource_version="1",
                                    timeout_seconds=TIMEOUT):
                pass
        assert gone.value.status == 410
        assert "too old resource version" in gone.value.reason
        api.close()


def test_watch_bookmarks(api_client: Any, server: TestAPIServer) -> None:
    v1 = core(api_client)
    start = v1.list_namespaced_pod("default").metadata.resource_version
    server.store.create(pod("p1"))
    types = []
    w = Watch()
    for event in w.stream(v1.list_namespaced_pod, "default", resource_version=start,
                          allow_watch_bookmarks=True, timeout_seconds=TIMEOUT):
        types.append(event["type"])
        if event["type"] == "BOOKMARK":
            assert int(event["raw_object"]["metadata"]["resourceVersion"]) == \
                server.store.resource_version
            w.stop()
    assert types == ["ADDED", "BOOKMARK"]


def test_watch_with_selector_sees_objects_leave_and_enter(
        api_client: Any, server: TestAPIServer) -> None:
    v1 = core(api_client)
    server.store.create(pod("p1", labels={"gang": "a"}))
    start = v1.list_namespaced_pod("default").metadata.resource_version
    server.store.patch("pods", "p1", {"metadata": {"labels": {"gang": "b"}}})
    server.store.patch("pods", "p1", {"metadata": {"labels": {"gang": "a"}}})
    seen = []
    w = Watch()
    for event in w.stream(v1.list_namespaced_pod, "default", label_selector="gang=a",
                          resource_version=start, timeout_seconds=TIMEOUT):
        seen.append(event["type"])
        if len(seen) == 2:
            w.stop()
    assert seen == ["DELETED", "ADDED"]


# -- binding ---------------------------------------------------------------------------------


def binding(name: str, node_name: str) -> Any:
    return client.V1Binding(metadata=client.V1ObjectMeta(name=name),
                            target=client.V1ObjectReference(kind="Node", name=node_name))


def test_binding_once_then_409(api_client: Any, server: TestAPIServer) -> None:
    """How callers must bind with the Python client.

    The API server answers a successful binding with ``201`` and a ``Status`` body
    (``{"kind": "Status", "status": "Success", "code": 201}``), but the client deserializes
    the reply as a ``V1Binding``, whose ``target`` is required: the plain call raises
    ``ValueError`` *after the pod was bound* (``pydantic.ValidationError``, a ValueError,
    from client 35+; ``ValueError("Invalid value for `target`, must not be `None`")`` up to
    34). So call it with ``_preload_content=False``: a success returns the raw
    ``urllib3.HTTPResponse`` (``.status == 201``, the Status in ``.data``); a failure still
    raises ``ApiException`` (``ConflictException`` from 35+), 409 when already bound.
    Read the body (``.data``) before ``release_conn()``, or the pooled connection is
    left with an unread reply. Never treat the plain call's ValueError as a failed
    binding. (Checked with clients 31 and 37.)
    """
    v1 = core(api_client)
    v1.create_namespaced_pod("default", pod("p1"))
    v1.create_namespaced_pod("default", pod("p2"))

    response = v1.create_namespaced_pod_binding("p1", "default", binding("p1", "n1"),
                                                _preload_content=False)
    assert response.status == 201
    assert response.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Success", "code": 201}
    response.release_conn()
    bound = v1.read_namespaced_pod("p1", "default")
    assert bound.spec.node_name == "n1"
    assert any(c.type == "PodScheduled" and c.status == "True"
               for c in bound.status.conditions)

    with pytest.raises(ApiException) as again:
        v1.create_namespaced_pod_binding("p1", "default", binding("p1", "n2"),
                                         _preload_content=False)
    assert again.value.status == 409 and '"reason":"Conflict"' in again.value.body
    assert server.store.get("pods", "p1")["spec"]["nodeName"] == "n1"

    # The plain call binds, then fails to read the Status as a V1Binding.
    with pytest.raises(ValueError):
        v1.create_namespaced_pod_binding("p2", "default", binding("p2", "n2"))
    assert server.store.get("pods", "p2")["spec"]["nodeName"] == "n2"


def test_binding_with_a_stale_uid_is_refused(api_client: Any, server: TestAPIServer) -> None:
    v1 = core(api_client)
    v1.create_namespaced_pod("default", pod("p1"))
    body = binding("p1", "n1")
    body.metadata.uid = "not-the-pod-uid"
    with pytest.raises(ApiException) as refused:
        v1.create_namespaced_pod_binding("p1", "default", body, _preload_content=False)
    assert refused.value.status == 409
    assert "nodeName" not in server.store.get("pods", "p1")["spec"]


# -- leases (leader election) ----------------------------------------------------------------


def test_lease_optimistic_concurrency(api_client: Any) -> None:
    coord = client.CoordinationV1Api(api_client)
    lease = client.V1Lease(
        metadata=client.V1ObjectMeta(name="gangsched", namespace="kube-system"),
        spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15))
    created = coord.create_namespaced_lease("kube-system", lease)
    stale_version = created.metadata.resource_version

    created.spec.holder_identity = "b"
    updated = coord.replace_namespaced_lease("gangsched", "kube-system", created)
    assert updated.spec.holder_identity == "b"
    assert rv(updated) > int(stale_version)

    created.metadata.resource_version = stale_version
    created.spec.holder_identity = "c"
    with pytest.raises(ApiException) as conflict:
        coord.replace_namespaced_lease("gangsched", "kube-system", created)
    assert conflict.value.status == 409 and '"reason":"Conflict"' in conflict.value.body
    assert coord.read_namespaced_lease("gangsched", "kube-system").spec.holder_identity == "b"


# -- selectors -------------------------------------------------------------------------------


def test_label_and_field_selectors(api_client: Any, server: TestAPIServer) -> None:
    store = server.store
    store.create(pod("a", labels={"gang": "g1", "role": "leader"}))
    store.create(pod("b", labels={"gang": "g1", "role": "worker"}, node="n1"))
    store.create(pod("c", labels={"gang": "g2"}, scheduler="default-scheduler"))
    store.create(pod("d", namespace="other", labels={"gang": "g1"}))
    v1 = core(api_client)

    def names(**kwargs: Any) -> list[str]:
        return [p.metadata.name for p in v1.list_pod_for_all_namespaces(**kwargs).items]

    assert names(label_selector="gang=g1") == ["a", "b", "d"]
    assert names(label_selector="gang==g1,role!=leader") == ["b", "d"]
    assert names(label_selector="gang in (g2, g3)") == ["c"]
    assert names(label_selector="gang notin (g1)") == ["c"]
    assert names(label_selector="role") == ["a", "b"]
    assert names(label_selector="!role") == ["c", "d"]
    assert names(field_selector="spec.nodeName=") == ["a", "c", "d"]
    assert names(field_selector="spec.nodeName!=") == ["b"]
    assert names(field_selector="spec.schedulerName=gangsched,spec.nodeName=") == ["a", "d"]
    assert names(field_selector="metadata.namespace=other") == ["d"]
    assert names(field_selector="metadata.name=c,status.phase=Pending") == []
    assert [p.metadata.name for p in v1.list_namespaced_pod(
        "default", field_selector="metadata.name=c").items] == ["c"]
    with pytest.raises(ApiException) as bad:
        v1.list_pod_for_all_namespaces(field_selector="spec.bogus=1")
    assert bad.value.status == 400


# -- custom resources ------------------------------------------------------------------------


VOLCANO = ("scheduling.volcano.sh", "v1beta1")


def test_volcano_podgroups_with_custom_objects_api(api_client: Any) -> None:
    custom = client.CustomObjectsApi(api_client)
    body = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg1"}, "spec": {"minMember": 4, "queue": "default"},
            "status": {"phase": "Running"}}
    created = custom.create_namespaced_custom_object(*VOLCANO, "default", "podgroups", body)
    assert "status" not in created  # a custom resource's status is not set on create
    assert created["metadata"]["generation"] == 1

    listed = custom.list_namespaced_custom_object(*VOLCANO, "default", "podgroups")
    assert listed["kind"] == "PodGroupList"
    assert [o["metadata"]["name"] for o in listed["items"]] == ["pg1"]

    status = {"status": {"phase": "Pending", "conditions": [
        {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"}]}}
    patched = custom.patch_namespaced_custom_object_status(*VOLCANO, "default", "podgroups",
                                                           "pg1", status)
    assert patched["status"]["phase"] == "Pending"
    assert patched["metadata"]["generation"] == 1  # status changes keep the generation

    spec = custom.patch_namespaced_custom_object(*VOLCANO, "default", "podgroups", "pg1",
                                                 {"spec": {"minMember": 5},
                                                  "status": {"phase": "Ignored"}})
    assert spec["spec"]["minMember"] == 5
    assert spec["metadata"]["generation"] == 2
    assert spec["status"]["phase"] == "Pending"  # the main resource cannot change status


def test_cluster_scoped_hypernodes(api_client: Any) -> None:
    custom = client.CustomObjectsApi(api_client)
    body = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": {"name": "leaf-0"}, "spec": {"tier": 1, "members": []}}
    custom.create_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes", body)
    listed = custom.list_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes")
    assert [o["metadata"]["name"] for o in listed["items"]] == ["leaf-0"]
    assert "namespace" not in listed["items"][0]["metadata"]


# -- fault injection -------------------------------------------------------------------------


def test_injected_errors_fail_some_calls_with_500(api_client: Any,
                                                  server: TestAPIServer) -> None:
    server.faults.configure(error_rate=0.5, error_scope="all", error_codes=[500], seed=7)
    v1 = core(api_client)
    codes = []
    for i in range(40):
        try:
            v1.create_namespaced_pod("default", pod(f"p{i}"))
            codes.append(201)
        except ApiException as e:
            codes.append(e.status)
    assert set(codes) == {201, 500}
    assert 5 < codes.count(500) < 35
    assert server.faults.stats["injected_500"] == codes.count(500)
    # The injected failures happened before the write: nothing half-done.
    assert server.store.count("pods") == codes.count(201)


def test_injected_errors_after_apply_look_failed_but_happened(api_client: Any,
                                                              server: TestAPIServer) -> None:
    server.faults.configure(error_rate=1.0, error_after_apply=1.0,
                            error_resources=["pods/binding"])
    v1 = core(api_client)
    v1.create_namespaced_pod("default", pod("p1"))  # pods: not affected
    with pytest.raises(ApiException) as failed:
        v1.create_namespaced_pod_binding("p1", "default", binding("p1", "n1"),
                                         _preload_content=False)
    assert failed.value.status == 500
    assert server.store.get("pods", "p1")["spec"]["nodeName"] == "n1"


def test_dropped_watches(api_client: Any, server: TestAPIServer) -> None:
    for i in range(5):
        server.store.create(pod(f"p{i}"))
    v1 = core(api_client)

    server.faults.configure(watch_drop_after=2, watch_drop_mode="clean")
    seen = [e["type"] for e in Watch().stream(v1.list_namespaced_pod, "default",
                                              timeout_seconds=TIMEOUT)]
    assert seen == ["ADDED", "ADDED"]  # the stream ended early; the client sees its end

    server.faults.configure(watch_drop_mode="abort")
    got = []
    with pytest.raises(Exception) as cut:  # urllib3's ProtocolError family
        for event in Watch().stream(v1.list_namespaced_pod, "default",
                                    timeout_seconds=TIMEOUT):
            got.append(event)
    assert len(got) == 2
    assert "ProtocolError" in type(cut.value).__name__ or "Incomplete" in repr(cut.value)
    assert server.faults.stats["dropped_watches"] == 2


def test_restarted_server_keeps_the_store(tmp_path: Any) -> None:
    store = Store()
    with TestAPIServer(port=0, store=store) as first:
        store.create(node("n1"))
        port = first.port
    with TestAPIServer(port=port, store=store) as second:
        api = kubernetes.config.new_client_from_config(str(second.kubeconfig(tmp_path / "k")))
        assert [n.metadata.name for n in core(api).list_node().items] == ["n1"]
        api.close()
