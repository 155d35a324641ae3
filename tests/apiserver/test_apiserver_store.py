"""The store, selectors, patches and fault settings, without HTTP."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from apiserver_helpers import node, pod

from gangsched.testing.apiserver import ApiError, FakeKubelet, FaultConfig, Faults, Store
from gangsched.testing.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from gangsched.testing.apiserver.resources import RESOURCES, ResourceTable
from gangsched.testing.apiserver.selectors import FieldSelector, LabelSelector


def labels(**kv: str) -> dict[str, object]:
    return {"metadata": {"labels": kv}}


@pytest.mark.parametrize(("selector", "matching"), [
    ("", ["ab", "a", "none"]),
    ("a=1", ["ab", "a"]),
    ("a==1,b=2", ["ab"]),
    ("a!=1", ["none"]),
    ("a in (1,3)", ["ab", "a"]),
    ("b notin (2)", ["a", "none"]),
    ("b", ["ab"]),
    ("!b", ["a", "none"]),
    ("n>4", ["ab"]),
    ("n<4", ["a"]),
    ("a = 1 , b in ( 2 )", ["ab"]),
])
def test_label_selectors(selector: str, matching: list[str]) -> None:
    objects = {"ab": labels(a="1", b="2", n="5"), "a": labels(a="1", n="3"), "none": {}}
    parsed = LabelSelector.parse(selector)
    assert [k for k, o in objects.items() if parsed.matches(o)] == matching


@pytest.mark.parametrize("bad", ["a in 1", "=x", "a=(1)", "a in (x y)"])
def test_bad_label_selectors_are_400(bad: str) -> None:
    with pytest.raises(ApiError) as err:
        LabelSelector.parse(bad)
    assert err.value.code == 400


def test_field_selectors() -> None:
    bound = {"spec": {"nodeName": "n1", "hostNetwork": True}, "status": {"phase": "Running"}}
    assert FieldSelector.parse("spec.nodeName=n1,status.phase!=Failed").matches(bound)
    assert FieldSelector.parse("spec.nodeName=").matches({"spec": {}})
    assert FieldSelector.parse("spec.hostNetwork=true").matches(bound)
    assert not FieldSelector.parse("spec.nodeName==").matches(bound)
    assert FieldSelector.parse(r"metadata.name=a\,b").matches({"metadata": {"name": "a,b"}})
    with pytest.raises(ApiError):
        FieldSelector.parse("spec.other=1", allowed=["spec.nodeName"])


def test_merge_and_strategic_and_json_patch() -> None:
    target: dict[str, Any] = {
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}],
                 "tolerations": [{"key": "k"}]},
        "metadata": {"finalizers": ["f1"]}}
    assert merge_patch(target, {"spec": {"tolerations": None}}) == {
        "spec": {"containers": target["spec"]["containers"]},
        "metadata": {"finalizers": ["f1"]}}
    patched = strategic_merge_patch(target, {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "spec": {"containers": [{"name": "a", "image": "y"}, {"name": "c"},
                                {"name": "b", "$patch": "delete"}],
                 "tolerations": [{"key": "other"}]},
        "metadata": {"finalizers": ["f2"]}})
    assert patched["spec"]["containers"] == [{"name": "a", "image": "y"}, {"name": "c"}]
    assert patched["spec"]["tolerations"] == [{"key": "other"}]  # no merge key: replaced
    assert patched["metadata"]["finalizers"] == ["f1", "f2"]
    assert "$setElementOrder/containers" not in patched
    assert target["spec"]["containers"][0]["image"] == "x"  # the input is not changed
    assert json_patch({"a": [1, 2]}, [{"op": "add", "path": "/a/-", "value": 3},
                                      {"op": "move", "from": "/a/0", "path": "/b"},
                                      {"op": "replace", "path": "/a/0", "value": 9}]) == \
        {"a": [9, 3], "b": 1}


def test_resource_table_lookup() -> None:
    table = ResourceTable()
    assert table.resolve("pods").kind == "Pod"
    assert table.resolve("po").kind == "Pod"
    assert table.resolve("podgroups.scheduling.volcano.sh").group == "scheduling.volcano.sh"
    assert table.resolve("pg").group == "scheduling.volcano.sh"
    assert table.resolve("podgroups.v1alpha3.scheduling.k8s.io").version == "v1alpha3"
    assert table.resolve("scheduling.k8s.io/v1alpha3/workloads").kind == "Workload"
    with pytest.raises(KeyError, match="ambiguous"):
        table.resolve("podgroups")
    with pytest.raises(ValueError, match="twice"):
        ResourceTable([*RESOURCES, RESOURCES[0]])


def test_store_metadata_and_versions() -> None:
    store = Store(seed=1)
    start = store.resource_version  # the initial namespaces
    a = store.create(pod("a"))
    b = store.create(node("n1"))
    assert int(a["metadata"]["resourceVersion"]) == start + 1
    assert int(b["metadata"]["resourceVersion"]) == start + 2
    assert a["metadata"]["uid"] != b["metadata"]["uid"]
    assert "namespace" not in b["metadata"]
    assert Store(seed=1).create(pod("a"))["metadata"]["uid"] == a["metadata"]["uid"]
    # generation: bumped by spec changes, not by metadata or status ones.
    pg = store.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": "g", "namespace": "ml"}, "spec": {"minMember": 1}})
    assert store.find("namespaces", "ml") is not None  # created on demand
    assert pg["metadata"]["generation"] == 1
    pg = store.patch("pg", "g", {"metadata": {"labels": {"x": "y"}}}, "ml")
    assert pg["metadata"]["generation"] == 1
    pg = store.patch("pg", "g", {"spec": {"minMember": 2}}, "ml")
    assert pg["metadata"]["generation"] == 2
    # copies: changing what the store handed out changes nothing inside.
    pg["spec"]["minMember"] = 99
    assert store.get("pg", "g", "ml")["spec"]["minMember"] == 2


def test_store_errors() -> None:
    store = Store()
    store.create(pod("a"))
    with pytest.raises(ApiError) as exists:
        store.create(pod("a"))
    assert exists.value.code == 409 and exists.value.reason == "AlreadyExists"
    with pytest.raises(ApiError) as missing:
        store.get("pods", "zzz")
    assert missing.value.code == 404
    stale = store.get("pods", "a")
    store.patch("pods", "a", {"metadata": {"labels": {"v": "2"}}})
    with pytest.raises(ApiError) as conflict:
        store.update(stale)
    assert conflict.value.code == 409 and conflict.value.reason == "Conflict"
    with pytest.raises(ApiError) as unknown:
        store.create({"apiVersion": "v9", "kind": "Nothing", "metadata": {"name": "x"}})
    assert unknown.value.code == 400


def test_deleting_a_namespace_deletes_its_objects() -> None:
    store = Store()
    store.create(pod("a", namespace="ml"))
    store.create(pod("b"))
    store.delete("namespaces", "ml")
    assert [p["metadata"]["name"] for p in store.list("pods")] == ["b"]


def test_bind_and_history_and_watch() -> None:
    store = Store(history=3)
    store.create(pod("a"))
    w = store.watch("pods", resource_version=str(store.resource_version))
    store.bind("a", "n1")
    with pytest.raises(ApiError) as again:
        store.bind("a", "n2")
    assert again.value.code == 409
    event = w.next(1.0)
    assert event is not None and event[0] == "MODIFIED"
    assert event[1].obj["spec"]["nodeName"] == "n1"
    w.close()
    for i in range(5):
        store.create(pod(f"p{i}"))
    with pytest.raises(ApiError) as gone:
        store.watch("pods", resource_version="1")
    assert gone.value.code == 410
    assert [e.type for e in store.history()] == ["ADDED"] * 3


def test_wait_until() -> None:
    store = Store()
    store.create(pod("a"))
    threading.Timer(0.05, lambda: store.bind("a", "n1")).start()
    assert store.wait_until(lambda s: s.get("pods", "a")["spec"].get("nodeName") == "n1",
                            timeout=5)
    assert not store.wait_until(lambda s: False, timeout=0.05)


def test_fault_config() -> None:
    faults = Faults(FaultConfig(error_rate=0.5, error_scope="all", seed=3))
    first = [faults.decide("get", "pods").code for _ in range(20)]
    faults.configure(seed=4)
    faults.configure(seed=3)  # reseeding repeats the sequence
    assert [faults.decide("get", "pods").code for _ in range(20)] == first
    with faults.suspended():
        assert faults.decide("get", "pods").code is None
    assert faults.configure(error_scope="mutating").error_rate == 0.5
    assert faults.decide("list", "pods").code is None
    with pytest.raises(ValueError, match="error_rate"):
        faults.configure(error_rate=1.5)
    with pytest.raises(ValueError, match="error_codes"):
        faults.configure(error_codes=[418])
    assert faults.reset().error_rate == 0.0


def test_pod_priority_from_its_priority_class() -> None:
    store = Store()
    store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                  "metadata": {"name": "training"}, "value": 1000})
    with_class = pod("a")
    with_class["spec"]["priorityClassName"] = "training"
    assert store.create(with_class, api=True)["spec"]["priority"] == 1000
    assert store.create(pod("b"), api=True)["spec"]["priority"] == 0


def test_fake_kubelet_runs_bound_pods() -> None:
    store = Store()
    store.create(node("n1"))
    store.create(pod("a"), api=True)
    kubelet = FakeKubelet(store).start()
    try:
        store.bind("a", "n1")
        assert store.wait_until(
            lambda s: s.get("pods", "a")["status"]["phase"] == "Running", timeout=5)
        status = store.get("pods", "a")["status"]
        assert status["podIP"] and status["containerStatuses"][0]["ready"] is True
        assert {c["type"] for c in status["conditions"]} >= {"PodScheduled", "Ready"}
    finally:
        kubelet.stop()
