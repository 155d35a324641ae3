"""Parse Kubernetes Node and Pod objects (plain YAML dicts) into :mod:`gangsched.api.types`.

Validation follows Kubernetes where it matters for scheduling (selector operators,
tolerations, taints, resource names) so that what we accept is what an API server would
accept. Every error is an :class:`InputError` whose ``field`` is the full path inside the
object (``spec.containers[0].resources.requests.cpu``) and, for whole objects, whose
``obj`` is ``Kind/name``. Wrong YAML types are input errors, never Python exceptions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from gangsched.api import names
from gangsched.api.errors import InputError
from gangsched.api.quantity import format_quantity, parse_resources
from gangsched.api.types import (
    NO_REQUIREMENTS,
    LabelSelector,
    Node,
    NodeRequirements,
    NodeSelectorTerm,
    Pod,
    Requirement,
    Resources,
    SelectorOp,
    Taint,
    TaintEffect,
    Toleration,
)

DEFAULT_MAX_PODS = 110
"""``pods`` allocatable of a Node manifest that does not state it (the kubelet default)."""

TAINT_EFFECTS: tuple[TaintEffect, ...] = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NODE_SELECTOR_OPS: tuple[SelectorOp, ...] = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_SELECTOR_OPS: tuple[SelectorOp, ...] = ("In", "NotIn", "Exists", "DoesNotExist")
TOLERATION_OPS: tuple[Literal["Equal", "Exists"], ...] = ("Equal", "Exists")
POD_LEVEL_RESOURCES = ("cpu", "memory")  # what spec.resources (pod-level resources) may set

T = TypeVar("T")

# -- typed access to YAML values -------------------------------------------------------


def _join(prefix: str, name: str) -> str:
    """Field path ``prefix.name`` (just ``name`` at the top of an object)."""
    return f"{prefix}.{name}" if prefix else name


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, int | float):
        return f"{'an integer' if isinstance(value, int) else 'a number'} ({value!r})"
    return f"a {type(value).__name__} ({value!r})"


describe = _describe


def _wrong_type(expected: str, value: object, field: str) -> InputError:
    hint = ""
    if expected == "a string" and isinstance(value, bool | int | float):
        hint = " (quote it in YAML)"
    return InputError(f"must be {expected}, not {_describe(value)}{hint}", field=field)


def as_mapping(value: object, field: str) -> Mapping[str, Any]:
    """A mapping field; absent (``None``) is an empty mapping."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _wrong_type("a mapping", value, field)
    return value


def as_list(value: object, field: str) -> list[Any]:
    """A list field; absent (``None``) is an empty list."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong_type("a list", value, field)
    return value


def as_str(value: object, field: str, default: str = "") -> str:
    """A string field; absent (``None``) is ``default``."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise _wrong_type("a string", value, field)
    return value


