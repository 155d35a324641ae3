"""Grove front-end: ``PodCliqueSet`` (``grove.io/v1alpha1``) resolved through its
``ClusterTopologyBinding`` (or the legacy ``ClusterTopology``), and the scheduler-side
``PodGang`` (``scheduler.grove.io/v1alpha1``).

Follows ai-dynamo/grove at fcc3b3b (2026-08): the types (``operator/api/core/v1alpha1/
podcliqueset.go``, ``podclique.go``, ``clustertopologybinding.go``; ``scheduler/api/core/
v1alpha1/podgang.go``), the names (``operator/api/common/namegen.go``, ``labels.go``), the
PodCliqueSet webhook's defaults and validation (``operator/internal/webhook/admission/pcs/
defaulting``, ``validation/podcliqueset.go``, ``validation/topologyconstraints.go``) and
how the operator turns a PodCliqueSet into PodGangs (``operator/internal/controller/
podcliqueset/components/podgang/syncflow.go``). Manifests of v0.1.0-alpha.4 to alpha.8
(``packDomain``, a ``ClusterTopology`` named ``grove-topology``) load too.

**PodCliqueSet.** For PCS replica ``r`` of ``spec.replicas`` (default **0**, the CRD's):

* the *base gang* ``<pcs>-<r>`` (``GenerateBasePodGangName``): every standalone clique
  ``c`` (PodClique ``<pcs>-<r>-<c>``) and, for every scaling group ``G``, its replicas
  ``j < minAvailable`` (default 1; each a Group ``<G>-<j>`` of its member cliques, PodCliques
  ``<pcs>-<r>-<G>-<j>-<c>``), all required;
* a *scaled gang* ``<pcs>-<r>-<G>-<k>`` for each replica ``j = minAvailable + k`` of ``G``
  up to its ``replicas`` (default 1): its own unit, as the operator makes it its own PodGang
  (its pods wait for the base gang upstream, a start order gangsched does not model).

Each PodClique is a PodSet of ``replicas`` identical pods of which ``minAvailable``
(default: ``replicas``) are needed. Constraints: the PCS's ``topologyConstraint`` on the
base gang's root, a scaling group's on each of its replicas (and on the root of its scaled
gangs; without one, the PCS's), a clique's on its PodSet: ``pack.required`` (or the
deprecated ``packDomain``) a required constraint, ``pack.preferred`` a preferred one, on
the node label ``key`` of that ``domain`` in the binding ``topologyName`` names (inherited:
a scaling group from the PCS, a clique from its scaling group if that has one, else from the
PCS; legacy manifests without a name use ``grove-topology``).

gangsched plays the operator, as for Kthena: the pods of PodClique ``<fqn>`` are named
``<fqn>-<xxxxx>`` (the operator's ``generateName``, made deterministic), labelled
``grove.io/podclique``, ``grove.io/podgang``, ``grove.io/podcliqueset-replica-index``,
``grove.io/podclique-pod-index``, ``app.kubernetes.io/managed-by: grove-operator``,
``app.kubernetes.io/part-of: <pcs>`` (members of a scaling group also
``grove.io/podcliquescalinggroup`` and its replica index; scaled ones
``grove.io/base-podgang``) plus the clique's labels and annotations. Pods of a PodClique
already in the inputs (by ``grove.io/podclique``) are used instead. A PodGang in the
inputs with the name of a gang the PodCliqueSet would make wins over it.

**PodGang.** One gang: a PodSet per ``podgroups[]`` entry (its ``podReferences``, or when
there are none yet, the pods labelled ``grove.io/podgang``/``grove.io/podclique`` with its
names) needing ``minReplicas`` pods; ``topologyConstraintGroupConfigs[]`` become Groups
over the podgroups they name; ``packConstraint.required`` / ``preferred`` are node label
keys already (the operator translated the domains), on the root, a group config or a
podgroup. A podgroup with fewer pods than ``minReplicas`` makes the gang wait.

**Validation** is the CRD's and the webhooks' (their words): at least one clique; clique
and scaling-group names DNS subdomains and unique; role names unique (a missing one is
accepted: Grove's own samples leave it out); ``replicas > 0``
(an explicit 0 defaults to 1), ``0 < minAvailable <= replicas`` for cliques and scaling
groups; a scaling group's cliques defined and in no other group; ``autoScalingConfig`` not
on a clique of a scaling group, ``minReplicas >= minAvailable``, ``maxReplicas`` at least
``minReplicas`` and ``replicas``; ``len(pcs) + len(group) + len(clique) <= 45``; one
``schedulerName`` for all cliques; no ``nodeName`` or ``topologySpreadConstraints``;
``startsAfter`` only with ``CliqueStartupTypeExplicit`` and naming known cliques without a
cycle; a ``topologyConstraint`` needs ``pack`` (with ``required`` or ``preferred``) or
``packDomain``, not ``packDomain`` with ``pack.required``, and a ``topologyName`` it can
inherit, the same for all. Checked against the binding (the workload is invalid
otherwise): the binding exists, every domain is one of its levels, and a child is never
looser than its parent (a clique's required domain narrower than or equal to its scaling
group's and the PCS's, the same for preferred). A PodGang's group configs name its
podgroups, ``minReplicas > 0``, no podgroup in two configs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gangsched.api import names, schema
from gangsched.api.errors import InputError
from gangsched.api.loader import Document, Inputs, Kind, with_generated_name
from gangsched.api.objects import (
    PodTemplate,
    about,
    as_int,
    as_list,
    as_mapping,
    as_str,
    mappings,
    object_name,
    one_of,
    parse_pod_template,
    required_str,
)
from gangsched.api.types import Pod
from gangsched.frontends.base import MAX_OBJECT_PODS, Contribution, Demand, FrontEnd
from gangsched.frontends.networktopology import Origin
from gangsched.frontends.pods import identical, natural_key, podset
from gangsched.gang import Constraint, Group, PodSet
from gangsched.model import Workload

API_VERSION = "grove.io/v1alpha1"
SCHEDULER_API_VERSION = "scheduler.grove.io/v1alpha1"
PCS = "PodCliqueSet"
BINDING = "ClusterTopologyBinding"
LEGACY_TOPOLOGY = "ClusterTopology"
LEGACY_TOPOLOGY_NAME = "grove-topology"  # the alpha.4-.8 operator's singleton
PODGANG = "PodGang"
LABEL_PODCLIQUE = "grove.io/podclique"
LABEL_PODGANG = "grove.io/podgang"
LABEL_BASE_PODGANG = "grove.io/base-podgang"
LABEL_PCS_REPLICA = "grove.io/podcliqueset-replica-index"
LABEL_PCSG = "grove.io/podcliquescalinggroup"
LABEL_PCSG_REPLICA = "grove.io/podcliquescalinggroup-replica-index"
LABEL_POD_INDEX = "grove.io/podclique-pod-index"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_PART_OF = "app.kubernetes.io/part-of"
STARTUP_TYPES = ("CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder",
                 "CliqueStartupTypeExplicit")
LEGACY_DOMAINS = ("region", "zone", "datacenter", "block", "rack", "host", "numa")
MAX_NAME_LENGTH = 45  # validatePodNameConstraints
MAX_PODS = MAX_OBJECT_PODS  # pods one PodCliqueSet may generate here
INT32_MAX = 2**31 - 1
_DOMAIN = re.compile(r"[a-z][a-z0-9-]*")
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"

# -- topology ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Binding:
    """A ClusterTopologyBinding (or legacy ClusterTopology): domains, broadest first."""

    name: str
    levels: tuple[tuple[str, str], ...]  # (domain, node label key)
    legacy: bool = False

    def key(self, domain: str) -> str | None:
        return next((k for d, k in self.levels if d == domain), None)

    def rank(self, domain: str) -> int | None:
        return next((i for i, (d, _) in enumerate(self.levels) if d == domain), None)


def _parse_binding(doc: Document) -> Binding:
    legacy = doc.kind == LEGACY_TOPOLOGY
    with about(f"{doc.kind}/{doc.name}"):
        spec = as_mapping(doc.obj.get("spec"), "spec")
        levels: list[tuple[str, str]] = []
        for item, path in mappings(spec.get("levels"), "spec.levels"):
            domain = required_str(item, "domain", path)
            key = required_str(item, "key", path)
            if legacy:
                one_of(domain, LEGACY_DOMAINS, f"{path}.domain")
            elif len(domain) > 63 or not _DOMAIN.fullmatch(domain):
                raise InputError(f"invalid domain {domain!r}: must match ^[a-z][a-z0-9-]*$ "
                                 "and be at most 63 characters", field=f"{path}.domain")
            problems = names.qualified_name(key)
            if problems or len(key) > 63:
                raise InputError(f"invalid node label key {key!r}: "
                                 f"{names.first(problems) if problems else 'too long'}",
                                 field=f"{path}.key")
            if any(d == domain for d, _ in levels):
                raise InputError(f"duplicate domain {domain!r}", field=f"{path}.domain")
            if any(k == key for _, k in levels):
                raise InputError(f"duplicate key {key!r}", field=f"{path}.key")
            levels.append((domain, key))
        if not levels:
            raise InputError("must list at least one level", field="spec.levels")
        if legacy:  # the operator sorted them by the enum's order
            levels.sort(key=lambda lv: LEGACY_DOMAINS.index(lv[0]))
        return Binding(doc.name, tuple(levels), legacy)


def _handle_binding(doc: Document, inputs: Inputs) -> None:
    binding = _parse_binding(doc)
    inputs.claim(doc, f"{doc.name} (topology)")
    inputs.add_object(doc, binding)


@dataclass(frozen=True)
class PackConstraint:
    """A PodCliqueSet ``topologyConstraint``: domains as written."""

    topology: str  # topologyName ("" when inherited)
    required: str = ""  # pack.required, else the deprecated packDomain
    preferred: str = ""
    field: str = ""
    deprecated: bool = False  # packDomain


def _pack(value: object, path: str, warnings: list[str]) -> PackConstraint | None:
    if value is None:
        return None
    obj = as_mapping(value, path)
    topology = as_str(obj.get("topologyName"), f"{path}.topologyName")
    domain = as_str(obj.get("packDomain"), f"{path}.packDomain")
    pack = obj.get("pack")
    if pack is None and not domain:
        raise InputError("topologyConstraint must specify pack or deprecated packDomain",
                         field=path)
    pack_obj = as_mapping(pack, f"{path}.pack")
    required = as_str(pack_obj.get("required"), f"{path}.pack.required")
    preferred = as_str(pack_obj.get("preferred"), f"{path}.pack.preferred")
    if pack is not None and not required and not preferred:
        raise InputError("pack must specify required or preferred", field=f"{path}.pack")
    if domain and required:
        raise InputError("packDomain and pack.required cannot both be set",
                         field=f"{path}.packDomain")
    if domain:
        warnings.append(f"{path}.packDomain is deprecated; use {path}.pack.required instead")
    return PackConstraint(topology, required or domain, preferred, path, bool(domain))


# -- PodCliqueSet ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Clique:
    name: str
    index: int
    template: PodTemplate
    replicas: int
    min_available: int
    topology: PackConstraint | None = None
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()

    @property
    def field(self) -> str:
        return f"spec.template.cliques[{self.index}]"


@dataclass(frozen=True)
class ScalingGroup:
    name: str
    index: int
    cliques: tuple[str, ...]
    replicas: int = 1
    min_available: int = 1
    topology: PackConstraint | None = None

    @property
    def field(self) -> str:
        return f"spec.template.podCliqueScalingGroups[{self.index}]"


def _total_pods(replicas: int, cliques: Sequence[Clique], groups: Sequence[ScalingGroup]
                ) -> int:
    """Every replica's cliques: those of a scaling group once per the group's replicas."""
    grouped = {c for g in groups for c in g.cliques}
    return replicas * (sum(c.replicas for c in cliques if c.name not in grouped) + sum(
        g.replicas * sum(c.replicas for c in cliques if c.name in g.cliques) for g in groups))


@dataclass(frozen=True)
class PodCliqueSet:
    name: str
    namespace: str
    cliques: tuple[Clique, ...]
    groups: tuple[ScalingGroup, ...] = ()
    replicas: int = 0
    topology: PackConstraint | None = None
    priority_class_name: str = ""
    origin: Origin = field(default_factory=Origin)
    warnings: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def group_of(self, clique: str) -> ScalingGroup | None:
        return next((g for g in self.groups if clique in g.cliques), None)

    @property
    def total_pods(self) -> int:
        """Pods the operator creates for this PodCliqueSet."""
        return _total_pods(self.replicas, self.cliques, self.groups)

    def clique(self, name: str) -> Clique:
        return next(c for c in self.cliques if c.name == name)


def _int32(obj: Mapping[str, Any], key: str, path: str, default: int | None) -> int | None:
    if obj.get(key) is None:
        return default
    value = as_int(obj.get(key), f"{path}.{key}")
    if not -(2**31) <= value <= INT32_MAX:
        raise InputError(f"must fit in 32 bits, not {value}", field=f"{path}.{key}")
    return value


def _subdomain(value: str, path: str, what: str) -> None:
    problems = names.dns1123_subdomain(value)
    if problems:
        raise InputError(f"invalid {what} {value!r}: {names.first(problems)}", field=path)


def _parse_clique(item: Mapping[str, Any], i: int, path: str, warnings: list[str]
                  ) -> tuple[Clique, Mapping[str, Any]]:
    name = required_str(item, "name", path)
    _subdomain(name, f"{path}.name", "clique name")
    spec_path = f"{path}.spec"
    spec = as_mapping(item.get("spec"), spec_path)
    if not spec:
        raise InputError("is required", field=spec_path)
    # roleName: the CRD lists it as required, yet Grove's own samples leave it out; it
    # plays no part in scheduling, so it is only checked for uniqueness
    as_str(spec.get("roleName"), f"{spec_path}.roleName")
    pod_spec = as_mapping(spec.get("podSpec"), f"{spec_path}.podSpec")
    if spec.get("podSpec") is None:
        raise InputError("is required", field=f"{spec_path}.podSpec")
    for forbidden in ("nodeName", "topologySpreadConstraints"):
        if pod_spec.get(forbidden):
            raise InputError("must not be set", field=f"{spec_path}.podSpec.{forbidden}")
    written = _int32(spec, "replicas", spec_path, 0)
    assert written is not None
    if written < 0:
        raise InputError(f"must be greater than 0, not {written}", field=f"{spec_path}.replicas")
    replicas = written or 1  # the webhook defaults 0 to 1
    minimum = _int32(spec, "minAvailable", spec_path, None)
    if minimum is None:
        minimum = written  # defaulted from replicas as written
    if minimum <= 0:
        raise InputError("must be greater than 0", field=f"{spec_path}.minAvailable")
    if minimum > replicas:
        raise InputError(f"minAvailable ({minimum}) must not be greater than replicas "
                         f"({replicas})", field=f"{spec_path}.minAvailable")
    labels = dict(as_mapping(item.get("labels"), f"{path}.labels"))
    annotations = dict(as_mapping(item.get("annotations"), f"{path}.annotations"))
    template = parse_pod_template({"metadata": {"labels": labels, "annotations": annotations},
                                   "spec": pod_spec}, spec_path)
    clique = Clique(name, i, template, replicas, minimum,
                    _pack(item.get("topologyConstraint"), f"{path}.topologyConstraint",
                          warnings),
                    tuple(sorted(labels.items())), tuple(sorted(annotations.items())))
    return clique, spec


def _autoscaling(spec: Mapping[str, Any], path: str, clique: Clique) -> None:
    conf = as_mapping(spec.get("autoScalingConfig"), path)
    least = _int32(conf, "minReplicas", path, clique.replicas)
    most = _int32(conf, "maxReplicas", path, None)
    assert least is not None
    if most is None:
        raise InputError("is required", field=f"{path}.maxReplicas")
    if least < clique.min_available:
        raise InputError(f"minReplicas ({least}) must be greater than or equal to "
                         f"minAvailable ({clique.min_available})", field=f"{path}.minReplicas")
    if most < least or most < clique.replicas:
        raise InputError(f"maxReplicas ({most}) must be greater than or equal to minReplicas "
                         f"and replicas", field=f"{path}.maxReplicas")


def _startup(template: Mapping[str, Any], cliques: Sequence[Clique],
             specs: Sequence[Mapping[str, Any]]) -> None:
    kind = as_str(template.get("cliqueStartupType"), "spec.template.cliqueStartupType") or (
        "CliqueStartupTypeAnyOrder")
    one_of(kind, STARTUP_TYPES, "spec.template.cliqueStartupType")
    if kind != "CliqueStartupTypeExplicit":
        return
    known = {c.name for c in cliques}
    after: dict[str, list[str]] = {}
    for clique, spec in zip(cliques, specs, strict=True):
        path = f"{clique.field}.spec.startsAfter"
        deps = [as_str(x, f"{path}[{i}]") for i, x in enumerate(as_list(spec.get("startsAfter"),
                                                                           path))]
        for dep in deps:
            if dep == clique.name or dep not in known:
                raise InputError(f"startsAfter names {dep!r}: must be another clique of the "
                                 "PodCliqueSet", field=path)
        if len(set(deps)) != len(deps):
            raise InputError("must not repeat a clique", field=path)
        after[clique.name] = deps
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        state[name] = 1
        for dep in after.get(name, []):
            if state.get(dep) == 1:
                clique = next(c for c in cliques if c.name == name)
                raise InputError("cliques' startsAfter form a cycle",
                                 field=f"{clique.field}.spec.startsAfter")
            if dep not in state:
                visit(dep)
        state[name] = 2

    for c in cliques:
        if c.name not in state:
            visit(c.name)


def _parse_groups(value: object, cliques: Sequence[Clique], pcs: str, warnings: list[str]
                  ) -> tuple[ScalingGroup, ...]:
    out: list[ScalingGroup] = []
    owner: dict[str, str] = {}
    for i, (item, path) in enumerate(mappings(value, "spec.template.podCliqueScalingGroups")):
        name = required_str(item, "name", path)
        _subdomain(name, f"{path}.name", "scaling group name")
        if any(g.name == name for g in out):
            raise InputError(f"duplicate scaling group name {name!r}", field=f"{path}.name")
        members = [as_str(x, f"{path}.cliqueNames[{j}]")
                   for j, x in enumerate(as_list(item.get("cliqueNames"), f"{path}.cliqueNames"))]
        if not members:
            raise InputError("is required", field=f"{path}.cliqueNames")
        for j, clique in enumerate(members):
            where = f"{path}.cliqueNames[{j}]"
            if not any(c.name == clique for c in cliques):
                raise InputError(f"clique {clique!r} is not defined in spec.template.cliques",
                                 field=where)
            if clique in owner:
                raise InputError(f"clique {clique!r} is already in scaling group "
                                 f"{owner[clique]!r}", field=where)
            owner[clique] = name
            if len(pcs) + len(name) + len(clique) > MAX_NAME_LENGTH:
                raise InputError(f"combined length of PodCliqueSet name, scaling group name "
                                 f"and clique name ({pcs}, {name}, {clique}) must not exceed "
                                 f"{MAX_NAME_LENGTH}", field=where)
        replicas = _int32(item, "replicas", path, 1)
        minimum = _int32(item, "minAvailable", path, 1)
        assert replicas is not None and minimum is not None
        if replicas <= 0:
            raise InputError("must be greater than 0", field=f"{path}.replicas")
        if minimum <= 0:
            raise InputError("must be greater than 0", field=f"{path}.minAvailable")
        if minimum > replicas:
            raise InputError(f"minAvailable ({minimum}) must not be greater than replicas "
                             f"({replicas})", field=f"{path}.minAvailable")
        scale = as_mapping(item.get("scaleConfig"), f"{path}.scaleConfig")
        least = _int32(scale, "minReplicas", f"{path}.scaleConfig", None)
        if least is not None and least < minimum:
            raise InputError(f"minReplicas ({least}) must be greater than or equal to "
                             f"minAvailable ({minimum})", field=f"{path}.scaleConfig.minReplicas")
        out.append(ScalingGroup(name, i, tuple(members), replicas, minimum,
                                _pack(item.get("topologyConstraint"), f"{path}.topologyConstraint",
                                      warnings)))
    return tuple(out)


def _topology_names(pcs: PodCliqueSet) -> None:
    """``topologyName`` given or inherited everywhere, and the same for all."""
    seen: dict[str, str] = {}
    legacy = any(p.deprecated for p in _packs(pcs))
    for node, parent in _inherits(pcs):
        effective = node.topology or parent or (LEGACY_TOPOLOGY_NAME if legacy else "")
        if not effective:
            raise InputError("topologyName is required when topologyConstraint is set and "
                             "cannot be inherited", field=f"{node.field}.topologyName")
        seen.setdefault(effective, node.field)
    if len(seen) > 1:
        first, second = list(seen)[:2]
        raise InputError(f"all topologyConstraints must name the same topology; {first!r} "
                         f"and {second!r} differ", field=f"{seen[second]}.topologyName")


def _packs(pcs: PodCliqueSet) -> list[PackConstraint]:
    found = [pcs.topology, *(g.topology for g in pcs.groups), *(c.topology for c in pcs.cliques)]
    return [p for p in found if p is not None]


def _inherits(pcs: PodCliqueSet) -> list[tuple[PackConstraint, str]]:
    """Each constraint with the topologyName it would inherit."""
    top = pcs.topology.topology if pcs.topology else ""
    out: list[tuple[PackConstraint, str]] = []
    if pcs.topology:
        out.append((pcs.topology, ""))
    for g in pcs.groups:
        if g.topology:
            out.append((g.topology, top))
    for c in pcs.cliques:
        if c.topology:
            group = pcs.group_of(c.name)
            above = group.topology.topology if group and group.topology else ""
            out.append((c.topology, above or top))
    return out


def parse_pcs(obj: Mapping[str, Any], origin: Origin | None = None) -> PodCliqueSet:
    """A PodCliqueSet, defaulted and checked as Grove's CRD and webhook do."""
    name = object_name(obj, PCS)
    with about(f"{PCS}/{name}"):
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        replicas = _int32(spec, "replicas", "spec", 0)
        assert replicas is not None
        if replicas < 0:
            raise InputError("must be greater than or equal to 0", field="spec.replicas")
        template = as_mapping(spec.get("template"), "spec.template")
        if spec.get("template") is None:
            raise InputError("is required", field="spec.template")
        warnings: list[str] = []
        cliques: list[Clique] = []
        specs: list[Mapping[str, Any]] = []
        for i, (item, path) in enumerate(mappings(template.get("cliques"),
                                                  "spec.template.cliques")):
            clique, cspec = _parse_clique(item, i, path, warnings)
            if any(c.name == clique.name for c in cliques):
                raise InputError(f"duplicate clique name {clique.name!r}", field=f"{path}.name")
            if cspec.get("roleName") and any(s.get("roleName") == cspec.get("roleName")
                                             for s in specs):
                raise InputError(f"duplicate roleName {cspec.get('roleName')!r}",
                                 field=f"{path}.spec.roleName")
            cliques.append(clique)
            specs.append(cspec)
        if not cliques:
            raise InputError("at least one PodClique must be defined",
                             field="spec.template.cliques")
        groups = _parse_groups(template.get("podCliqueScalingGroups"), cliques, name, warnings)
        grouped = {c for g in groups for c in g.cliques}
        schedulers = set()
        for clique, cspec in zip(cliques, specs, strict=True):
            if cspec.get("autoScalingConfig") is not None:
                where = f"{clique.field}.spec.autoScalingConfig"
                if clique.name in grouped:
                    raise InputError("autoScalingConfig is not allowed for a clique that is "
                                     "part of a scaling group", field=where)
                _autoscaling(cspec, where, clique)
            if clique.name not in grouped and len(name) + len(clique.name) > MAX_NAME_LENGTH:
                raise InputError(f"combined length of PodCliqueSet name and clique name must "
                                 f"not exceed {MAX_NAME_LENGTH}", field=f"{clique.field}.name")
            schedulers.add(clique.template.scheduler_name)
        if len(schedulers) > 1:
            raise InputError("all cliques must use the same schedulerName, got "
                             f"{sorted(schedulers)}", field="spec.template.cliques")
        _startup(template, cliques, specs)
        total = _total_pods(replicas, cliques, groups)
        if total > MAX_PODS:
            raise InputError(f"would create {total:,} pods; gangsched reads at most {MAX_PODS:,}"
                             " per PodCliqueSet", field="spec.replicas")
        pcs = PodCliqueSet(
            name=name,
            namespace=as_str(meta.get("namespace"), "metadata.namespace") or "default",
            cliques=tuple(cliques), groups=groups, replicas=replicas,
            topology=_pack(template.get("topologyConstraint"),
                           "spec.template.topologyConstraint", warnings),
            priority_class_name=as_str(template.get("priorityClassName"),
                                       "spec.template.priorityClassName"),
            origin=origin or Origin(obj=f"{PCS}/{name}"),
        )
        _topology_names(pcs)
        where = f"{pcs.origin.where} {PCS}/{name}".strip()
        return replace(pcs, warnings=tuple(f"{where}: {w}" for w in warnings))


