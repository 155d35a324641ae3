"""Objects checked as the API server decodes them: the generated Kubernetes 1.37 schema,
unknown fields per mode, types, integer ranges, quantities, times, and metadata rules."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from gangsched.api import schema
from gangsched.api.errors import InputError
from gangsched.frontends import load_object


def node(**fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    obj.update(fields)
    return obj


def pod(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **meta},
            "spec": {"containers": [{"name": "c"}], **spec}}


def problem(obj: dict[str, Any], type_name: str = "core.v1.Pod",
            mode: schema.Mode = "strict") -> InputError:
    with pytest.raises(InputError) as info:
        schema.check(obj, type_name, mode)
    return info.value


def test_generated_schema_is_kubernetes_1_37() -> None:
    text = resources.files("gangsched.api").joinpath("data", schema.SCHEMA_FILE).read_text()
    data = json.loads(text)
    assert data["source"] == "k8s.io/kubernetes@v1.37.2 api/openapi-spec/swagger.json"
    assert data["kinds"]["v1/Pod"] == "core.v1.Pod"
    assert data["kinds"]["scheduling.k8s.io/v1alpha3/CompositePodGroup"] == (
        "scheduling.v1alpha3.CompositePodGroup")
    spec = data["types"]["core.v1.PodSpec"]
    assert spec["priority"] == "int32" and spec["overhead"] == {"map": "quantity"}
    assert spec["containers"] == {"list": "core.v1.Container"}
    assert data["types"]["core.v1.ContainerPort"]["containerPort"] == "int32"
    assert data["types"]["meta.v1.ObjectMeta"]["creationTimestamp"] == "date-time"
    assert data["types"]["core.v1.NodeStatus"]["capacity"] == {"map": "quantity"}


def test_a_real_node_dump_is_valid() -> None:
    obj = node(
        metadata={"name": "n1", "uid": "u", "resourceVersion": "12", "generation": 3,
                  "creationTimestamp": "2026-01-02T03:04:05Z",
                  "labels": {"kubernetes.io/hostname": "n1"},
                  "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
                  "managedFields": [{"manager": "kubelet", "operation": "Update",
                                     "fieldsType": "FieldsV1",
                                     "fieldsV1": {"f:status": {"f:capacity": {}}}}]},
        spec={"podCIDR": "10.0.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule"}]},
        status={"capacity": {"cpu": "8", "memory": "32Gi", "pods": 110},
                "allocatable": {"cpu": "7500m"},
                "conditions": [{"type": "Ready", "status": "True",
                                "lastHeartbeatTime": "2026-01-02T03:04:05.123456Z"}],
                "images": [{"names": ["nginx"], "sizeBytes": 1234}],
                "nodeInfo": {"kubeletVersion": "v1.37.2"}})
    assert schema.check(obj, "core.v1.Node") == []


CASES = [
    # (id, object, field, message)
    ("ports-as-string", pod({"containers": [{"name": "c", "ports": "8080"}]}),
     "spec.containers[0].ports", "must be a list, not a string ('8080')"),
    ("controller-ref-as-number", pod({}, ownerReferences=42), "metadata.ownerReferences",
     "must be a list, not an integer (42)"),
    ("priority-beyond-int32", pod({"priority": 2**31}), "spec.priority",
     "must fit in 32 bits (-2147483648..2147483647), not 2147483648"),
    ("port-as-float", pod({"containers": [{"name": "c", "ports": [{"containerPort": 80.5}]}]}),
     "spec.containers[0].ports[0].containerPort", "must be an integer, not a number (80.5)"),
    ("bool-as-string", pod({"hostNetwork": "yes please"}), "spec.hostNetwork",
     "must be a boolean (true or false)"),
    ("name-as-number", pod({"containers": [{"name": 7}]}), "spec.containers[0].name",
     "must be a string, not an integer (7) (quote it in YAML)"),
    ("overhead-quantity", pod({"overhead": {"cpu": "0x10"}}), "spec.overhead.cpu",
     "invalid quantity '0x10'"),
    ("limit-quantity", pod({"containers": [{"name": "c", "resources": {
        "limits": {"ephemeral-storage": "10 Gi"}}}]}),
     "spec.containers[0].resources.limits.ephemeral-storage", "invalid quantity '10 Gi'"),
    ("int-or-string", pod({"containers": [{"name": "c", "livenessProbe": {
        "httpGet": {"port": 1.5}}}]}),
     "spec.containers[0].livenessProbe.httpGet.port", "must be an integer or a string"),
    ("timestamp", pod({}, creationTimestamp="2026-13-01T00:00:00Z"),
     "metadata.creationTimestamp", "must be an RFC 3339 time"),
    ("unknown-field", pod({"nodeSelektor": {"a": "b"}}), "spec.nodeSelektor",
     'unknown field "nodeSelektor" (did you mean "nodeSelector"?)'),
    ("unknown-nested", pod({"containers": [{"name": "c", "resources": {"request": {}}}]}),
     "spec.containers[0].resources.request", 'unknown field "request"'),
    ("bad-label", pod({}, labels={"app": "web server"}), "metadata.labels.app",
     "invalid label value 'web server'"),
    ("bad-annotation-key", pod({}, annotations={"a b": "x"}), "metadata.annotations",
     "invalid annotation key 'a b'"),
]


@pytest.mark.parametrize(("obj", "field", "message"),
                         [pytest.param(o, f, m, id=i) for i, o, f, m in CASES])
def test_decoding_problems_name_the_field(obj: dict[str, Any], field: str,
                                          message: str) -> None:
    err = problem(obj)
    assert err.field == field
    assert message in err.message


def test_capacity_is_checked_even_when_allocatable_is_used() -> None:
    err = problem(node(status={"allocatable": {"cpu": "8"}, "capacity": {"cpu": "0x10"}}),
                  "core.v1.Node")
    assert (err.field, err.message.split(" (")[0]) == ("status.capacity.cpu",
                                                       "invalid quantity '0x10'")


def test_modes_for_unknown_fields() -> None:
    obj = pod({"bogus": 1, "containers": [{"name": "c", "imagee": "x"}]})
    with pytest.raises(InputError, match="--validate=warn skips unknown fields"):
        schema.check(obj, "core.v1.Pod", "strict")
    warnings = schema.check(obj, "core.v1.Pod", "warn")
    assert sorted((w.field, w.message) for w in warnings) == [
        ("spec.bogus", 'unknown field "bogus"'),
        ("spec.containers[0].imagee", 'unknown field "imagee" (did you mean "image"?)')]
    assert schema.check(obj, "core.v1.Pod", "ignore") == []
    broken = pod({"bogus": 1, "priority": "high"})
    for mode in ("warn", "ignore"):  # a type error is an error whatever the mode
        assert problem(broken, mode=mode).field == "spec.priority"


def test_null_is_the_zero_value_everywhere() -> None:
    obj = pod({"nodeSelector": None, "containers": [None, {"name": "c", "ports": None}]},
              labels=None)
    assert schema.check(obj, "core.v1.Pod") == []


@pytest.mark.parametrize(("text", "ok"), [
    ("2026-01-02T03:04:05Z", True), ("2026-01-02T03:04:05.999999999+05:30", True),
    ("2028-02-29T00:00:00-00:00", True), ("2026-02-29T00:00:00Z", False),
    ("2026-01-02 03:04:05Z", False), ("2026-01-02t03:04:05z", False),
    ("2026-01-02T24:00:00Z", False), ("2026-01-02T03:04:60Z", False),
    ("2026-01-02T03:04:05+24:00", False), ("２０２６-01-02T03:04:05Z", False), ("", False),
])
def test_times_are_rfc3339_as_go_parses_them(text: str, ok: bool) -> None:
    obj = pod({}, creationTimestamp=text)
    if ok:
        assert schema.check(obj, "core.v1.Pod") == []
    else:
        assert problem(obj).field == "metadata.creationTimestamp"


@pytest.mark.parametrize(("value", "mode"), [("warn", "warn"), ("IGNORE", "ignore"),
                                             ("true", "strict"), ("false", "ignore")])
def test_mode_names(value: str, mode: str) -> None:
    assert schema.parse_mode(value) == mode


def test_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(schema.VALIDATE_ENV, raising=False)
    assert schema.default_mode() == "strict"
    monkeypatch.setenv(schema.VALIDATE_ENV, "warn")
    assert schema.default_mode() == "warn"
    monkeypatch.setenv(schema.VALIDATE_ENV, "loose")
    with pytest.raises(InputError, match="GANGSCHED_VALIDATE"):
        schema.default_mode()


def test_objects_from_an_api_server_may_carry_newer_fields() -> None:
    """serve reads what a (possibly newer) API server returns: unknown fields are ignored
    there, types still checked."""
    inputs = load_object(node(spec={"fieldFrom1_38": True}))
    assert [n.name for n in inputs.nodes] == ["n1"]
    with pytest.raises(InputError, match="must be a mapping"):
        load_object(node(status=[]))


def test_crd_quantities_follow_the_crd_pattern() -> None:
    """The PodGroup CRD declares minResources values int-or-string with the quantity
    pattern controller-gen writes: no surrounding spaces, no empty number."""
    base = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg"}}
    for good in ("1", "500m", "1.5Gi", "1e3", 4):
        assert schema.check({**base, "spec": {"minResources": {"cpu": good}}},
                            "volcano.PodGroup") == []
    for bad in (" 1", "+", "Gi", 1.5):  # 1.5 as a YAML float: neither int nor string
        err = problem({**base, "spec": {"minResources": {"cpu": bad}}}, "volcano.PodGroup")
        assert err.field == "spec.minResources.cpu"