def as_int(value: object, field: str, default: int = 0) -> int:
    """An integer field (not a bool, not a float, not a numeric string)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_type("an integer", value, field)
    return value


def as_bool(value: object, field: str, default: bool = False) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _wrong_type("a boolean (true or false)", value, field)
    return value


def required_str(obj: Mapping[str, Any], key: str, field: str) -> str:
    """A string that must be present and non-empty."""
    value = as_str(obj.get(key), _join(field, key))
    if not value:
        raise InputError("is required", field=_join(field, key))
    return value


def as_str_map(value: object, field: str) -> dict[str, str]:
    """A ``map[string]string`` such as labels, annotations or a nodeSelector."""
    if type(value) is dict and all(
            type(k) is str and k and type(v) is str for k, v in value.items()):
        return dict(value)
    result: dict[str, str] = {}
    for key, item in as_mapping(value, field).items():
        if not isinstance(key, str) or not key:
            raise InputError(f"invalid key {key!r}: keys must be non-empty strings", field=field)
        result[key] = as_str(item, _join(field, key))
    return result


def check_label_key(key: str, field: str, what: str = "label key") -> None:
    """A label key (qualified name): an optional DNS subdomain prefix and ``/``, then a
    name of at most 63 alphanumerics, ``-``, ``_`` and ``.``."""
    problems = names.qualified_name(key)
    if problems:
        raise InputError(f"invalid {what} {key!r}: {names.first(problems)}", field=field)


def check_labels(labels: Mapping[str, Any], field: str) -> None:
    """Label keys and values as the API server validates them (``ValidateLabels``)."""
    qualified, valid_value = names.qualified_name, names.label_value
    for key, value in labels.items():
        if value is None:
            value = ""  # null decodes as the empty string
        if type(key) is not str or type(value) is not str:
            as_str_map(labels, field)  # raises the type error
        if qualified(key):
            check_label_key(key, field)
        if valid_value(value):
            raise InputError(f"invalid label value {value!r}: "
                             f"{names.first(valid_value(value))}", field=_join(field, key))


def check_annotations(annotations: Mapping[str, str], field: str) -> None:
    """Annotation keys are qualified names (case aside); all of them at most 256 KiB."""
    total = 0
    for key, value in annotations.items():
        if value is None:
            value = ""  # null decodes as the empty string
        problems = names.qualified_name(key.lower())
        if problems:
            raise InputError(f"invalid annotation key {key!r}: {names.first(problems)}",
                             field=field)
        total += len(key.encode("utf-8", "surrogatepass")) + len(
            value.encode("utf-8", "surrogatepass"))
    if total > names.ANNOTATIONS_MAX_BYTES:
        raise InputError(f"annotations are {total:,} bytes, more than the limit of "
                         f"{names.ANNOTATIONS_MAX_BYTES:,}", field=field)


def check_name(name: str, field: str, rule: Callable[[str], tuple[str, ...]],
               what: str = "name") -> None:
    problems = rule(name)
    if problems:
        raise InputError(f"invalid {what} {name!r}: {names.first(problems)}", field=field)


def check_object_meta(meta: object, name_rule: Callable[[str], tuple[str, ...]] = (
        names.dns1123_subdomain), *, schema_checked: bool = False) -> None:
    """``ValidateObjectMeta`` for what it checks of an object's own fields: the name (by
    ``name_rule``, the kind's rule), the namespace (a DNS label), labels and annotations
    (unless ``schema_checked``: the schema pass checks those already)."""
    if not isinstance(meta, Mapping):
        return
    name, namespace = meta.get("name"), meta.get("namespace")
    if isinstance(name, str) and name and not (
            name_rule is names.dns1123_subdomain and names.is_dns1123_subdomain(name)):
        check_name(name, "metadata.name", name_rule)
    if isinstance(namespace, str) and namespace:
        check_name(namespace, "metadata.namespace", names.dns1123_label, "namespace")
    if not schema_checked:
        labels = meta.get("labels")
        if isinstance(labels, Mapping) and labels:
            check_labels(labels, "metadata.labels")
        annotations = meta.get("annotations")
        if isinstance(annotations, Mapping) and annotations:
            check_annotations(as_str_map(annotations, "metadata.annotations"),
                              "metadata.annotations")


def mappings(value: object, field: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """The entries of a list of mappings, each with its field path ``field[i]``."""
    for i, item in enumerate(as_list(value, field)):
        path = f"{field}[{i}]"
        if not isinstance(item, Mapping):
            raise _wrong_type("a mapping", item, path)
        yield item, path


def one_of(value: str, allowed: tuple[T, ...], field: str) -> T:
    """``value`` checked against a closed set of strings (an operator, an effect...)."""
    for choice in allowed:
        if value == choice:
            return choice
    expected = ", ".join(map(str, allowed))
    shown = repr(value) if value else "empty"
    raise InputError(f"unsupported value {shown}; must be one of: {expected}", field=field)


class about:
    """Name the object (``Kind/name``) in every :class:`InputError` raised inside."""

    __slots__ = ("obj",)

    def __init__(self, obj: str) -> None:
        self.obj = obj

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, err: BaseException | None, tb: object) -> None:
        if isinstance(err, InputError):
            raise err.located(obj=self.obj) from None


# -- label requirements and selectors --------------------------------------------------

_INT64 = re.compile(r"[+-]?[0-9]{1,19}")  # int64; bounded before int() parses it


def _check_values(op: SelectorOp, values: tuple[str, ...], field: str) -> None:
    """Kubernetes' rules tying an operator to its values."""
    if op in ("In", "NotIn") and not values:
        raise InputError(f"must be specified when `operator` is '{op}'", field=field)
    if op in ("Exists", "DoesNotExist") and values:
        raise InputError(f"may not be specified when `operator` is '{op}'", field=field)
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise InputError(f"must have exactly one value when `operator` is '{op}'", field=field)
        if not _INT64.fullmatch(values[0]) or not -(2**63) <= int(values[0]) < 2**63:
            raise InputError(f"must be an integer for '{op}', not {values[0]!r}", field=field)


def parse_requirement(
    obj: Mapping[str, Any], field: str, operators: tuple[SelectorOp, ...] = NODE_SELECTOR_OPS,
    *, label_values: bool = True,
) -> Requirement:
    """One ``{key, operator, values}`` expression, validated as Kubernetes does: the key
    a qualified name, the values (unless ``label_values`` is false) label values."""
    key = required_str(obj, "key", field)
    if label_values:
        check_label_key(key, _join(field, "key"))
    op = one_of(required_str(obj, "operator", field), operators, _join(field, "operator"))
    values_field = _join(field, "values")
    values = tuple(
        as_str(v, f"{values_field}[{i}]")
        for i, v in enumerate(as_list(obj.get("values"), values_field))
    )
    _check_values(op, values, values_field)
    if label_values:
        for i, value in enumerate(values):
            problems = names.label_value(value)
            if problems:
                raise InputError(f"invalid label value {value!r}: {names.first(problems)}",
                                 field=f"{values_field}[{i}]")
    return Requirement(key=key, operator=op, values=values)


def _requirements(
    value: object, field: str, operators: tuple[SelectorOp, ...]
) -> tuple[Requirement, ...]:
    return tuple(parse_requirement(item, path, operators) for item, path in mappings(value, field))


