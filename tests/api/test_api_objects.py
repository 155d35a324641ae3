"""Parsing Node and Pod objects: effective requests, affinity, tolerations, selectors."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangsched.api.errors import InputError
from gangsched.api.objects import (
    DEFAULT_MAX_PODS,
    parse_label_selector,
    parse_node,
    parse_node_affinity,
    parse_node_requirements,
    parse_pod,
    parse_pod_template,
    parse_taints,
    parse_tolerations,
    pod_requests,
)
from gangsched.api.types import (
    NO_REQUIREMENTS,
    Node,
    NodeRequirements,
    NodeSelectorTerm,
    Pod,
    Requirement,
    Taint,
    Toleration,
)

Gi = 1024**3


def container(requests: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if "limits" in extra:
        resources["limits"] = extra.pop("limits")
    return {"name": "c", "resources": resources, **extra}


def sidecar(requests: dict[str, Any]) -> dict[str, Any]:
    return container(requests, restartPolicy="Always")


def pod_obj(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def node_obj(name: str = "n1", **parts: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, **parts}


# -- effective pod requests ------------------------------------------------------------

REQUEST_CASES = [
    pytest.param({}, {"pods": 1}, id="no-containers"),
    pytest.param(
        {"containers": [container({"cpu": "500m", "memory": "1Gi"})]},
        {"cpu": 500, "memory": Gi, "pods": 1},
        id="one-container",
    ),
    pytest.param(
        {"containers": [container({"cpu": "1"}), container({"cpu": "250m", "memory": "1Gi"})]},
        {"cpu": 1250, "memory": Gi, "pods": 1},
        id="containers-add-up",
    ),
    pytest.param(
        {"containers": [container(None, limits={"nvidia.com/gpu": 8, "cpu": "2"})]},
        {"cpu": 2000, "nvidia.com/gpu": 8, "pods": 1},
        id="limits-only-become-requests",
    ),
    pytest.param(
        {"containers": [container({"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})]},
        {"cpu": 1000, "memory": Gi, "pods": 1},
        id="request-wins-over-limit",
    ),
    pytest.param(
        {
            "initContainers": [container({"cpu": "4", "memory": "1Gi"})],
            "containers": [container({"cpu": "1", "memory": "2Gi"})],
        },
        {"cpu": 4000, "memory": 2 * Gi, "pods": 1},
        id="init-larger-per-resource",
    ),
    pytest.param(
        {
            "initContainers": [container({"cpu": "3"}), container({"cpu": "5"})],
            "containers": [container({"cpu": "1"})],
        },
        {"cpu": 5000, "pods": 1},
        id="init-containers-take-max-not-sum",
    ),
    pytest.param(
        {
            "initContainers": [sidecar({"cpu": "1"})],
            "containers": [container({"cpu": "2"})],
        },
        {"cpu": 3000, "pods": 1},
        id="sidecar-adds-to-containers",
    ),
    pytest.param(
        {
            "initContainers": [
                sidecar({"cpu": "1"}),
                container({"cpu": "4"}),  # runs next to the first sidecar: 5
                sidecar({"cpu": "1"}),
            ],
            "containers": [container({"cpu": "2"})],  # 2 + 2 sidecars = 4
        },
        {"cpu": 5000, "pods": 1},
        id="init-after-sidecar-counts-it",
    ),
    pytest.param(
        {
            "initContainers": [
                container({"cpu": "3"}),  # runs before any sidecar: 3
                sidecar({"cpu": "2"}),
            ],
            "containers": [container({"cpu": "2"})],  # 2 + 2 = 4
        },
        {"cpu": 4000, "pods": 1},
        id="init-before-sidecar-does-not",
    ),
    pytest.param(
        {
            "containers": [container({"cpu": "1", "memory": "1Gi"})],
            "overhead": {"cpu": "250m", "memory": "120Mi"},
        },
        {"cpu": 1250, "memory": Gi + 120 * 1024**2, "pods": 1},
        id="overhead-added",
    ),
    pytest.param(
        {
            "initContainers": [container({"cpu": "4"})],
            "containers": [container({"cpu": "1"})],
            "overhead": {"cpu": "1"},
        },
        {"cpu": 5000, "pods": 1},
        id="overhead-after-init-max",
    ),
    pytest.param(
        {"containers": [container({"cpu": "0", "nvidia.com/gpu": "0"})]},
        {"pods": 1},
        id="zeros-dropped",
    ),
    pytest.param(
        {
            "containers": [container({"cpu": "1", "memory": "1Gi"}), container({"cpu": "1"})],
            "resources": {"requests": {"cpu": "4"}},
        },
        {"cpu": 4000, "memory": Gi, "pods": 1},
        id="pod-level-resources",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), REQUEST_CASES)
def test_pod_requests(spec: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_requests(spec, "spec") == expected
    assert parse_pod(pod_obj(**spec)).requests == expected


REQUEST_ERRORS = [
    pytest.param(
        {"containers": [container({"cpu": "-1"})]},
        "spec.containers[0].resources.requests.cpu",
        "must not be negative",
        id="negative-cpu",
    ),
    pytest.param(
        {"containers": [container({"cpu": "2"}, limits={"cpu": "1"})]},
        "spec.containers[0].resources.requests.cpu",
        "less than or equal to the cpu limit of 1",
        id="request-above-limit",
    ),
    pytest.param(
        {"containers": [container({"nvidia.com/gpu": "4"}, limits={"nvidia.com/gpu": "8"})]},
        "spec.containers[0].resources.requests.nvidia.com/gpu",
        "must be equal to nvidia.com/gpu limit of 8",
        id="extended-request-below-limit",
    ),
    pytest.param(
        {"containers": [container({"cpu": "1", "hugepages-2Mi": "1Gi"},
                                  limits={"cpu": "1", "hugepages-2Mi": "2Gi"})]},
        "spec.containers[0].resources.requests.hugepages-2Mi",
        "must be equal to hugepages-2Mi limit of 2Gi",
        id="hugepages-request-below-limit",
    ),
    pytest.param(
        {"containers": [container({"hugepages-2Mi": "1Gi"}, limits={"hugepages-2Mi": "1Gi"})]},
        "spec.containers[0].resources",
        "HugePages require cpu or memory",
        id="hugepages-alone",
    ),
    pytest.param(
        {"containers": [container({"gpu": "1"})]},
        "spec.containers[0].resources.requests.gpu",
        "not a container resource",
        id="unqualified-resource-name",
    ),
    pytest.param(
        {"initContainers": [container({"cpu": "1"}, restartPolicy="Never")]},
        "spec.initContainers[0].restartPolicy",
        "must be Always",
        id="bad-restart-policy",
    ),
    pytest.param(
        {"containers": {"name": "c"}},
        "spec.containers",
        "must be a list, not a mapping",
        id="containers-not-a-list",
    ),
    pytest.param(
        {"containers": ["c"]},
        "spec.containers[0]",
        "must be a mapping, not a string",
        id="container-not-a-mapping",
    ),
    pytest.param(
        {"containers": [{"name": "c", "resources": {"requests": [1]}}]},
        "spec.containers[0].resources.requests",
        "must be a mapping",
        id="requests-not-a-mapping",
    ),
    pytest.param(
        {"overhead": {"cpu": "x"}},
        "spec.overhead.cpu",
        "invalid quantity",
        id="bad-overhead",
    ),
]


@pytest.mark.parametrize(("spec", "field", "message"), REQUEST_ERRORS)
def test_pod_request_errors(spec: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_pod(pod_obj("web", **spec))
    assert info.value.field == field
    assert info.value.obj == "Pod/web"


# -- node affinity ---------------------------------------------------------------------

GPU_NODE = Node(
    name="gpu-1",
    labels={"zone": "a", "gpus": "8", "accelerator": "h100"},
)


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


AFFINITY_CASES = [
    pytest.param([expr("zone", "In", "a", "b")], True, id="In-match"),
    pytest.param([expr("zone", "In", "b")], False, id="In-miss"),
    pytest.param([expr("zone", "NotIn", "b")], True, id="NotIn-match"),
    pytest.param([expr("rack", "NotIn", "b")], True, id="NotIn-absent-label"),
    pytest.param([expr("zone", "Exists")], True, id="Exists"),
    pytest.param([expr("rack", "Exists")], False, id="Exists-absent"),
    pytest.param([expr("rack", "DoesNotExist")], True, id="DoesNotExist"),
    pytest.param([expr("zone", "DoesNotExist")], False, id="DoesNotExist-present"),
    pytest.param([expr("gpus", "Gt", "4")], True, id="Gt-match"),
    pytest.param([expr("gpus", "Gt", "8")], False, id="Gt-equal-is-miss"),
    pytest.param([expr("gpus", "Lt", "16")], True, id="Lt-match"),
    pytest.param([expr("accelerator", "Gt", "1")], False, id="Gt-non-integer-label"),
    pytest.param([expr("zone", "In", "a"), expr("gpus", "Lt", "4")], False, id="expressions-AND"),
]


@pytest.mark.parametrize(("expressions", "matches"), AFFINITY_CASES)
def test_node_affinity_operators(expressions: list[dict[str, Any]], matches: bool) -> None:
    (term,) = parse_node_affinity(affinity({"matchExpressions": expressions}), "a")
    assert term.matches(GPU_NODE) is matches


def test_node_affinity_terms_are_ORed_and_match_fields() -> None:
    terms = parse_node_affinity(
        affinity(
            {"matchExpressions": [expr("zone", "In", "z")]},
            {"matchFields": [expr("metadata.name", "In", "gpu-1")]},
        ),
        "a",
    )
    assert any(t.matches(GPU_NODE) for t in terms)
    assert not terms[1].matches(Node(name="gpu-2"))


def test_pod_affinity_is_used_in_requirements() -> None:
    pod = parse_pod(
        pod_obj(
            nodeSelector={"zone": "a"},
            affinity={"nodeAffinity": affinity({"matchExpressions": [expr("gpus", "Gt", "7")]})},
        )
    )
    assert pod.requirements.matches(GPU_NODE)
    assert not pod.requirements.matches(Node(name="x", labels={"zone": "a", "gpus": "4"}))


TERMS = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
)

AFFINITY_ERRORS = [
    pytest.param(
        {"matchExpressions": [expr("zone", "In")]},
        f"{TERMS}[0].matchExpressions[0].values",
        "must be specified when `operator` is 'In'",
        id="In-without-values",
    ),
    pytest.param(
        {"matchExpressions": [expr("zone", "In", "a"), expr("zone", "Exists", "a")]},
        f"{TERMS}[0].matchExpressions[1].values",
        "may not be specified when `operator` is 'Exists'",
        id="Exists-with-values",
    ),
    pytest.param(
        {"matchExpressions": [expr("gpus", "Gt", "1", "2")]},
        f"{TERMS}[0].matchExpressions[0].values",
        "exactly one value",
        id="Gt-two-values",
    ),
    pytest.param(
        {"matchExpressions": [expr("gpus", "Lt", "many")]},
        f"{TERMS}[0].matchExpressions[0].values",
        "must be an integer",
        id="Lt-not-integer",
    ),
    pytest.param(
        {"matchExpressions": [expr("zone", "In", "a"), expr("zone", "Like", "a")]},
        f"{TERMS}[0].matchExpressions[1].operator",
        "must be one of: In, NotIn, Exists, DoesNotExist, Gt, Lt",
        id="unknown-operator",
    ),
    pytest.param(
        {"matchExpressions": [{"operator": "Exists"}]},
        f"{TERMS}[0].matchExpressions[0].key",
        "is required",
        id="missing-key",
    ),
    pytest.param(
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": [1]}]},
        f"{TERMS}[0].matchExpressions[0].values[0]",
        "must be a string, not an integer",
        id="integer-value",
    ),
    pytest.param(
        {"matchFields": [expr("metadata.labels", "In", "x")]},
        f"{TERMS}[0].matchFields[0].key",
        "only metadata.name",
        id="matchFields-key",
    ),
    pytest.param(
        {"matchFields": [expr("metadata.name", "In", "x", "y")]},
        f"{TERMS}[0].matchFields[0].values",
        "exactly one value",
        id="matchFields-two-values",
    ),
    pytest.param(
        {"matchFields": [expr("metadata.name", "Exists")]},
        f"{TERMS}[0].matchFields[0].operator",
        "must be one of: In, NotIn",
        id="matchFields-operator",
    ),
]


@pytest.mark.parametrize(("term", "field", "message"), AFFINITY_ERRORS)
def test_node_affinity_errors(term: dict[str, Any], field: str, message: str) -> None:
    obj = pod_obj("web", affinity={"nodeAffinity": affinity(term)})
    with pytest.raises(InputError, match=message) as info:
        parse_pod(obj)
    assert (info.value.obj, info.value.field) == ("Pod/web", field)


def test_node_affinity_needs_a_term() -> None:
    with pytest.raises(InputError, match="at least one node selector term") as info:
        parse_pod(pod_obj(affinity={"nodeAffinity": affinity()}))
    assert info.value.field == TERMS


# -- taints and tolerations ------------------------------------------------------------

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

TOLERATION_CASES = [
    pytest.param([], [GPU_TAINT], False, id="untolerated-NoSchedule"),
    pytest.param(
        [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}],
        [GPU_TAINT],
        True,
        id="Equal-any-effect",
    ),
    pytest.param(
        [{"key": "nvidia.com/gpu", "value": "present"}], [GPU_TAINT], True, id="Equal-default"
    ),
    pytest.param(
        [{"key": "nvidia.com/gpu", "value": "absent"}], [GPU_TAINT], False, id="Equal-wrong-value"
    ),
    pytest.param(
        [{"key": "nvidia.com/gpu", "operator": "Exists"}], [GPU_TAINT], True, id="Exists-key"
    ),
    pytest.param([{"operator": "Exists"}], [GPU_TAINT], True, id="empty-key-Exists-all"),
    pytest.param(
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}],
        [GPU_TAINT],
        False,
        id="effect-mismatch",
    ),
    pytest.param(
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        [GPU_TAINT],
        True,
        id="effect-match",
    ),
    pytest.param(
        [], [{"key": "spot", "effect": "PreferNoSchedule"}], True, id="PreferNoSchedule-no-filter"
    ),
    pytest.param([], [{"key": "drain", "effect": "NoExecute"}], False, id="NoExecute-filters"),
    pytest.param(
        [{"key": "drain", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
        [{"key": "drain", "effect": "NoExecute"}],
        True,
        id="NoExecute-tolerated",
    ),
    pytest.param(
        [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        [GPU_TAINT, {"key": "drain", "effect": "NoExecute"}],
        False,
        id="every-taint-must-be-tolerated",
    ),
]


@pytest.mark.parametrize(("tolerations", "taints", "fits"), TOLERATION_CASES)
def test_tolerations(
    tolerations: list[dict[str, Any]], taints: list[dict[str, Any]], fits: bool
) -> None:
    node = parse_node(node_obj(spec={"taints": taints}))
    pod = parse_pod(pod_obj(tolerations=tolerations))
    assert pod.requirements.matches(node) is fits


TOLERATION_ERRORS = [
    pytest.param({"value": "x"}, "operator", "must be Exists when `key` is empty", id="empty-key"),
    pytest.param(
        {"key": "k", "operator": "Exists", "value": "v"},
        "value",
        "must be empty when `operator` is 'Exists'",
        id="Exists-with-value",
    ),
    pytest.param(
        {"key": "k", "operator": "Has"}, "operator", "must be one of: Equal, Exists", id="op"
    ),
    pytest.param({"key": "k", "effect": "Never"}, "effect", "must be one of", id="effect"),
    pytest.param(
        {"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5},
        "tolerationSeconds",
        "only be set when `effect` is 'NoExecute'",
        id="seconds-without-NoExecute",
    ),
    pytest.param({"key": "k", "value": True}, "value", "quote it", id="bool-value"),
]


@pytest.mark.parametrize(("toleration", "field", "message"), TOLERATION_ERRORS)
def test_toleration_errors(toleration: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_tolerations([{"key": "ok", "operator": "Exists"}, toleration], "spec.tolerations")
    assert info.value.field == f"spec.tolerations[1].{field}"


@pytest.mark.parametrize(
    ("taints", "field", "message"),
    [
        pytest.param([{"effect": "NoSchedule"}], "spec.taints[0].key", "is required", id="key"),
        pytest.param([{"key": "k"}], "spec.taints[0].effect", "is required", id="no-effect"),
        pytest.param(
            [{"key": "k", "effect": "Sometimes"}], "spec.taints[0].effect", "one of", id="effect"
        ),
        pytest.param(
            [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}],
            "spec.taints[1]",
            "duplicate taint",
            id="duplicate",
        ),
    ],
)
def test_taint_errors(taints: list[dict[str, Any]], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_taints(taints, "spec.taints")
    assert info.value.field == field


def test_taints_parse() -> None:
    assert parse_taints([GPU_TAINT], "spec.taints") == (
        Taint("nvidia.com/gpu", "present", "NoSchedule"),
    )


# -- label selectors -------------------------------------------------------------------

LABELS = {"app": "llm", "role": "prefill", "tier": "gpu"}

SELECTOR_CASES = [
    pytest.param({}, True, id="empty-selects-all"),
    pytest.param(None, True, id="null-selects-all"),
    pytest.param({"matchLabels": {"app": "llm"}}, True, id="matchLabels"),
    pytest.param({"matchLabels": {"app": "llm", "role": "decode"}}, False, id="matchLabels-AND"),
    pytest.param({"matchExpressions": [expr("role", "In", "prefill", "decode")]}, True, id="In"),
    pytest.param({"matchExpressions": [expr("role", "NotIn", "prefill")]}, False, id="NotIn"),
    pytest.param({"matchExpressions": [expr("zone", "DoesNotExist")]}, True, id="DoesNotExist"),
    pytest.param(
        {"matchLabels": {"app": "llm"}, "matchExpressions": [expr("tier", "Exists")]},
        True,
        id="labels-and-expressions",
    ),
]


@pytest.mark.parametrize(("selector", "matches"), SELECTOR_CASES)
def test_label_selector(selector: dict[str, Any] | None, matches: bool) -> None:
    assert parse_label_selector(selector, "spec.selector").matches(LABELS) is matches


@pytest.mark.parametrize(
    ("selector", "field", "message"),
    [
        pytest.param(
            {"matchExpressions": [expr("n", "Gt", "1")]},
            "spec.selector.matchExpressions[0].operator",
            "must be one of: In, NotIn, Exists, DoesNotExist",
            id="Gt-not-allowed",
        ),
        pytest.param(
            {"matchLabels": {"app": 1}}, "spec.selector.matchLabels.app", "string", id="int-value"
        ),
        pytest.param({"matchLabels": ["app"]}, "spec.selector.matchLabels", "mapping", id="list"),
        pytest.param("app=llm", "spec.selector", "must be a mapping", id="string-selector"),
    ],
)
def test_label_selector_errors(selector: object, field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_label_selector(selector, "spec.selector")
    assert info.value.field == field


# -- nodes -----------------------------------------------------------------------------


def test_node_parses() -> None:
    node = parse_node(
        node_obj(
            "gpu-1",
            metadata={"name": "gpu-1", "labels": {"zone": "a"}},
            spec={"unschedulable": True, "taints": [GPU_TAINT]},
            status={
                "capacity": {"cpu": "100", "pods": "250"},
                "allocatable": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "8"},
                "conditions": [{"type": "MemoryPressure", "status": "False"}],
            },
        )
    )
    assert node.name == "gpu-1"
    assert node.labels == {"zone": "a"}
    assert node.unschedulable and not node.schedulable
    assert node.allocatable == {
        "cpu": 96_000,
        "memory": 1024**4,
        "nvidia.com/gpu": 8,
        "pods": DEFAULT_MAX_PODS,  # allocatable wins as a whole map over capacity
    }


@pytest.mark.parametrize(
    ("status", "allocatable"),
    [
        pytest.param({"capacity": {"cpu": "4"}}, {"cpu": 4000, "pods": 110}, id="capacity"),
        pytest.param(
            {"allocatable": {"pods": "10"}, "capacity": {"cpu": "4"}},
            {"pods": 10},
            id="allocatable-whole-map",
        ),
        pytest.param({}, {"pods": 110}, id="nothing"),
    ],
)
def test_node_allocatable(status: dict[str, Any], allocatable: dict[str, int]) -> None:
    assert parse_node(node_obj(status=status)).allocatable == allocatable


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        pytest.param(None, True, id="no-conditions"),
        pytest.param([{"type": "Ready", "status": "True"}], True, id="ready"),
        pytest.param([{"type": "Ready", "status": "False"}], False, id="not-ready"),
        pytest.param([{"type": "Ready", "status": "Unknown"}], False, id="unknown"),
        pytest.param([{"type": "DiskPressure", "status": "False"}], True, id="no-ready-condition"),
    ],
)
def test_node_ready(conditions: list[dict[str, str]] | None, ready: bool) -> None:
    node = parse_node(node_obj(status={"conditions": conditions}))
    assert node.ready is ready
    assert node.schedulable is ready


NODE_ERRORS = [
    pytest.param({"metadata": {}}, "Node", "metadata.name", "is required", id="no-name"),
    pytest.param({"metadata": {"name": ""}}, "Node", "metadata.name", "is required", id="empty"),
    pytest.param({"metadata": "n1"}, "Node", "metadata", "must be a mapping", id="metadata-str"),
    pytest.param(
        {"status": {"allocatable": {"cpu": [1]}}},
        "Node/n1",
        "status.allocatable.cpu",
        "must be a quantity",
        id="list-quantity",
    ),
    pytest.param(
        {"status": {"allocatable": {"cpu": "-4"}}},
        "Node/n1",
        "status.allocatable.cpu",
        "must not be negative",
        id="negative-cpu",
    ),
    pytest.param(
        {"spec": {"unschedulable": "yes"}},
        "Node/n1",
        "spec.unschedulable",
        "must be a boolean",
        id="unschedulable-string",
    ),
    pytest.param(
        {"metadata": {"name": "n1", "labels": {"gpus": 8}}},
        "Node/n1",
        "metadata.labels.gpus",
        "must be a string, not an integer (8) (quote it in YAML)",
        id="int-label",
    ),
    pytest.param(
        {"status": {"conditions": {"type": "Ready"}}},
        "Node/n1",
        "status.conditions",
        "must be a list",
        id="conditions-mapping",
    ),
    pytest.param({"spec": []}, "Node/n1", "spec", "must be a mapping, not a list", id="spec-list"),
]


@pytest.mark.parametrize(("parts", "obj", "field", "message"), NODE_ERRORS)
def test_node_errors(parts: dict[str, Any], obj: str, field: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_node(node_obj(**parts))
    assert (info.value.obj, info.value.field) == (obj, field)
    assert message in info.value.message


# -- pods and templates ----------------------------------------------------------------


def test_pod_parses_every_field() -> None:
    pod = parse_pod(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "w-0",
                "namespace": "ml",
                "uid": "u-1",
                "labels": {"app": "llm"},
                "annotations": {"note": "x"},
            },
            "spec": {
                "schedulerName": "gangsched",
                "nodeName": "gpu-1",
                "priority": 100,
                "priorityClassName": "high",
                "schedulingGroup": {"podGroupName": "workers"},
                "containers": [container({"nvidia.com/gpu": 8})],
            },
        }
    )
    assert (pod.key, pod.uid, pod.labels, pod.annotations) == (
        "ml/w-0",
        "u-1",
        {"app": "llm"},
        {"note": "x"},
    )
    assert (pod.scheduler_name, pod.node_name, pod.priority, pod.priority_class_name) == (
        "gangsched",
        "gpu-1",
        100,
        "high",
    )
    assert pod.workload_group == "workers"
    assert pod.requests == {"nvidia.com/gpu": 8, "pods": 1}


def test_pod_defaults() -> None:
    pod = parse_pod(pod_obj("p"))
    assert (pod.namespace, pod.scheduler_name, pod.node_name, pod.priority) == (
        "default",
        "default-scheduler",
        None,
        0,
    )
    assert pod.priority_class_name is None and pod.workload_group is None


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        pytest.param({"priority": "high"}, "spec.priority", "must be an integer", id="priority"),
        pytest.param({"priority": 2**40}, "spec.priority", "32 bits", id="priority-range"),
        pytest.param({"nodeName": 3}, "spec.nodeName", "must be a string", id="nodeName"),
        pytest.param(
            {"nodeSelector": ["zone"]}, "spec.nodeSelector", "must be a mapping", id="selector"
        ),
        pytest.param(
            {"tolerations": {"key": "k"}}, "spec.tolerations", "must be a list", id="tolerations"
        ),
        pytest.param(
            {"schedulingGroup": "g"}, "spec.schedulingGroup", "must be a mapping", id="group"
        ),
    ],
)
def test_pod_errors(spec: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_pod(pod_obj("web", **spec))
    assert (info.value.obj, info.value.field) == ("Pod/web", field)


def test_pod_template_for_front_ends() -> None:
    template = {
        "metadata": {"labels": {"role": "decode"}},
        "spec": {
            "schedulerName": "gangsched",
            "priorityClassName": "serving",
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"operator": "Exists"}],
            "containers": [container({"cpu": "8"}, limits={"nvidia.com/gpu": "4"})],
        },
    }
    parsed = parse_pod_template(template, "spec.template")
    assert parsed.requests == {"cpu": 8000, "nvidia.com/gpu": 4, "pods": 1}
    assert parsed.requirements.node_selector == (("zone", "a"),)
    pod = parsed.make_pod("decode-0", "ml", node_name="gpu-1")
    assert (pod.key, pod.labels, pod.scheduler_name, pod.node_name) == (
        "ml/decode-0",
        {"role": "decode"},
        "gangsched",
        "gpu-1",
    )
    pod.labels["extra"] = "x"
    assert "extra" not in parsed.labels  # pods do not share the template's dicts

    bad = {"spec": {"containers": [container({"cpu": "lots"})]}}
    with pytest.raises(InputError) as info:
        parse_pod_template(bad, "spec.template")
    assert info.value.field == "spec.template.spec.containers[0].resources.requests.cpu"


# -- robustness: any YAML shape is an InputError or a value, never a crash ---------------

VOCABULARY = [
    *("metadata", "name", "labels", "spec", "status", "containers", "initContainers"),
    *("resources", "requests", "limits", "overhead", "cpu", "memory", "nvidia.com/gpu"),
    *("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
    *("nodeSelectorTerms", "matchExpressions", "matchFields", "key", "operator", "values"),
    *("tolerations", "taints", "effect", "value", "tolerationSeconds", "priority"),
    *("nodeSelector", "restartPolicy", "schedulingGroup", "podGroupName", "allocatable"),
    *("capacity", "conditions", "type", "unschedulable", "namespace", "annotations"),
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.sampled_from(["", "1", "-1", "1.5", "1Gi", "abc", "In", "Gt", "Exists", "Always"])
    | st.sampled_from(["NoSchedule", "NoExecute", "Equal", "Ready", "True", "metadata.name"])
)
YAML_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(VOCABULARY) | st.integers(), inner, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=100, deadline=None)
@given(obj=st.dictionaries(st.sampled_from(VOCABULARY), YAML_VALUES, max_size=5))
def test_any_shape_is_an_input_error_or_a_value(obj: dict[str, Any]) -> None:
    for parse in (parse_node, parse_pod):
        with contextlib.suppress(InputError):
            parse(obj)


@pytest.mark.parametrize(
    "label", ["1_0", " 10", "10 ", "١٠"], ids=["underscore", "lead", "trail", "arabic"]
)
def test_gt_needs_a_plain_integer_label(label: str) -> None:
    (term,) = parse_node_affinity(affinity({"matchExpressions": [expr("n", "Gt", "1")]}), "a")
    assert not term.matches(Node(name="x", labels={"n": label}))


# -- requests that come from limits, and the active deadline ---------------------------------

FROM_LIMITS_CASES = [
    pytest.param({"containers": [container(limits={"nvidia.com/gpu": 2})]},
                 {"nvidia.com/gpu"}, id="limit-only"),
    pytest.param({"containers": [container({"nvidia.com/gpu": 2},
                                           limits={"nvidia.com/gpu": 2})]},
                 set(), id="request-and-limit"),
    pytest.param({"containers": [container({"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"}),
                                 container({"memory": "1Gi"})]},
                 {"memory"}, id="one-container-defaulted"),
    pytest.param({"initContainers": [container(limits={"cpu": "4"})],
                  "containers": [container({"cpu": "1"})]},
                 {"cpu"}, id="init-container"),
    pytest.param({"containers": [container(limits={"cpu": "1"})],
                  "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}},
                 set(), id="pod-level-request-replaces"),
    pytest.param({"containers": [container({"cpu": "1"})],
                  "resources": {"limits": {"cpu": "2"}}},
                 {"cpu"}, id="pod-level-limit-only"),
    pytest.param({"containers": [container(limits={"example.com/zero": 0})]},
                 set(), id="zero-is-no-request"),
]


@pytest.mark.parametrize(("spec", "expected"), FROM_LIMITS_CASES)
def test_requests_from_limits_are_recorded(spec: dict[str, Any], expected: set[str]) -> None:
    found: set[str] = set()
    pod_requests(spec, "spec", found)
    assert found == expected
    assert parse_pod(pod_obj(**spec)).from_limits == tuple(sorted(expected))


def test_the_active_deadline_is_read() -> None:
    assert parse_pod(pod_obj(activeDeadlineSeconds=300)).active_deadline == 300
    assert parse_pod(pod_obj()).active_deadline is None
    template = parse_pod_template({"spec": {"activeDeadlineSeconds": 2**31 - 1}},
                                  "spec.template")
    assert template.make_pod("x").active_deadline == 2**31 - 1


@pytest.mark.parametrize("value", [0, -1, 2**31, "5", 5.0])
def test_a_bad_active_deadline_is_rejected(value: object) -> None:
    with pytest.raises(InputError, match=r"Pod/p: spec\.activeDeadlineSeconds: must be"):
        parse_pod(pod_obj(activeDeadlineSeconds=value))


# -- the plain fast paths read exactly as the long way ----------------------------------------

PLAIN_BASES: list[dict[str, Any]] = [
    pod_obj(schedulerName="gangsched", schedulingGroup={"podGroupName": "g"},
            containers=[container({"cpu": "100m", "memory": "100Mi"})]),
    {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": "p", "namespace": "ns", "uid": "u-1",
                  "labels": {"app": "x", "example.com/role": "r"},
                  "annotations": {"note": "n", "scheduling.k8s.io/group-name": "g"}},
     "spec": {"nodeName": "n1", "priority": 5, "priorityClassName": "high",
              "activeDeadlineSeconds": 60, "nodeSelector": {"zone": "a"},
              "tolerations": [{"key": "gpu", "operator": "Exists"}],
              "initContainers": [container({"cpu": "1"}, restartPolicy="Always")],
              "containers": [container({"cpu": "1"}, limits={"nvidia.com/gpu": "2"}),
                             container(limits={"memory": "1Gi"})],
              "resources": {"limits": {"cpu": "4"}}, "overhead": {"cpu": "10m"}}},
    node_obj(metadata={"name": "n1", "labels": {"rack": "r1", "kubernetes.io/hostname": "n1"}},
             spec={"unschedulable": False},
             status={"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                     "capacity": {"cpu": "4"},
                     "conditions": [{"type": "MemoryPressure", "status": "False"},
                                    {"type": "Ready", "status": "True"}]}),
]
ODD_VALUES: list[Any] = [None, "", "x", "-1", "0", "1", "2147483648", 0, 1, -1, 2**31, True,
                         False, 1.5, [], {}, ["x"], {"k": "v"}, {"cpu": "1"}, "Bad_Name",
                         "a" * 64, "a/b", "1Gi", "100m", "Always", "Never", "Ready", "True"]


PLAIN_FIELDS = ["priority", "schedulingGroup", "schedulerName", "priorityClassName",
                "activeDeadlineSeconds", "nodeName", "labels", "annotations", "name",
                "namespace", "uid", "unschedulable", "taints", "nodeSelector", "affinity",
                "tolerations", "containers", "initContainers", "resources", "overhead"]


def _paths(obj: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(obj, dict):
        for key, item in obj.items():
            found += _paths(item, (*at, key))
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            found += _paths(item, (*at, i))
    return found


def _mutated(rng: Any, obj: dict[str, Any]) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(obj)
    for _ in range(rng.randint(1, 2)):
        if rng.random() < 0.3:  # a field the shortcuts read, set to an odd value
            part = out.setdefault(rng.choice(["spec", "metadata"]), {})
            if isinstance(part, dict):
                part[rng.choice(PLAIN_FIELDS)] = copy.deepcopy(rng.choice(ODD_VALUES))
                continue
        path = rng.choice(_paths(out)[1:])
        parent = out
        for step in path[:-1]:
            parent = parent[step]
        if rng.random() < 0.15 and isinstance(parent, dict):
            del parent[path[-1]]
        elif rng.random() < 0.15 and isinstance(parent, dict):
            parent[rng.choice(["nodeName", "uid", "namespace", "limits", "requests", "labels",
                               "activeDeadlineSeconds", "priority", "x"])] = copy.deepcopy(
                rng.choice(ODD_VALUES))
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
    return out


def _outcome(parse: Any, obj: Any) -> str:
    try:
        return repr(parse(obj))
    except InputError as err:
        return f"error: {err}"


def test_the_plain_paths_read_as_the_long_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes, Pods and templates of plain dicts are read by shortcuts; on a thousand
    mutations (wrong types, odd values, missing and extra keys) they give the same value
    or the same error as the general code."""
    import random

    from gangsched.api import objects

    rng = random.Random("gangsched-plain")
    parsers = [
        ("pod", parse_pod),
        ("node", parse_node),
        ("template", lambda obj: parse_pod_template(obj, "spec.template")),
    ]
    seen = {"value": 0, "error": 0}
    for n in range(2400):
        base = PLAIN_BASES[n % len(PLAIN_BASES)]
        obj = base if n < len(PLAIN_BASES) else _mutated(rng, base)
        for name, parse in parsers:
            if (name == "node") != (base["kind"] == "Node"):
                continue
            fast = _outcome(parse, obj)
            with monkeypatch.context() as m:
                for shortcut in ("_plain_pod", "_plain_template", "_plain_node",
                                 "_requests_key"):
                    m.setattr(objects, shortcut, lambda *args: None)
                slow = _outcome(parse, obj)
            assert fast == slow, (name, obj)
            seen["error" if fast.startswith("error") else "value"] += 1
    assert seen["value"] > 300 and seen["error"] > 300