def _handle_pcs(doc: Document, inputs: Inputs) -> None:
    pcs = parse_pcs(with_generated_name(doc), Origin.of(doc))
    inputs.claim(doc, pcs.key)
    inputs.add_object(doc, pcs)
    inputs.warnings.extend(pcs.warnings)


# -- PodGang ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GangGroup:
    name: str
    pods: tuple[str, ...]  # pod keys
    min_replicas: int
    topology: tuple[Constraint, ...] = ()


@dataclass(frozen=True)
class GroupConfig:
    name: str
    podgroups: tuple[str, ...]
    topology: tuple[Constraint, ...] = ()


@dataclass(frozen=True)
class PodGang:
    name: str
    namespace: str
    groups: tuple[GangGroup, ...]
    configs: tuple[GroupConfig, ...] = ()
    topology: tuple[Constraint, ...] = ()
    priority_class_name: str = ""
    origin: Origin = field(default_factory=Origin)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _keys(value: object, path: str) -> tuple[Constraint, ...]:
    """A PodGang ``topologyConstraint``: ``packConstraint`` of node label keys."""
    obj = as_mapping(value, path)
    pack = as_mapping(obj.get("packConstraint"), f"{path}.packConstraint")
    out: list[Constraint] = []
    for attr in ("required", "preferred"):
        key = as_str(pack.get(attr), f"{path}.packConstraint.{attr}")
        if key:
            problems = names.qualified_name(key)
            if problems:
                raise InputError(f"invalid node label key {key!r}: {names.first(problems)}",
                                 field=f"{path}.packConstraint.{attr}")
            out.append(Constraint(key, "required" if attr == "required" else "preferred"))
    return tuple(out)