def split_selector(text: str) -> list[str]:
    """A label selector in text form (``app=x,env in (a,b)``) split into its
    requirements: at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_label_selector(obj: object, field: str) -> LabelSelector:
    """A ``metav1.LabelSelector``. ``None`` gives the empty selector (matches everything);
    callers for which an absent selector means "nothing" must check before calling."""
    selector = as_mapping(obj, field)
    match_labels = as_str_map(selector.get("matchLabels"), _join(field, "matchLabels"))
    check_labels(match_labels, _join(field, "matchLabels"))
    expressions = _requirements(
        selector.get("matchExpressions"), _join(field, "matchExpressions"), LABEL_SELECTOR_OPS
    )
    return LabelSelector(
        match_labels=tuple(sorted(match_labels.items())), match_expressions=expressions
    )


def _parse_field_requirement(obj: Mapping[str, Any], field: str) -> Requirement:
    """A ``matchFields`` entry: only ``metadata.name`` with In/NotIn and one value."""
    req = parse_requirement(obj, field, ("In", "NotIn"), label_values=False)
    if req.key != "metadata.name":
        raise InputError(
            f"unsupported field {req.key!r}; only metadata.name is supported",
            field=_join(field, "key"),
        )
    if len(req.values) != 1:
        raise InputError(
            f"must have exactly one value when `operator` is '{req.operator}' in matchFields",
            field=_join(field, "values"),
        )
    return req


def _parse_selector_term(obj: Mapping[str, Any], field: str) -> NodeSelectorTerm:
    exprs = _requirements(
        obj.get("matchExpressions"), _join(field, "matchExpressions"), NODE_SELECTOR_OPS
    )
    fields = tuple(
        _parse_field_requirement(item, path)
        for item, path in mappings(obj.get("matchFields"), _join(field, "matchFields"))
    )
    return NodeSelectorTerm(match_expressions=exprs, match_fields=fields)


def parse_node_affinity(obj: object, field: str) -> tuple[NodeSelectorTerm, ...]:
    """The required terms of a ``nodeAffinity`` object (ORed; empty = no constraint).

    ``field`` is the path of the nodeAffinity object itself, e.g.
    ``spec.affinity.nodeAffinity``. Preferred terms only score, so they are ignored.
    """
    affinity = as_mapping(obj, field)
    required_field = _join(field, "requiredDuringSchedulingIgnoredDuringExecution")
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return ()
    terms_field = _join(required_field, "nodeSelectorTerms")
    terms = as_mapping(required, required_field).get("nodeSelectorTerms")
    result = tuple(_parse_selector_term(item, path) for item, path in mappings(terms, terms_field))
    if not result:
        raise InputError("must have at least one node selector term", field=terms_field)
    return result


# -- taints and tolerations ------------------------------------------------------------


def parse_taints(obj: object, field: str) -> tuple[Taint, ...]:
    """``spec.taints`` of a Node; a (key, effect) pair may appear only once."""
    taints: list[Taint] = []
    for item, path in mappings(obj, field):
        key = required_str(item, "key", path)
        check_label_key(key, _join(path, "key"), "taint key")
        value = as_str(item.get("value"), _join(path, "value"))
        if names.label_value(value):
            raise InputError(f"invalid taint value {value!r}: "
                             f"{names.first(names.label_value(value))}", field=_join(path, "value"))
        effect = one_of(required_str(item, "effect", path), TAINT_EFFECTS, _join(path, "effect"))
        if any(t.key == key and t.effect == effect for t in taints):
            raise InputError(f"duplicate taint {key}:{effect}", field=path)
        taints.append(Taint(key=key, value=value, effect=effect))
    return tuple(taints)


def _parse_toleration(item: Mapping[str, Any], path: str) -> Toleration:
    key = as_str(item.get("key"), _join(path, "key"))
    if key:
        check_label_key(key, _join(path, "key"), "toleration key")
    op_field = _join(path, "operator")
    operator = one_of(as_str(item.get("operator"), op_field) or "Equal", TOLERATION_OPS, op_field)
    value = as_str(item.get("value"), _join(path, "value"))
    effect_field = _join(path, "effect")
    effect = as_str(item.get("effect"), effect_field)
    if effect:
        one_of(effect, TAINT_EFFECTS, effect_field)
    if not key and operator != "Exists":
        raise InputError("must be Exists when `key` is empty", field=op_field)
    if operator == "Exists" and value:
        raise InputError("must be empty when `operator` is 'Exists'", field=_join(path, "value"))
    if names.label_value(value):
        raise InputError(f"invalid toleration value {value!r}: "
                         f"{names.first(names.label_value(value))}", field=_join(path, "value"))
    seconds_field = _join(path, "tolerationSeconds")
    if item.get("tolerationSeconds") is not None:
        as_int(item.get("tolerationSeconds"), seconds_field)
        if effect != "NoExecute":
            raise InputError("may only be set when `effect` is 'NoExecute'", field=seconds_field)
    return Toleration(key=key, operator=operator, value=value, effect=effect)


def parse_tolerations(obj: object, field: str) -> tuple[Toleration, ...]:
    """A pod's ``tolerations`` list, validated as Kubernetes does."""
    return tuple(_parse_toleration(item, path) for item, path in mappings(obj, field))