def test_pod_on_node_is_the_same_pod_bound_elsewhere_and_leaves_the_original() -> None:
    pod = Pod("p", labels={"a": "b"}, requests={"cpu": 100}, uid="u1")
    bound = pod.on_node("n1")
    assert bound == dataclasses.replace(pod, node_name="n1")
    assert pod.node_name is None and bound is not pod
    assert bound.on_node(None) == pod


def test_node_requirements_compare_by_value_and_pods_share_the_empty_one() -> None:
    sel = NodeRequirements(node_selector=(("zone", "a"),))
    assert sel == NodeRequirements(node_selector=(("zone", "a"),)) and sel is not NO_REQUIREMENTS
    assert hash(sel) == hash(NodeRequirements(node_selector=(("zone", "a"),)))
    term = NodeSelectorTerm(match_expressions=(Requirement("zone", "In", ("a",)),))
    others = [NO_REQUIREMENTS, NodeRequirements(node_selector=(("zone", "b"),)),
              NodeRequirements(affinity=(term,)),
              NodeRequirements(tolerations=(Toleration(key="gpu", operator="Exists"),))]
    for other in others:
        assert sel != other and other == dataclasses.replace(other)
    assert sel != (("zone", "a"),) and NodeRequirements() == NO_REQUIREMENTS
    # a pod spec asking nothing of a node: the one shared value (a cache key by identity)
    assert parse_node_requirements({}, "spec") is NO_REQUIREMENTS
    assert Pod(name="p").requirements is NO_REQUIREMENTS