def parse_podgang(obj: Mapping[str, Any], origin: Origin | None = None) -> PodGang:
    name = object_name(obj, PODGANG)
    with about(f"{PODGANG}/{name}"):
        meta = as_mapping(obj.get("metadata"), "metadata")
        namespace = as_str(meta.get("namespace"), "metadata.namespace") or "default"
        spec = as_mapping(obj.get("spec"), "spec")
        groups: list[GangGroup] = []
        referenced: dict[str, str] = {}  # pod -> the podgroup listing it
        if spec.get("podgroups") is None:
            raise InputError("is required", field="spec.podgroups")
        for item, path in mappings(spec.get("podgroups"), "spec.podgroups"):
            gname = required_str(item, "name", path)
            if any(g.name == gname for g in groups):
                raise InputError(f"duplicate podgroup name {gname!r}", field=f"{path}.name")
            refs: list[str] = []
            for ref, rpath in mappings(item.get("podReferences"), f"{path}.podReferences"):
                ns = required_str(ref, "namespace", rpath)
                if ns != namespace:
                    raise InputError(f"pod reference in namespace {ns!r}, not the PodGang's "
                                     f"{namespace!r}", field=f"{rpath}.namespace")
                pod = f"{ns}/{required_str(ref, 'name', rpath)}"
                if pod in referenced:  # a pod belongs to one podgroup, once
                    raise InputError(f"pod {pod} is already referenced by podgroup "
                                     f"{referenced[pod]!r}", field=f"{rpath}.name")
                referenced[pod] = gname
                refs.append(pod)
            minimum = _int32(item, "minReplicas", path, None)
            if minimum is None:
                raise InputError("is required", field=f"{path}.minReplicas")
            if minimum <= 0:
                raise InputError(f"minReplicas must be greater than 0, not {minimum}",
                                 field=f"{path}.minReplicas")
            groups.append(GangGroup(gname, tuple(refs), minimum,
                                    _keys(item.get("topologyConstraint"),
                                          f"{path}.topologyConstraint")))
        configs: list[GroupConfig] = []
        used: dict[str, str] = {}
        for item, path in mappings(spec.get("topologyConstraintGroupConfigs"),
                                   "spec.topologyConstraintGroupConfigs"):
            cname = required_str(item, "name", path)
            members = [as_str(x, f"{path}.podGroupNames[{j}]") for j, x in
                       enumerate(as_list(item.get("podGroupNames"), f"{path}.podGroupNames"))]
            for j, member in enumerate(members):
                where = f"{path}.podGroupNames[{j}]"
                if not any(g.name == member for g in groups):
                    raise InputError(f"podgroup {member!r} is not in spec.podgroups", field=where)
                if member in used:
                    raise InputError(f"podgroup {member!r} is already in group config "
                                     f"{used[member]!r}", field=where)
                used[member] = cname
            configs.append(GroupConfig(cname, tuple(members),
                                       _keys(item.get("topologyConstraint"),
                                             f"{path}.topologyConstraint")))
        return PodGang(name, namespace, tuple(groups), tuple(configs),
                       _keys(spec.get("topologyConstraint"), "spec.topologyConstraint"),
                       as_str(spec.get("priorityClassName"), "spec.priorityClassName"),
                       origin or Origin(obj=f"{PODGANG}/{name}"))