def parse_node_requirements(spec: Mapping[str, Any], field: str) -> NodeRequirements:
    """nodeSelector, required node affinity and tolerations of a pod spec."""
    if (spec.get("nodeSelector") is None and spec.get("affinity") is None
            and spec.get("tolerations") is None):
        return NO_REQUIREMENTS  # most pods: a value, shared
    selector = as_str_map(spec.get("nodeSelector"), _join(field, "nodeSelector"))
    check_labels(selector, _join(field, "nodeSelector"))
    affinity_field = _join(field, "affinity")
    affinity = as_mapping(spec.get("affinity"), affinity_field)
    return NodeRequirements(
        node_selector=tuple(sorted(selector.items())),
        affinity=parse_node_affinity(
            affinity.get("nodeAffinity"), _join(affinity_field, "nodeAffinity")
        ),
        tolerations=parse_tolerations(spec.get("tolerations"), _join(field, "tolerations")),
    )


# -- effective pod requests ------------------------------------------------------------


def _is_container_resource(name: str) -> bool:
    """Standard container resources or an extended resource (``vendor.com/thing``)."""
    if name in ("cpu", "memory", "ephemeral-storage") or name.startswith("hugepages-"):
        return True
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _add(total: dict[str, int], extra: Mapping[str, int]) -> None:
    for name, value in extra.items():
        total[name] = total.get(name, 0) + value


def _max_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        total[name] = max(total.get(name, 0), value)


def _requests_with_limits(resources: object, field: str,
                          defaulted: set[str] | None = None) -> dict[str, int]:
    """Requests of one ``resources`` block; a resource only limited is requested at its
    limit (API defaulting: its name is added to ``defaulted``), a request may not exceed
    its limit, nor differ from it for an extended resource or hugepages, and hugepages
    come with cpu or memory."""
    block = as_mapping(resources, field)
    requests_field, limits_field = _join(field, "requests"), _join(field, "limits")
    requests = parse_resources(block.get("requests"), requests_field)
    limits = parse_resources(block.get("limits"), limits_field)
    # ValidateResourceRequirements, but for one rule: an extended resource requested
    # without a limit ("Limit must be set for non overcommitable resources") is read as
    # requested, as manifests written for schedulers commonly do
    for name, limit in limits.items():
        if defaulted is not None and name not in requests:
            defaulted.add(name)
        request = requests.setdefault(name, limit)
        if request != limit and not _overcommitable(name):
            raise InputError(f"must be equal to {name} limit of {format_quantity(limit, name)}",
                             field=f"{requests_field}.{name}")
        if request > limit:
            raise InputError(
                f"must be less than or equal to the {name} limit of {format_quantity(limit, name)}",
                field=f"{requests_field}.{name}",
            )
    if any(n.startswith("hugepages-") for n in requests) and not (
            {"cpu", "memory"} & requests.keys()):
        raise InputError("HugePages require cpu or memory", field=field)
    return requests


