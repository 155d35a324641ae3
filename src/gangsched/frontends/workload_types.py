"""The Kubernetes Workload API objects, parsed and validated into frozen values.

Kinds and versions (group ``scheduling.k8s.io``):

==================  ============================  =========================================
kind                versions                      source
==================  ============================  =========================================
Workload            v1beta1, v1alpha3, v1alpha2   KEP-4671 (templates), KEP-6012 (composite)
PodGroup            v1beta1, v1alpha3, v1alpha2   KEP-5832/4671 (runtime), KEP-6012 (refs)
CompositePodGroup   v1alpha3                      KEP-6012 (alpha in 1.37)
==================  ============================  =========================================

Shared group fields (templates and runtime objects alike): ``schedulingPolicy``
(``basic`` | ``gang.minCount`` for PodGroups, ``gang.minGroupCount`` for composites),
``schedulingConstraints.topology[].key`` (KEP-5732, at most one), ``disruptionMode``
(``single`` | ``all``, KEP-5710/6012), ``priorityClassName`` and ``priority``.

``v1alpha2`` is the Kubernetes 1.36 API (``staging/src/k8s.io/api/scheduling/v1alpha2``
at release-1.36), which current JobSet and Kueue integrations still create; 1.37 removed
it for ``v1alpha3``. It is read with its own field names, not as an alias: a PodGroup
names its template with ``spec.podGroupTemplateRef.workload`` {``workloadName``,
``podGroupTemplateName``} (there is no ``workloadRef``), ``disruptionMode`` is a string,
``Pod`` or ``PodGroup`` (read as ``single`` and ``all``), and there are no composites (no
``compositePodGroupTemplates``, no ``parentCompositePodGroupName``): each PodGroup is a
root. A field of another version is an unknown field, as the 1.36 API server has it.

This module checks what one object can check on its own (what kube-apiserver would
reject); rules that span objects (cycles, depth of the runtime hierarchy, template
references) are checked by the builder in :mod:`gangsched.frontends.workload`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gangsched.api import names, schema
from gangsched.api.errors import InputError
from gangsched.api.loader import Document, with_generated_name
from gangsched.api.objects import (
    as_int,
    as_list,
    as_mapping,
    as_str,
    check_name,
    mappings,
    object_name,
    one_of,
    required_str,
)
from gangsched.gang import Disruption

GroupKind = Literal["PodGroup", "CompositePodGroup"]
PolicyKind = Literal["basic", "gang"]
POD_GROUP: GroupKind = "PodGroup"
COMPOSITE: GroupKind = "CompositePodGroup"

API_GROUP = "scheduling.k8s.io"
V1ALPHA2 = f"{API_GROUP}/v1alpha2"  # Kubernetes 1.36: no composites, string disruptionMode
WORKLOAD_VERSIONS = (f"{API_GROUP}/v1beta1", f"{API_GROUP}/v1alpha3", V1ALPHA2)
COMPOSITE_VERSIONS = (f"{API_GROUP}/v1alpha3",)

MAX_TEMPLATES = 8  # per template list (WorkloadMaxPodGroupTemplates)
MAX_DEPTH = 4  # levels of a group hierarchy, counting the leaf PodGroups (KEP-6012)
MAX_TOPOLOGY = 1  # schedulingConstraints.topology maxItems
MAX_PRIORITY = 1_000_000_000  # HighestUserDefinablePriority
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


# -- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """``schedulingPolicy``: ``basic``, or ``gang`` with its minimum."""

    kind: PolicyKind
    minimum: int = 0  # gang.minCount (PodGroup) or gang.minGroupCount (CompositePodGroup)


@dataclass(frozen=True)
class GroupSettings:
    """The fields a template and its runtime object share; ``None`` means "not set"."""

    policy: Policy | None = None
    topology: tuple[str, ...] | None = None  # node label keys of required constraints
    disruption: Disruption | None = None
    priority_class_name: str | None = None
    priority: int | None = None


@dataclass(frozen=True)
class Template:
    """A ``PodGroupTemplate`` or ``CompositePodGroupTemplate`` inside a Workload."""

    kind: GroupKind  # the kind of runtime object it creates
    name: str
    field: str  # path inside the Workload, e.g. spec.compositePodGroupTemplates[0]
    depth: int  # 1 for the templates listed directly in the Workload spec
    settings: GroupSettings
    children: tuple[Template, ...] = ()

    def walk(self) -> Iterator[Template]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class WorkloadObject:
    """A parsed ``Workload``: its template forest."""

    namespace: str
    name: str
    templates: tuple[Template, ...]
    doc: Document = field(compare=False, repr=False)

    def find(self, name: str) -> Template | None:
        """The template named ``name`` anywhere in the tree (names are unique)."""
        return next((t for top in self.templates for t in top.walk() if t.name == name), None)


@dataclass(frozen=True)
class WorkloadRef:
    """``spec.workloadRef`` (or the older ``spec.podGroupTemplateRef.workload``)."""

    workload_name: str
    template_name: str
    field: str  # where the reference is, e.g. spec.workloadRef
    template_field: str  # where the template name is, e.g. spec.workloadRef.templateName


@dataclass(frozen=True)
class GroupObject:
    """A parsed runtime ``PodGroup`` or ``CompositePodGroup``."""

    kind: GroupKind
    namespace: str
    name: str
    parent: str | None  # spec.parentCompositePodGroupName
    workload_ref: WorkloadRef | None
    settings: GroupSettings
    doc: Document = field(compare=False, repr=False)

    @property
    def key(self) -> tuple[GroupKind, str, str]:
        return (self.kind, self.namespace, self.name)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


# -- small field parsers -----------------------------------------------------------------


def _is_set(value: object) -> bool:
    """A union member counts as set when present and not an empty list."""
    return value is not None and value != []


def _one_member(obj: Mapping[str, Any], members: tuple[str, str], field: str) -> str:
    """The single member set in a union such as ``{basic: {}}`` or ``{all: {}}``."""
    chosen = [m for m in members if obj.get(m) is not None]
    names = ", ".join(members)
    if len(chosen) > 1:
        raise InputError(f"set exactly one of {names}, not both", field=field)
    if not chosen:
        raise InputError(f"must set one of {names}", field=field)
    as_mapping(obj[chosen[0]], f"{field}.{chosen[0]}")  # members are (empty) objects
    return chosen[0]


def _name(obj: Mapping[str, Any], key: str, field: str, *, label: bool) -> str:
    """A required object name: a DNS label (``label``) or a DNS subdomain."""
    value = required_str(obj, key, field)
    pattern, what = (_DNS_LABEL, "a DNS label") if label else (_DNS_SUBDOMAIN, "a DNS name")
    if not pattern.fullmatch(value) or len(value) > 253:
        raise InputError(
            f"invalid name {value!r}: must be {what} (lowercase letters, digits and '-')",
            field=f"{field}.{key}",
        )
    return value


def _label_key(key: str, field: str) -> str:
    prefix, _, name = key.rpartition("/")
    valid = bool(_LABEL_NAME.fullmatch(name)) and (
        not prefix or (len(prefix) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(prefix)))
    )
    if not valid:
        raise InputError(f"invalid node label key {key!r}", field=field)
    return key


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = as_mapping(obj.get("metadata"), "metadata")
    return as_str(meta.get("namespace"), "metadata.namespace") or "default"


# -- shared group fields -----------------------------------------------------------------


def _gang_minimum(value: object, field: str, kind: GroupKind) -> int:
    gang = as_mapping(value, field)
    key, other = "minCount", "minGroupCount"
    if kind == COMPOSITE:
        key, other = other, key
    if gang.get(key) is None:
        if gang.get(other) is not None:
            message = f"is not a field of a {kind} gang; use {key}"
            raise InputError(message, field=f"{field}.{other}")
        raise InputError("is required", field=f"{field}.{key}")
    minimum = as_int(gang.get(key), f"{field}.{key}")
    if not 1 <= minimum <= INT32_MAX:
        raise InputError(f"must be a positive integer, not {minimum}", field=f"{field}.{key}")
    return minimum


def parse_policy(value: object, field: str, kind: GroupKind) -> Policy | None:
    """``schedulingPolicy``: exactly one of ``basic`` and ``gang`` (``None`` if absent)."""
    if value is None:
        return None
    policy = as_mapping(value, field)
    if _one_member(policy, ("basic", "gang"), field) == "basic":
        return Policy("basic")
    return Policy("gang", _gang_minimum(policy["gang"], f"{field}.gang", kind))


def parse_topology(value: object, field: str) -> tuple[str, ...] | None:
    """``schedulingConstraints``: the keys of ``topology[]`` (``None`` if absent)."""
    if value is None:
        return None
    constraints = as_mapping(value, field)
    topology_field = f"{field}.topology"
    entries = list(mappings(constraints.get("topology"), topology_field))
    if len(entries) > MAX_TOPOLOGY:
        raise InputError(
            f"must have at most {MAX_TOPOLOGY} item, not {len(entries)}", field=topology_field
        )
    return tuple(
        _label_key(required_str(item, "key", path), f"{path}.key") for item, path in entries
    )


DISRUPTION_MODES_V1ALPHA2 = ("Pod", "PodGroup")  # DisruptionModePod, DisruptionModePodGroup


def parse_disruption(value: object, field: str, api_version: str = "") -> Disruption | None:
    """``disruptionMode``: ``{single: {}}`` or ``{all: {}}``; in v1alpha2 the string
    ``Pod`` or ``PodGroup`` (``None`` if absent)."""
    if value is None:
        return None
    if api_version == V1ALPHA2:
        mode = one_of(as_str(value, field), DISRUPTION_MODES_V1ALPHA2, field)
        return "all" if mode == "PodGroup" else "single"
    member = _one_member(as_mapping(value, field), ("single", "all"), field)
    return "all" if member == "all" else "single"


def parse_priority(value: object, field: str) -> int | None:
    if value is None:
        return None
    priority = as_int(value, field)
    if not INT32_MIN <= priority <= MAX_PRIORITY:
        raise InputError(
            f"must be at most {MAX_PRIORITY} (the highest user-definable priority), "
            f"not {priority}",
            field=field,
        )
    return priority


def check_disruption_policy(
    policy: Policy | None, disruption: Disruption | None, base: str, api_version: str = ""
) -> None:
    """KEP-5710: ``all`` disruption only for gangs (a basic group's members are separate
    scheduling units, and a preemption unit may not be larger than a scheduling unit)."""
    if policy is not None and policy.kind == "basic" and disruption == "all":
        at = f"{base}.disruptionMode"
        raise InputError(
            "is not allowed with schedulingPolicy basic: only a gang can be disrupted "
            "as a whole (KEP-5710)",
            field=at if api_version == V1ALPHA2 else f"{at}.all",
        )


def parse_settings(obj: Mapping[str, Any], base: str, kind: GroupKind,
                   api_version: str = "") -> GroupSettings:
    """The shared group fields of a template or object spec at ``base``."""
    at = f"{base}." if base else ""
    policy = parse_policy(obj.get("schedulingPolicy"), f"{at}schedulingPolicy", kind)
    disruption = parse_disruption(obj.get("disruptionMode"), f"{at}disruptionMode",
                                  api_version)
    check_disruption_policy(policy, disruption, base, api_version)
    class_name = as_str(obj.get("priorityClassName"), f"{at}priorityClassName")
    if class_name:  # a PriorityClass's name: a DNS subdomain (or no class can match)
        check_name(class_name, f"{at}priorityClassName", names.dns1123_subdomain,
                   "priority class name")
    return GroupSettings(
        policy=policy,
        topology=parse_topology(obj.get("schedulingConstraints"), f"{at}schedulingConstraints"),
        disruption=disruption,
        priority_class_name=class_name or None,
        priority=parse_priority(obj.get("priority"), f"{at}priority"),
    )


# -- Workload ----------------------------------------------------------------------------


def _check_all_children(template: Template) -> None:
    """KEP-6012: an ``all`` composite template has only ``all`` children."""
    if template.settings.disruption != "all":
        return
    for child in template.children:
        if child.settings.disruption != "all":
            raise InputError(
                f"must be all: parent CompositePodGroupTemplate {template.name!r} has "
                "disruptionMode all (KEP-6012)",
                field=f"{child.field}.disruptionMode",
            )


def _composite_children(
    item: Mapping[str, Any], path: str, depth: int, names: dict[str, str], version: str
) -> tuple[Template, ...]:
    if depth >= MAX_DEPTH:
        raise InputError(
            f"too deep: a CompositePodGroupTemplate at level {depth} leaves no level for "
            f"its PodGroupTemplates (at most {MAX_DEPTH} levels, KEP-6012)",
            field=path,
        )
    children = _templates(
        item.get("podGroupTemplates"), f"{path}.podGroupTemplates", POD_GROUP, depth + 1,
        names, version,
    ) + _templates(
        item.get("compositePodGroupTemplates"),
        f"{path}.compositePodGroupTemplates",
        COMPOSITE,
        depth + 1,
        names,
        version,
    )
    if not children:
        raise InputError(
            "must list at least one child in podGroupTemplates or compositePodGroupTemplates",
            field=path,
        )
    return children


def _template(
    item: Mapping[str, Any], path: str, kind: GroupKind, depth: int, names: dict[str, str],
    version: str,
) -> Template:
    name = _name(item, "name", path, label=True)
    if name in names:
        raise InputError(
            f"duplicate template name {name!r} (also at {names[name]}): template names are "
            "unique in the whole Workload",
            field=f"{path}.name",
        )
    names[name] = path
    settings = parse_settings(item, path, kind, version)
    if settings.policy is None:
        raise InputError("is required", field=f"{path}.schedulingPolicy")
    children = _composite_children(item, path, depth, names, version) if (
        kind == COMPOSITE) else ()
    template = Template(kind, name, path, depth, settings, children)
    _check_all_children(template)
    return template


def _templates(
    value: object, field: str, kind: GroupKind, depth: int, names: dict[str, str],
    version: str,
) -> tuple[Template, ...]:
    items = as_list(value, field)
    if len(items) > MAX_TEMPLATES:
        raise InputError(f"must have at most {MAX_TEMPLATES} items, not {len(items)}", field=field)
    return tuple(_template(item, path, kind, depth, names, version)
                 for item, path in mappings(items, field))


def _shown(value: object) -> str:
    return "unset" if value is None else repr(value)


def _check_one_priority(top: Template) -> None:
    """KEP-6012 alpha: every template of one hierarchy has the same priority fields."""
    want = (top.settings.priority_class_name, top.settings.priority)
    for template in top.walk():
        s = template.settings
        for key, have, expected in (
            ("priorityClassName", s.priority_class_name, want[0]),
            ("priority", s.priority, want[1]),
        ):
            if have != expected:
                raise InputError(
                    f"must equal the {key} of CompositePodGroupTemplate {top.name!r} "
                    f"({_shown(expected)}, not {_shown(have)}): one hierarchy has one "
                    "priority (KEP-6012)",
                    field=f"{template.field}.{key}",
                )


def parse_workload(doc: Document) -> WorkloadObject:
    """A ``Workload``: ``podGroupTemplates`` or ``compositePodGroupTemplates`` (a union;
    v1alpha2 has only ``podGroupTemplates``, required)."""
    obj = with_generated_name(doc)
    name = object_name(obj, "Workload")
    spec = as_mapping(obj.get("spec"), "spec")
    version = doc.api_version
    flat, nested = spec.get("podGroupTemplates"), spec.get("compositePodGroupTemplates")
    if version == V1ALPHA2:
        if not _is_set(flat):
            raise InputError("is required", field="spec.podGroupTemplates")
        nested = None  # not a field of v1alpha2
    if _is_set(flat) and _is_set(nested):
        raise InputError(
            "set podGroupTemplates or compositePodGroupTemplates, not both (a union)",
            field="spec",
        )
    if not _is_set(flat) and not _is_set(nested):
        raise InputError(
            "must set one of podGroupTemplates, compositePodGroupTemplates", field="spec"
        )
    names: dict[str, str] = {}
    if _is_set(flat):
        templates = _templates(flat, "spec.podGroupTemplates", POD_GROUP, 1, names, version)
    else:
        templates = _templates(nested, "spec.compositePodGroupTemplates", COMPOSITE, 1, names,
                               version)
        for top in templates:
            _check_one_priority(top)
    return WorkloadObject(_namespace(obj), name, templates, doc)


# -- PodGroup and CompositePodGroup ------------------------------------------------------


def _ref(value: object, field: str, template_key: str) -> WorkloadRef:
    ref = as_mapping(value, field)
    return WorkloadRef(
        workload_name=_name(ref, "workloadName", field, label=False),
        template_name=_name(ref, template_key, field, label=True),
        field=field,
        template_field=f"{field}.{template_key}",
    )


def parse_workload_ref(spec: Mapping[str, Any], kind: GroupKind, api_version: str = ""
                       ) -> WorkloadRef | None:
    """``spec.workloadRef`` {workloadName, templateName} (KEP-6012, the served API); a
    PodGroup may instead use ``spec.podGroupTemplateRef.workload`` {workloadName,
    podGroupTemplateName} as written in KEP-4671/5832, the only form of v1alpha2."""
    ref, legacy = spec.get("workloadRef"), spec.get("podGroupTemplateRef")
    if kind == COMPOSITE:
        legacy = None  # not a field of CompositePodGroup
    if api_version == V1ALPHA2:
        ref = None  # not a field of v1alpha2
    if ref is not None and legacy is not None:
        raise InputError("set workloadRef or podGroupTemplateRef, not both", field="spec")
    if ref is not None:
        return _ref(ref, "spec.workloadRef", "templateName")
    if legacy is None:
        return None
    holder = as_mapping(legacy, "spec.podGroupTemplateRef")
    if holder.get("workload") is None:
        raise InputError("is required", field="spec.podGroupTemplateRef.workload")
    return _ref(holder["workload"], "spec.podGroupTemplateRef.workload", "podGroupTemplateName")


def _parent(spec: Mapping[str, Any]) -> str | None:
    if spec.get("parentCompositePodGroupName") is None:
        return None
    return _name(spec, "parentCompositePodGroupName", "spec", label=False)


def parse_group(doc: Document, kind: GroupKind) -> GroupObject:
    """A runtime ``PodGroup`` or ``CompositePodGroup``. Its schedulingPolicy may be left
    out when the referenced template provides it (checked by the builder)."""
    obj = with_generated_name(doc)
    name = object_name(obj, kind)
    spec = as_mapping(obj.get("spec"), "spec")
    version = doc.api_version
    parent = None if version == V1ALPHA2 else _parent(spec)  # v1alpha2: no composites
    ref = parse_workload_ref(spec, kind, version)
    if ref is None and kind == COMPOSITE:
        raise InputError(
            "is required: a CompositePodGroup is always created from a Workload template "
            "(KEP-6012)",
            field="spec.workloadRef",
        )
    if ref is None and parent is not None:
        raise InputError(
            "is required when spec.parentCompositePodGroupName is set (KEP-6012)",
            field="spec.workloadRef",
        )
    settings = parse_settings(spec, "spec", kind, version)
    return GroupObject(kind, _namespace(obj), name, parent, ref, settings, doc)


# -- the v1alpha2 schema ------------------------------------------------------------------
# Kubernetes 1.36 (release-1.36 staging/src/k8s.io/api/scheduling/v1alpha2/types.go): not in
# the 1.37 schema gangsched is generated from, so written out here.

_A2 = "scheduling.v1alpha2"
_A2_GROUP_FIELDS: dict[str, schema.TypeExpr] = {
    "schedulingPolicy": f"{_A2}.PodGroupSchedulingPolicy",
    "schedulingConstraints": f"{_A2}.PodGroupSchedulingConstraints",
    "resourceClaims": {"list": f"{_A2}.PodGroupResourceClaim"}, "disruptionMode": "string",
    "priorityClassName": "string", "priority": "int32",
}
schema.define({
    f"{_A2}.Workload": {"apiVersion": "string", "kind": "string",
                        "metadata": "meta.v1.ObjectMeta", "spec": f"{_A2}.WorkloadSpec"},
    f"{_A2}.WorkloadSpec": {"controllerRef": f"{_A2}.TypedLocalObjectReference",
                            "podGroupTemplates": {"list": f"{_A2}.PodGroupTemplate"}},
    f"{_A2}.TypedLocalObjectReference": {"apiGroup": "string", "kind": "string",
                                         "name": "string"},
    f"{_A2}.PodGroupTemplate": {"name": "string", **_A2_GROUP_FIELDS},
    f"{_A2}.PodGroupSchedulingPolicy": {"basic": f"{_A2}.BasicSchedulingPolicy",
                                        "gang": f"{_A2}.GangSchedulingPolicy"},
    f"{_A2}.BasicSchedulingPolicy": {},
    f"{_A2}.GangSchedulingPolicy": {"minCount": "int32"},
    f"{_A2}.PodGroupSchedulingConstraints": {"topology": {"list": f"{_A2}.TopologyConstraint"}},
    f"{_A2}.TopologyConstraint": {"key": "string"},
    f"{_A2}.PodGroupResourceClaim": {"name": "string", "resourceClaimName": "string",
                                     "resourceClaimTemplateName": "string"},
    f"{_A2}.PodGroup": {"apiVersion": "string", "kind": "string",
                        "metadata": "meta.v1.ObjectMeta", "spec": f"{_A2}.PodGroupSpec",
                        "status": f"{_A2}.PodGroupStatus"},
    f"{_A2}.PodGroupSpec": {"podGroupTemplateRef": f"{_A2}.PodGroupTemplateReference",
                            **_A2_GROUP_FIELDS},
    f"{_A2}.PodGroupTemplateReference": {
        "workload": f"{_A2}.WorkloadPodGroupTemplateReference"},
    f"{_A2}.WorkloadPodGroupTemplateReference": {"workloadName": "string",
                                                 "podGroupTemplateName": "string"},
    f"{_A2}.PodGroupStatus": {"conditions": {"list": "meta.v1.Condition"},
                              "resourceClaimStatuses": {
                                  "list": f"{_A2}.PodGroupResourceClaimStatus"}},
    f"{_A2}.PodGroupResourceClaimStatus": {"name": "string", "resourceClaimName": "string"},
})