def _handle_podgang(doc: Document, inputs: Inputs) -> None:
    gang = parse_podgang(with_generated_name(doc), Origin.of(doc))
    inputs.claim(doc, f"{gang.key} (scheduler.grove.io)")
    inputs.add_object(doc, gang)


# Known fields (operator/api/core/v1alpha1/crds/*.yaml and scheduler/api/core/v1alpha1/crds/
# scheduler.grove.io_podgangs.yaml at fcc3b3b); fields gangsched does not read are open.
schema.define({
    "grove.PodCliqueSet": {"apiVersion": "string", "kind": "string",
                           "metadata": "meta.v1.ObjectMeta", "spec": "grove.PCSSpec",
                           "status": "any"},
    "grove.PCSSpec": {"replicas": "int32", "updateStrategy": "any",
                      "template": "grove.PCSTemplate"},
    "grove.PCSTemplate": {"cliques": {"list": "grove.CliqueTemplate"},
                          "cliqueStartupType": "string", "priorityClassName": "string",
                          "headlessServiceConfig": "any",
                          "topologyConstraint": "grove.TopologyConstraint",
                          "terminationDelay": "string", "resourceClaimTemplates": "any",
                          "resourceSharing": "any",
                          "podCliqueScalingGroups": {"list": "grove.ScalingGroup"}},
    "grove.CliqueTemplate": {"name": "string", "labels": "labels",
                             "annotations": "annotations",
                             "topologyConstraint": "grove.TopologyConstraint",
                             "resourceSharing": "any", "spec": "grove.CliqueSpec"},
    "grove.CliqueSpec": {"roleName": "string", "podSpec": "core.v1.PodSpec",
                         "replicas": "int32", "minAvailable": "int32",
                         "startsAfter": {"list": "string"}, "autoScalingConfig": "any"},
    "grove.ScalingGroup": {"name": "string", "cliqueNames": {"list": "string"},
                           "annotations": "annotations", "replicas": "int32",
                           "minAvailable": "int32", "scaleConfig": "any",
                           "resourceSharing": "any",
                           "topologyConstraint": "grove.TopologyConstraint"},
    "grove.TopologyConstraint": {"topologyName": "string", "pack": "grove.Pack",
                                 "packDomain": "string"},
    "grove.Pack": {"required": "string", "preferred": "string"},
    "grove.ClusterTopologyBinding": {"apiVersion": "string", "kind": "string",
                                     "metadata": "meta.v1.ObjectMeta",
                                     "spec": "grove.BindingSpec", "status": "any"},
    # schedulerTopologyReferences: its name before #616 (v0.1.0-alpha.9), still in the docs
    "grove.BindingSpec": {"levels": {"list": "grove.TopologyLevel"},
                          "schedulerTopologyBindings": "any",
                          "schedulerTopologyReferences": "any"},
    "grove.TopologyLevel": {"domain": "string", "key": "string"},
    "grove.PodGang": {"apiVersion": "string", "kind": "string",
                      "metadata": "meta.v1.ObjectMeta", "spec": "grove.PodGangSpec",
                      "status": "any"},
    "grove.PodGangSpec": {"podgroups": {"list": "grove.PodGroup"},
                          "topologyConstraint": "grove.GangTopology",
                          "topologyConstraintGroupConfigs": {"list": "grove.GroupConfig"},
                          "priorityClassName": "string", "reuseReservationRef": "any"},
    "grove.PodGroup": {"name": "string", "podReferences": {"list": "grove.NamespacedName"},
                       "minReplicas": "int32", "topologyConstraint": "grove.GangTopology"},
    "grove.NamespacedName": {"namespace": "string", "name": "string"},
    "grove.GangTopology": {"packConstraint": "grove.Pack"},
    "grove.GroupConfig": {"name": "string", "podGroupNames": {"list": "string"},
                          "topologyConstraint": "grove.GangTopology"},
})