def _overcommitable(name: str) -> bool:
    """A request may sit below its limit (``IsOvercommitAllowed``): a native resource
    (no domain, or a ``kubernetes.io/`` one) other than hugepages; an extended resource
    (``nvidia.com/gpu``) and hugepages are asked for whole, request equal to limit."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _check_container_resource_names(resources: object, field: str) -> None:
    block = as_mapping(resources, field)
    for kind in ("requests", "limits"):
        for name in as_mapping(block.get(kind), f"{field}.{kind}"):
            if isinstance(name, str) and not _is_container_resource(name):
                raise InputError(
                    "is not a container resource (use cpu, memory, ephemeral-storage, "
                    "hugepages-<size> or an extended resource such as nvidia.com/gpu)",
                    field=f"{field}.{kind}.{name}",
                )


def _container_requests(container: Mapping[str, Any], field: str,
                        defaulted: set[str] | None = None) -> dict[str, int]:
    resources_field = _join(field, "resources")
    requests = _requests_with_limits(container.get("resources"), resources_field, defaulted)
    _check_container_resource_names(container.get("resources"), resources_field)
    return requests


def _quantities_key(value: object) -> tuple[tuple[str, str], ...] | bool | None:
    """A requests/limits map as a hashable key: None when absent, False when it is not a
    plain mapping of strings (then it is not remembered)."""
    if value is None:
        return None
    if type(value) is not dict:
        return False
    for raw in value.values():
        if type(raw) is not str:
            return False
    return tuple(value.items())


def _block_key(block: object) -> object:
    """A ``resources`` block as a hashable key of what :func:`pod_requests` reads of it
    (False: not remembered)."""
    if block is None:
        return None
    if type(block) is not dict:
        return False
    requests = _quantities_key(block.get("requests"))
    limits = _quantities_key(block.get("limits"))
    if requests is False or limits is False:
        return False
    return (requests, limits)


def _requests_key(spec: Mapping[str, Any]) -> tuple[object, ...] | None:
    """Everything :func:`pod_requests` reads of ``spec``, as a hashable key; None when
    some part is not plain (then the spec is read the long way, and any error raised)."""
    if type(spec) is not dict:
        return None
    containers = spec.get("containers")
    if type(containers) is not list:
        return None
    parts: list[object] = []
    for container in containers:
        if type(container) is not dict:
            return None
        block = _block_key(container.get("resources"))
        if block is False:
            return None
        parts.append(block)
    inits = spec.get("initContainers")
    if inits is not None:
        if type(inits) is not list:
            return None
        parts.append(len(inits))  # where the init containers start
        for container in inits:
            if type(container) is not dict:
                return None
            block = _block_key(container.get("resources"))
            policy = container.get("restartPolicy")
            if block is False or (policy is not None and type(policy) is not str):
                return None
            parts.append((block, policy))
    pod_level = _block_key(spec.get("resources"))
    overhead = _quantities_key(spec.get("overhead"))
    if pod_level is False or overhead is False:
        return None
    return (len(containers), *parts, pod_level, overhead)


_REQUESTS_SEEN: dict[tuple[object, ...], tuple[Resources, tuple[str, ...]]] = {}
_REQUESTS_SEEN_MAX = 4096


def pod_requests(spec: Mapping[str, Any], field: str,
                 from_limits: set[str] | None = None) -> Resources:
    """The effective request of a pod spec, as kube-scheduler computes it
    (``PodRequests`` in pkg/api/v1/resource), plus ``pods: 1``. Zero entries are dropped.

    ``field`` is the path of the spec (``spec`` or ``spec.template.spec``). The resources
    whose request some container (or the pod-level ``resources``) states only through
    its limit (requests default to limits) are added to ``from_limits``.

    Pods in bulk repeat a few specs: the result for a spec of plain string quantities is
    remembered, keyed by everything read here (a spec that fails is never remembered,
    so it fails again with its error).
    """
    key = _requests_key(spec)
    if key is not None:
        known = _REQUESTS_SEEN.get(key)
        if known is None:
            defaulted: set[str] = set()
            known = (_pod_requests(spec, field, defaulted), tuple(sorted(defaulted)))
            if len(_REQUESTS_SEEN) >= _REQUESTS_SEEN_MAX:
                _REQUESTS_SEEN.clear()
            _REQUESTS_SEEN[key] = known
        if from_limits is not None:
            from_limits.update(known[1])
        return dict(known[0])
    return _pod_requests(spec, field, from_limits)


def _pod_requests(spec: Mapping[str, Any], field: str,
                  from_limits: set[str] | None) -> Resources:
    total: dict[str, int] = {}
    defaulted: set[str] | None = None if from_limits is None else set()
    for container, path in mappings(spec.get("containers"), _join(field, "containers")):
        _add(total, _container_requests(container, path, defaulted))
    sidecars: dict[str, int] = {}  # restartable init containers started so far
    init_peak: dict[str, int] = {}
    for container, path in mappings(spec.get("initContainers"), _join(field, "initContainers")):
        requests = _container_requests(container, path, defaulted)
        policy = as_str(container.get("restartPolicy"), _join(path, "restartPolicy"))
        if policy == "Always":  # a sidecar: runs alongside everything after it
            _add(total, requests)
            _add(sidecars, requests)
            requests = dict(sidecars)
        elif policy:
            raise InputError(
                f"unsupported value {policy!r}; must be Always", field=_join(path, "restartPolicy")
            )
        else:
            _add(requests, sidecars)
        _max_into(init_peak, requests)
    _max_into(total, init_peak)
    pod_defaulted: set[str] | None = None if defaulted is None else set()
    pod_level = _requests_with_limits(spec.get("resources"), _join(field, "resources"),
                                      pod_defaulted)
    for name in POD_LEVEL_RESOURCES:
        if name in pod_level:
            total[name] = pod_level[name]
            if defaulted is not None and pod_defaulted is not None:
                defaulted.discard(name)  # the pod-level request replaces the containers'
                if name in pod_defaulted:
                    defaulted.add(name)
    _add(total, parse_resources(spec.get("overhead"), _join(field, "overhead")))
    total["pods"] = 1
    result = {name: value for name, value in sorted(total.items()) if value}
    if from_limits is not None and defaulted:
        from_limits.update(name for name in defaulted if name in result)
    return result


# -- pods and templates ----------------------------------------------------------------


@dataclass
class PodTemplate:
    """What front-ends need from a ``PodTemplateSpec`` to build pods."""

    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    requests: Resources = field(default_factory=lambda: {"pods": 1})
    requirements: NodeRequirements = NO_REQUIREMENTS
    scheduler_name: str = "default-scheduler"
    priority: int = 0
    priority_class_name: str | None = None
    workload_group: str | None = None
    active_deadline: int | None = None  # spec.activeDeadlineSeconds
    from_limits: tuple[str, ...] = ()  # resources requested only through their limits
    gates: tuple[str, ...] = ()  # spec.schedulingGates

    def make_pod(self, name: str, namespace: str = "default", **overrides: Any) -> Pod:
        """A Pod from this template (dicts copied); ``overrides`` set other Pod fields."""
        fields: dict[str, Any] = {
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "scheduler_name": self.scheduler_name,
            "priority": self.priority,
            "priority_class_name": self.priority_class_name,
            "requests": dict(self.requests),
            "requirements": self.requirements,
            "workload_group": self.workload_group,
            "active_deadline": self.active_deadline,
            "from_limits": self.from_limits,
            "gates": self.gates,
        }
        if overrides:
            fields.update(overrides)
        return Pod(name, namespace, **fields)


_INT32 = (-(2**31), 2**31 - 1)
RESTART_POLICIES = ("Always", "OnFailure", "Never")  # a pod's spec.restartPolicy


def active_deadline(spec: Mapping[str, Any], field: str) -> int | None:
    """``activeDeadlineSeconds`` of a pod spec at ``field``: None when absent, else an
    integer from 1 to 2^31-1, as ``ValidatePodSpec`` requires (``InclusiveRangeError(1,
    math.MaxInt32)``; the field is an int64 in the API type)."""
    value = spec.get("activeDeadlineSeconds")
    if value is None:
        return None
    path = _join(field, "activeDeadlineSeconds")
    seconds = as_int(value, path)
    if not 1 <= seconds <= _INT32[1]:
        raise InputError(f"must be between 1 and {_INT32[1]}, inclusive, not {seconds}",
                         field=path)
    return seconds


def _plain_labels(value: object, annotations: bool = False) -> dict[str, str] | None:
    """Labels (or annotations) of plain strings that pass their checks, copied; None for
    anything else (the long way then explains it)."""
    if value is None:
        return {}
    if type(value) is not dict:
        return None
    for key, item in value.items():
        if type(key) is not str or not key or type(item) is not str:
            return None
        if not annotations and not (names.is_qualified_name(key)
                                    and names.is_label_value(item)):
            return None
    if annotations and value:
        try:
            check_annotations(value, "")
        except InputError:
            return None
    return dict(value)


def _plain_template(template: object) -> PodTemplate | None:
    """The PodTemplate :func:`parse_pod_template` would return, for a template of plain
    dicts and strings (pods in bulk); None for anything else, which the long way then
    reads (and raises its error for)."""
    if type(template) is not dict:
        return None
    meta, spec = template.get("metadata"), template.get("spec")
    if meta is None:
        meta = {}
    if type(meta) is not dict or type(spec) is not dict:
        return None
    priority, group = spec.get("priority"), spec.get("schedulingGroup")
    scheduler, priority_class = spec.get("schedulerName"), spec.get("priorityClassName")
    if priority is None:
        priority = 0
    elif type(priority) is not int or not _INT32[0] <= priority <= _INT32[1]:
        return None
    group_name = None if group is None else (
        group.get("podGroupName") if type(group) is dict else False)
    deadline = spec.get("activeDeadlineSeconds")
    if (group_name is False or not (group_name is None or type(group_name) is str)
            or not (scheduler is None or type(scheduler) is str)
            or not (priority_class is None or type(priority_class) is str)
            or not (deadline is None or (type(deadline) is int and 1 <= deadline <= _INT32[1]))
            or (scheduler and not names.is_dns1123_subdomain(scheduler))
            or (priority_class and not names.is_dns1123_subdomain(priority_class))
            or spec.get("restartPolicy", "Always") not in RESTART_POLICIES
            or spec.get("schedulingGates") or _port_error(spec, "spec")):
        return None
    labels = _plain_labels(meta.get("labels"))
    annotations = _plain_labels(meta.get("annotations"), annotations=True)
    if labels is None or annotations is None or _requests_key(spec) is None:
        return None
    from_limits: set[str] = set()
    try:
        requests = pod_requests(spec, "spec", from_limits)
        requirements = parse_node_requirements(spec, "spec")
    except InputError:
        return None
    return PodTemplate(labels, annotations, requests, requirements,
                       scheduler or "default-scheduler", priority, priority_class or None,
                       group_name or None, deadline, tuple(sorted(from_limits)))


def _check_spec_names(spec: Mapping[str, Any], field: str, scheduler: str,
                      priority_class: str) -> None:
    """What ``ValidatePodSpec`` checks of these names: ``schedulerName`` and
    ``priorityClassName`` are DNS subdomains (a ``schedulerName`` of ``" volcano"`` would
    otherwise be some other scheduler's pod, silently), ``restartPolicy`` one of
    :data:`RESTART_POLICIES` (null: ``Always``)."""
    restart = spec.get("restartPolicy")
    if restart is not None:
        one_of(as_str(restart, _join(field, "restartPolicy")), RESTART_POLICIES,
               _join(field, "restartPolicy"))
    if scheduler:
        check_name(scheduler, _join(field, "schedulerName"), names.dns1123_subdomain,
                   "scheduler name")
    if priority_class:
        check_name(priority_class, _join(field, "priorityClassName"),
                   names.dns1123_subdomain, "priority class name")


PROTOCOLS = ("TCP", "UDP", "SCTP")


def container_ports(spec: Mapping[str, Any]) -> Iterator[tuple[str, int, int, dict[str, Any]]]:
    """Each port of the spec's containers and init containers, as (``containers`` or
    ``initContainers``, container index, port index, port); what is not a list or a
    mapping is passed over (the schema reports it)."""
    for kind in ("containers", "initContainers"):
        items = spec.get(kind)
        for i, container in enumerate(items if type(items) is list else ()):
            ports = container.get("ports") if type(container) is dict else None
            for j, port in enumerate(ports if type(ports) is list else ()):
                if type(port) is dict:
                    yield kind, i, j, port


def _port_error(spec: Mapping[str, Any], field: str) -> InputError | None:
    """What ``ValidatePodSpec`` refuses in the containers' ports, or None: a
    ``containerPort`` outside 1-65535, a ``hostPort`` other than 0 outside it, a
    ``protocol`` other than TCP, UDP or SCTP (the schema has checked the types)."""
    for kind, i, j, port in container_ports(spec):
        at = _join(field, f"{kind}[{i}].ports[{j}]")
        for key, required in (("containerPort", True), ("hostPort", False)):
            value = port.get(key) or 0
            if type(value) is not int or ((value or required) and not 0 < value < 65536):
                text = ("Required value" if value == 0 else
                        f"must be between 1 and 65535, inclusive, not {value!r}")
                return InputError(text, field=_join(at, key))
        protocol = port.get("protocol")
        if protocol is not None and protocol not in PROTOCOLS:
            return InputError(f"unsupported value {protocol!r}; must be one of: "
                              f"{', '.join(PROTOCOLS)}", field=_join(at, "protocol"))
    return None


def parse_pod_template(template: object, field: str) -> PodTemplate:
    """A ``PodTemplateSpec`` (``{metadata, spec}``) at ``field`` (``spec.template``)."""
    plain = _plain_template(template)
    if plain is not None:
        return plain
    tmpl = as_mapping(template, field)
    meta_field, spec_field = _join(field, "metadata"), _join(field, "spec")
    meta = as_mapping(tmpl.get("metadata"), meta_field)
    spec = as_mapping(tmpl.get("spec"), spec_field)
    priority_field = _join(spec_field, "priority")
    priority = as_int(spec.get("priority"), priority_field)
    if not _INT32[0] <= priority <= _INT32[1]:
        raise InputError(f"must fit in 32 bits, not {priority}", field=priority_field)
    group_field = _join(spec_field, "schedulingGroup")
    group = as_mapping(spec.get("schedulingGroup"), group_field)
    scheduler = as_str(spec.get("schedulerName"), _join(spec_field, "schedulerName"))
    priority_class = as_str(spec.get("priorityClassName"), _join(spec_field, "priorityClassName"))
    group_name = as_str(group.get("podGroupName"), _join(group_field, "podGroupName"))
    _check_spec_names(spec, spec_field, scheduler, priority_class)
    bad_port = _port_error(spec, spec_field)
    if bad_port is not None:
        raise bad_port
    labels = as_str_map(meta.get("labels"), _join(meta_field, "labels"))
    check_labels(labels, _join(meta_field, "labels"))
    annotations = as_str_map(meta.get("annotations"), _join(meta_field, "annotations"))
    check_annotations(annotations, _join(meta_field, "annotations"))
    from_limits: set[str] = set()
    requests = pod_requests(spec, spec_field, from_limits)
    return PodTemplate(
        labels=labels,
        annotations=annotations,
        requests=requests,
        requirements=parse_node_requirements(spec, spec_field),
        scheduler_name=scheduler or "default-scheduler",
        priority=priority,
        priority_class_name=priority_class or None,
        workload_group=group_name or None,
        active_deadline=active_deadline(spec, spec_field),
        from_limits=tuple(sorted(from_limits)),
        gates=scheduling_gates(spec, spec_field),
    )


def scheduling_gates(spec: Mapping[str, Any], field: str) -> tuple[str, ...]:
    """The names of ``spec.schedulingGates``, checked as ``ValidatePodSpec`` checks them:
    each a qualified name, none twice."""
    out: list[str] = []
    for item, path in mappings(spec.get("schedulingGates"), _join(field, "schedulingGates")):
        name = required_str(item, "name", path)
        check_name(name, _join(path, "name"), names.qualified_name, "scheduling gate name")
        if name in out:
            raise InputError(f"Duplicate value: {name!r}", field=_join(path, "name"))
        out.append(name)
    return tuple(out)


def object_name(obj: Mapping[str, Any], kind: str) -> str:
    """``metadata.name`` (required, non-empty); errors name the object as ``kind``."""
    with about(kind):
        return required_str(as_mapping(obj.get("metadata"), "metadata"), "name", "metadata")


def _plain_pod(obj: Mapping[str, Any]) -> Pod | None:
    """The Pod :func:`parse_pod` would return, for a pod of plain dicts and strings; None
    for anything else."""
    if type(obj) is not dict:
        return None
    meta, spec = obj.get("metadata"), obj.get("spec")
    if type(meta) is not dict or type(spec) is not dict:
        return None
    name, namespace, uid = meta.get("name"), meta.get("namespace"), meta.get("uid")
    node_name = spec.get("nodeName")
    if (type(name) is not str or not name
            or not (namespace is None or type(namespace) is str)
            or not (uid is None or type(uid) is str)
            or not (node_name is None or (type(node_name) is str and (
                not node_name or names.is_dns1123_subdomain(node_name))))):
        return None
    template = _plain_template(obj)
    if template is None:
        return None
    return template.make_pod(name, namespace or "default", node_name=node_name or None,
                             uid=uid or None)


TERMINAL_PHASES = ("Succeeded", "Failed")


def pod_gone(obj: Mapping[str, Any]) -> bool:
    """Finished (``status.phase`` Succeeded or Failed) or being deleted
    (``metadata.deletionTimestamp``): no longer running, nor to be scheduled, as
    kube-scheduler's pod informer sees it."""
    status, meta = obj.get("status"), obj.get("metadata")
    # decoded JSON holds dicts: the exact type test first (isinstance against the
    # Mapping ABC costs ~10x more, and this runs several times per watch event)
    phase = status.get("phase") if type(status) is dict or isinstance(status, Mapping) else None
    deleting = (meta.get("deletionTimestamp") if type(meta) is dict or isinstance(meta, Mapping)
                else None)
    return phase in TERMINAL_PHASES or bool(deleting)