# -- translation: what the operator creates ---------------------------------------------------


class _Resolver:
    """A PodCliqueSet's constraints as node label keys, through its binding; checks the
    hierarchy (a child never looser than its parent)."""

    def __init__(self, pcs: PodCliqueSet, bindings: Mapping[str, Binding]) -> None:
        self.pcs = pcs
        self.binding: Binding | None = None
        packs = _packs(pcs)
        if not packs:
            return
        name = next((t for p, parent in _inherits(pcs) if (t := p.topology or parent)),
                    LEGACY_TOPOLOGY_NAME)
        binding = bindings.get(name)
        if binding is None:
            where = next((p for p in packs if p.topology), packs[0])
            known = ", ".join(sorted(bindings)) or "none in the inputs"
            raise InputError(f"cluster topology {name!r} not found (a {BINDING}, or the legacy "
                             f"{LEGACY_TOPOLOGY}; known: {known})",
                             field=f"{where.field}.topologyName")
        self.binding = binding
        for p in packs:
            for attr, value in (("required", p.required), ("preferred", p.preferred)):
                if value and binding.key(value) is None:
                    domains = ", ".join(d for d, _ in binding.levels)
                    at = "packDomain" if attr == "required" and p.deprecated else f"pack.{attr}"
                    raise InputError(f"topology domain '{value}' does not exist in cluster "
                                     f"topology {binding.name} (domains: {domains})",
                                     field=f"{p.field}.{at}")
        self._hierarchy()

    def constraints(self, p: PackConstraint | None) -> tuple[Constraint, ...]:
        if p is None or self.binding is None:
            return ()
        out = []
        if p.required:
            out.append(Constraint(self.binding.key(p.required) or p.required, "required"))
        if p.preferred:
            out.append(Constraint(self.binding.key(p.preferred) or p.preferred, "preferred"))
        return tuple(out)

    def _narrower(self, child: str, parent: str) -> bool:
        """Whether domain ``parent`` is narrower than ``child`` (the child looser)."""
        assert self.binding is not None
        c, p = self.binding.rank(child), self.binding.rank(parent)
        return c is not None and p is not None and p > c

    def _check(self, child: PackConstraint | None, parent: PackConstraint | None,
               parent_kind: str) -> None:
        if child is None or parent is None:
            return
        for attr in ("required", "preferred"):
            mine, theirs = getattr(child, attr), getattr(parent, attr)
            if mine and theirs and self._narrower(mine, theirs):
                at = "packDomain" if attr == "required" and child.deprecated else f"pack.{attr}"
                raise InputError(f"topology constraint domain '{mine}' is looser than "
                                 f"{parent_kind} topology constraint domain '{theirs}': a child "
                                 "must be the same as or narrower than its parent",
                                 field=f"{child.field}.{at}")

    def _hierarchy(self) -> None:
        pcs = self.pcs
        for g in pcs.groups:
            self._check(g.topology, pcs.topology, "PodCliqueSet")
        for c in pcs.cliques:
            group = pcs.group_of(c.name)
            if group is not None:
                self._check(c.topology, group.topology, f"PodCliqueScalingGroup '{group.name}'")
            self._check(c.topology, pcs.topology, "PodCliqueSet")


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_SUFFIX[b % len(_SUFFIX)] for b in digest[:5])


def clique_pods(pcs: PodCliqueSet, clique: Clique, fqn: str, labels: Mapping[str, str],
                existing: Sequence[Pod]) -> tuple[list[Pod], list[Pod]]:
    """(the PodClique's pods, those created here): ``existing`` ones first."""
    mine = sorted((p for p in existing if p.labels.get(LABEL_PODCLIQUE) == fqn
                   and p.namespace == pcs.namespace), key=lambda p: natural_key(p.name))
    taken = {p.labels.get(LABEL_POD_INDEX) for p in mine}
    created: list[Pod] = []
    index = 0
    while len(mine) + len(created) < clique.replicas:
        if str(index) not in taken:
            pod_labels = {**clique.template.labels, **labels, LABEL_PODCLIQUE: fqn,
                          LABEL_POD_INDEX: str(index), LABEL_MANAGED_BY: "grove-operator",
                          LABEL_PART_OF: pcs.name}
            name = f"{fqn}-{_suffix(f'{pcs.namespace}/{fqn}/{index}')}"
            created.append(clique.template.make_pod(name, pcs.namespace, labels=pod_labels))
        index += 1
    return [*mine, *created], created


def _clique_set(pcs: PodCliqueSet, clique: Clique, path: str, pods: Sequence[Pod],
                resolver: _Resolver) -> PodSet | Group | None:
    """A PodClique: its pending pods, ``minAvailable`` of all needed (running ones count)."""
    pending = [p for p in pods if not p.node_name]
    need = max(0, clique.min_available - (len(pods) - len(pending)))
    if not pending:
        return None
    topo = resolver.constraints(clique.topology)
    sets = identical(pending)
    if len(sets) == 1:
        ps = podset(clique.name, path.rsplit("/", 1)[0], pending, need)
        ps.topology = topo
        return ps
    every = need >= len(pending)
    kids: list[Group | PodSet] = [podset(f"pods-{i}", path, m, len(m) if every else 0)
                                  for i, m in enumerate(sets)]
    return Group(clique.name, path, kids, min_groups=len(kids), min_pods=need, topology=topo)