def parse_pod(obj: Mapping[str, Any]) -> Pod:
    """A ``v1`` Pod."""
    plain = _plain_pod(obj)
    if plain is not None:
        return plain
    name = object_name(obj, "Pod")
    with about(f"Pod/{name}"):
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        node_name = as_str(spec.get("nodeName"), "spec.nodeName")
        if node_name and not names.is_dns1123_subdomain(node_name):  # ValidateNodeName
            check_name(node_name, "spec.nodeName", names.dns1123_subdomain, "node name")
        return parse_pod_template(obj, "").make_pod(
            name,
            as_str(meta.get("namespace"), "metadata.namespace") or "default",
            node_name=node_name or None,
            uid=as_str(meta.get("uid"), "metadata.uid") or None,
        )


# -- nodes -----------------------------------------------------------------------------


def _node_ready(conditions: object, field: str) -> bool:
    """The Ready condition's status is "True"; a node reporting no conditions is ready."""
    ready = True
    for item, path in mappings(conditions, field):
        if as_str(item.get("type"), _join(path, "type")) == "Ready":
            ready = as_str(item.get("status"), _join(path, "status")) == "True"
    return ready


# the names without a domain Kubernetes calls standard (``IsStandardResourceName``);
# any other resource of a Node is ``vendor.com/thing`` (``validateResourceName``)
STANDARD_RESOURCES = frozenset((
    "cpu", "memory", "ephemeral-storage", "pods", "storage", "requests.cpu",
    "requests.memory", "requests.ephemeral-storage", "requests.storage", "limits.cpu",
    "limits.memory", "limits.ephemeral-storage", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims",
    "services.nodeports", "services.loadbalancers"))