@dataclass
class _Gang:
    name: str  # the PodGang's
    root: Group
    pods: list[Pod]


def pcs_gangs(pcs: PodCliqueSet, bindings: Mapping[str, Binding], existing: Sequence[Pod]
              ) -> tuple[list[_Gang], list[Pod]]:
    """The gangs (PodGangs) of a PodCliqueSet, each base gang before its scaled ones, and
    the pods created for them."""
    resolver = _Resolver(pcs, bindings)
    gangs: list[_Gang] = []
    created: list[Pod] = []
    ns = pcs.namespace

    def add(clique: Clique, fqn: str, path: str, labels: Mapping[str, str],
            into: list[Group | PodSet], pods_into: list[Pod]) -> None:
        pods, made = clique_pods(pcs, clique, fqn, labels, existing)
        created.extend(made)
        pods_into.extend(pods)
        node = _clique_set(pcs, clique, path, pods, resolver)
        if node is not None:
            into.append(node)

    for r in range(pcs.replicas):
        base = f"{pcs.name}-{r}"
        base_path = f"{ns}/{base}"
        kids: list[Group | PodSet] = []
        base_pods: list[Pod] = []
        scaled_gangs: list[_Gang] = []
        for clique in pcs.cliques:
            if pcs.group_of(clique.name) is None:
                labels = {LABEL_PODGANG: base, LABEL_PCS_REPLICA: str(r)}
                add(clique, f"{base}-{clique.name}", f"{base_path}/{clique.name}", labels,
                    kids, base_pods)
        for g in pcs.groups:
            group_fqn = f"{base}-{g.name}"
            topo = resolver.constraints(g.topology)
            for j in range(g.replicas):
                scaled = j >= g.min_available
                gang = f"{group_fqn}-{j - g.min_available}" if scaled else base
                labels = {LABEL_PODGANG: gang, LABEL_PCS_REPLICA: str(r),
                          LABEL_PCSG: group_fqn, LABEL_PCSG_REPLICA: str(j)}
                if scaled:
                    labels[LABEL_BASE_PODGANG] = base
                members: list[Group | PodSet] = []
                gang_pods: list[Pod] = []
                path = f"{ns}/{gang}" if scaled else f"{base_path}/{g.name}-{j}"
                for name in g.cliques:
                    add(pcs.clique(name), f"{group_fqn}-{j}-{name}", f"{path}/{name}",
                        labels, members, gang_pods)
                if not scaled:
                    base_pods.extend(gang_pods)
                    if members:
                        kids.append(Group(f"{g.name}-{j}", path, members,
                                          min_groups=len(members), topology=topo))
                elif members:  # its own PodGang: the group's constraint, else the PCS's
                    top = topo or resolver.constraints(pcs.topology)
                    scaled_gangs.append(_Gang(gang, Group(
                        gang, path, members, min_groups=len(members), topology=top, kind=PCS,
                        source=pcs.key), gang_pods))
        if kids:
            gangs.append(_Gang(base, Group(base, base_path, kids, min_groups=len(kids),
                                           topology=resolver.constraints(pcs.topology),
                                           kind=PCS, source=pcs.key), base_pods))
        gangs.extend(scaled_gangs)
    return gangs, created


def podgang_tree(gang: PodGang, pods: Mapping[str, Pod]) -> tuple[Group | None, str]:
    """A PodGang's tree over its pods, or (None, why it waits)."""
    root_path = gang.key
    by_group: dict[str, list[Pod]] = {}
    for g in gang.groups:
        if g.pods:
            members = [pods[k] for k in g.pods if k in pods]
        else:  # not referenced yet: the operator's labels say which pods
            members = [p for p in pods.values() if p.namespace == gang.namespace
                       and p.labels.get(LABEL_PODGANG) == gang.name
                       and p.labels.get(LABEL_PODCLIQUE) == g.name]
        by_group[g.name] = sorted(members, key=lambda p: natural_key(p.name))
    short = [f"podgroup {g.name} has {len(by_group[g.name])} of minReplicas {g.min_replicas}"
             for g in gang.groups if len(by_group[g.name]) < g.min_replicas]
    if short:
        return None, "waiting for pods: " + "; ".join(short)

    def node(g: GangGroup, parent: str) -> Group | PodSet | None:
        members = by_group[g.name]
        pending = [p for p in members if not p.node_name]
        need = max(0, g.min_replicas - (len(members) - len(pending)))
        if not pending:
            return None
        sets = identical(pending)
        path = f"{parent}/{g.name}"
        if len(sets) == 1:
            ps = podset(g.name, parent, pending, need)
            ps.topology = g.topology
            return ps
        every = need >= len(pending)
        kids: list[Group | PodSet] = [podset(f"pods-{i}", path, m, len(m) if every else 0)
                                      for i, m in enumerate(sets)]
        return Group(g.name, path, kids, min_groups=len(kids), min_pods=need,
                     topology=g.topology)

    in_config = {m for c in gang.configs for m in c.podgroups}
    kids: list[Group | PodSet] = []
    for c in gang.configs:
        path = f"{root_path}/{c.name}"
        inner = [n for g in gang.groups if g.name in c.podgroups
                 if (n := node(g, path)) is not None]
        if inner:
            kids.append(Group(c.name, path, inner, min_groups=len(inner), topology=c.topology))
    kids.extend(n for g in gang.groups if g.name not in in_config
                if (n := node(g, root_path)) is not None)
    if not kids:
        return None, "no pending pods"
    return Group(gang.name, root_path, kids, min_groups=len(kids), topology=gang.topology,
                 kind=PODGANG, source=gang.key), ""


# -- the builder ------------------------------------------------------------------------------


def _objects(inputs: Inputs, kind: str, cls: type) -> list[Any]:
    return [o for o in inputs.objects.get(kind, []) if isinstance(o, cls)]


def build(inputs: Inputs) -> Contribution:
    out = Contribution()
    bindings: dict[str, Binding] = {}
    for b in [*_objects(inputs, LEGACY_TOPOLOGY, Binding), *_objects(inputs, BINDING, Binding)]:
        bindings[b.name] = b  # a ClusterTopologyBinding wins over a legacy ClusterTopology
    podgangs: list[PodGang] = _objects(inputs, PODGANG, PodGang)
    gang_names = {g.key for g in podgangs}
    pods_now = list(inputs.pods)
    for pcs in _objects(inputs, PCS, PodCliqueSet):
        try:
            gangs, created = pcs_gangs(pcs, bindings, pods_now)
        except InputError as err:
            out.workloads.append(Workload(pcs.key, PCS, None, invalid=str(pcs.origin.locate(err))))
            continue
        out.pods.extend(created)
        pods_now.extend(created)
        for gang in gangs:
            key = f"{pcs.namespace}/{gang.name}"
            if key in gang_names:
                continue  # the PodGang in the inputs says it
            priority = max((p.priority for p in gang.pods), default=0)
            gang.root.priority = priority
            out.workloads.append(Workload(key, PCS, gang.root,
                                          {p.key: p for p in gang.pods if not p.node_name},
                                          priority=priority, source=pcs.origin.where))
            out.claimed.update(p.key for p in gang.pods)
    by_key = {p.key: p for p in pods_now}
    for pg in podgangs:
        tree, why = podgang_tree(pg, by_key)
        members = [k for g in pg.groups for k in g.pods] + [
            p.key for p in pods_now if p.namespace == pg.namespace
            and p.labels.get(LABEL_PODGANG) == pg.name]
        out.claimed.update(k for k in members if k in by_key)
        if tree is None:
            out.workloads.append(Workload(pg.key, PODGANG, None, waiting=why,
                                          source=pg.origin.where))
            continue
        keys = {k for ps in _sets_of(tree) for k in ps.pods}
        priority = max((by_key[k].priority for k in keys), default=0)
        tree.priority = priority
        out.workloads.append(Workload(pg.key, PODGANG, tree,
                                      {k: by_key[k] for k in keys}, priority=priority,
                                      source=pg.origin.where))
    return out


def demands(inputs: Inputs) -> Iterable[Demand]:
    """The pods every PodCliqueSet asks for."""
    for pcs in _objects(inputs, PCS, PodCliqueSet):
        yield Demand(pcs.origin, "spec.replicas", pcs.total_pods)


def _sets_of(node: Group | PodSet) -> list[PodSet]:
    if isinstance(node, PodSet):
        return [node]
    return [ps for c in node.children for ps in _sets_of(c)]


FRONT_END = FrontEnd(
    "grove",
    (Kind(PCS, (API_VERSION,), _handle_pcs, schema="grove.PodCliqueSet"),
     Kind(BINDING, (API_VERSION,), _handle_binding, schema="grove.ClusterTopologyBinding"),
     Kind(LEGACY_TOPOLOGY, (API_VERSION,), _handle_binding,
          schema="grove.ClusterTopologyBinding"),
     Kind(PODGANG, (SCHEDULER_API_VERSION,), _handle_podgang, schema="grove.PodGang")),
    build,
    demands,
)

__all__ = [
    "API_VERSION",
    "FRONT_END",
    "SCHEDULER_API_VERSION",
    "Binding",
    "PodCliqueSet",
    "PodGang",
    "build",
    "parse_pcs",
    "parse_podgang",
    "pcs_gangs",
    "podgang_tree",
]