def check_node_resource_name(name: str, field: str) -> None:
    """A Node's resource (a syntactically valid name): standard, or with a domain."""
    if "/" not in name and name not in STANDARD_RESOURCES and not name.startswith(
            ("hugepages-", "requests.hugepages-")):
        raise InputError(f"{name!r} must be a standard resource type or fully qualified "
                         f"(such as vendor.com/{name})", field=field)


def _node_resources(status: Mapping[str, Any], key: str) -> Resources:
    resources = parse_resources(status.get(key), f"status.{key}")
    for name in resources:
        check_node_resource_name(name, f"status.{key}.{name}")
    return resources


def _node_allocatable(status: Mapping[str, Any]) -> Resources:
    """``status.allocatable`` if present, else ``status.capacity``; default ``pods``."""
    key = "allocatable" if status.get("allocatable") is not None else "capacity"
    resources = _node_resources(status, key)
    if key == "allocatable":  # checked as ValidateNode checks it, though not read
        _node_resources(status, "capacity")
    resources.setdefault("pods", DEFAULT_MAX_PODS)
    return resources


def _plain_node(obj: Mapping[str, Any]) -> Node | None:
    """The Node :func:`parse_node` would return, for a node of plain dicts, strings and
    no taints (a cluster's nodes in bulk); None for anything else, which the long way
    then reads (and raises its error for)."""
    if type(obj) is not dict:
        return None
    meta, spec, status = obj.get("metadata"), obj.get("spec"), obj.get("status")
    if type(meta) is not dict or (spec is not None and type(spec) is not dict):
        return None
    name, labels = meta.get("name"), meta.get("labels")
    if type(name) is not str or not name:
        return None
    if labels is None:
        labels = {}
    elif type(labels) is dict and all(
            type(k) is str and k and type(v) is str for k, v in labels.items()):
        labels = dict(labels)
    else:
        return None
    unschedulable = False
    if spec:
        flag = spec.get("unschedulable")
        if spec.get("taints") or (flag is not None and type(flag) is not bool):
            return None
        unschedulable = bool(flag)
    if status is None:
        status = {}
    elif type(status) is not dict:
        return None
    ready = True
    conditions = status.get("conditions")
    if conditions is not None:
        if type(conditions) is not list:
            return None
        for item in conditions:
            if type(item) is not dict:
                return None
            kind = item.get("type")
            if kind is not None and type(kind) is not str:
                return None
            if kind == "Ready":
                state = item.get("status")
                if state is not None and type(state) is not str:
                    return None
                ready = state == "True"
    try:
        allocatable = _node_allocatable(status)
    except InputError:
        return None
    return Node(name, labels, (), allocatable, unschedulable, ready)


def parse_node(obj: Mapping[str, Any]) -> Node:
    """A ``v1`` Node."""
    plain = _plain_node(obj)
    if plain is not None:
        return plain
    name = object_name(obj, "Node")
    with about(f"Node/{name}"):
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        return Node(
            name=name,
            labels=as_str_map(meta.get("labels"), "metadata.labels"),
            taints=parse_taints(spec.get("taints"), "spec.taints"),
            allocatable=_node_allocatable(status),
            unschedulable=as_bool(spec.get("unschedulable"), "spec.unschedulable"),
            ready=_node_ready(status.get("conditions"), "status.conditions"),
        )
