"""Kueue's queues: ``ResourceFlavor``, ``ClusterQueue`` and ``LocalQueue``
(``kueue.x-k8s.io`` v1beta1 and v1beta2), and the flavors a Kueue-managed workload gets
from them.

Follows kubernetes-sigs/kueue at ff69552 (v0.19.2): the types (``apis/kueue/v1beta2/
{resourceflavor,clusterqueue,localqueue}_types.go``; v1beta1 names the cohort ``cohort``,
v1beta2 ``cohortName``), their CRD and webhook validation, and the flavor assigner
(``pkg/scheduler/flavorassigner``: ``findFlavorForPodSets``, ``checkFlavorForPodSets``,
``checkPodSetAndFlavorMatchForTAS``, ``flavorSelector``, ``fitsResourceQuota``).

**Which workloads.** When the inputs hold none of these objects, a Kueue-managed workload
(the ``kueue.x-k8s.io/queue-name`` label) is placed as before: on every node, its
topology levels checked against all the Kueue Topologies. Once one of them is read,
Kueue's chain is followed: the LocalQueue the label names in the workload's namespace,
its ClusterQueue, that queue's flavors. A workload whose LocalQueue or ClusterQueue is
missing or stopped, whose ClusterQueue names a missing ResourceFlavor (or a TAS flavor's
missing Topology), or whose namespace the ClusterQueue's ``namespaceSelector`` leaves out
(null selects no namespace, ``{}`` every one) waits, with Kueue's message.

**Flavors.** For each PodSet (PodSets sharing a ``podset-group-name`` together), for each
resource it requests (``pods`` too when a resource group covers it; a resource no group
covers and a request above zero make it wait: "resource X unavailable in ClusterQueue"),
the resource group covering it is searched in order for the first flavor that:

* matches TAS: a PodSet with a topology request needs a flavor with a ``topologyName``
  whose Topology has every level it names; a PodSet without one cannot use a TAS flavor
  unless every flavor of the ClusterQueue is one;
* has no ``NoSchedule``/``NoExecute`` ``nodeTaints`` the pods and the flavor's own
  ``tolerations`` leave untolerated;
* is matched by the pods' ``nodeSelector`` and required node affinity, read only on the
  flavor's ``nodeLabels`` keys (a term naming none of them matches every flavor);
* can hold the request in quota: the PodSet's pods times their request, plus what
  earlier PodSets took of the flavor, at most the ClusterQueue's ``nominalQuota`` plus
  what it may borrow (with a cohort: at most its ``borrowingLimit``, and at most what the
  cohort's other ClusterQueues in the inputs lend: their ``lendingLimit``, else their
  nominal quota).

A Job with ``kueue.x-k8s.io/job-min-parallelism`` that no flavor can hold whole is
admitted, as Kueue's partial admission does, with the most pods (at least the minimum)
that get flavors: the Job controller then creates only those.

The chosen flavors' ``nodeLabels`` are added to the pods' node selector and their
``tolerations`` to the pods' tolerations (Kueue writes both into the pod template on
admission); the Topology of a PodSet's TAS flavor gives the levels its request is
checked against. When no flavor fits, the workload waits with Kueue's "couldn't assign
flavors to pod set ..." message and every flavor's reason.

**Not modelled**: quota usage (gangsched does not track the Workloads Kueue admitted, so
the quota check is against the most the ClusterQueue could have, not what is free now),
flavor fungibility beyond the first fit, hierarchical ``Cohort`` objects, admission
checks, fair sharing and namespace labels other than ``kubernetes.io/metadata.name``
(a ``namespaceSelector`` requirement on any other label is taken as met).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from gangsched.api import names, schema
from gangsched.api.errors import InputError
from gangsched.api.loader import Document, Inputs, Kind, topologies
from gangsched.api.objects import (
    as_mapping,
    as_str,
    as_str_map,
    mappings,
    one_of,
    parse_label_selector,
    parse_taints,
    parse_tolerations,
)
from gangsched.api.quantity import format_quantity, parse_quantity
from gangsched.api.types import (
    LabelSelector,
    NodeRequirements,
    Pod,
    Taint,
    Toleration,
    untolerated,
)

API_VERSIONS = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
MAX_GROUPS = 16
MAX_ITEMS = 64  # covered resources, flavors of a group, resources of a flavor
MAX_FLAVOR_ITEMS = 8  # a ResourceFlavor's node labels, taints, tolerations


@dataclass(frozen=True)
class ResourceFlavor:
    name: str
    node_labels: Mapping[str, str]
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology: str = ""  # the Topology of a TAS flavor


@dataclass(frozen=True)
class FlavorQuotas:
    name: str
    nominal: Mapping[str, int]
    borrowing: Mapping[str, int]  # only the resources that set a limit
    lending: Mapping[str, int]


@dataclass(frozen=True)
class ResourceGroup:
    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    groups: tuple[ResourceGroup, ...]
    cohort: str = ""
    namespaces: LabelSelector | None = None  # None: no namespace (Kueue's null selector)
    stopped: bool = False


@dataclass(frozen=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stopped: bool = False


# -- reading ----------------------------------------------------------------------------------


def _count(items: Sequence[object], most: int, at: str) -> None:
    if len(items) > most:
        raise InputError(f"Too many: {len(items)}: must have at most {most} items", field=at)


# the ClusterQueue fields the CRD closes to a set of values (clusterqueue_types.go), by
# path below spec: what gangsched does not model is still refused as the API server would
_ENUMS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("queueingStrategy",), ("StrictFIFO", "BestEffortFIFO")),
    (("preemption", "reclaimWithinCohort"), ("Never", "LowerPriority", "Any")),
    (("preemption", "withinClusterQueue"),
     ("Never", "LowerPriority", "LowerOrNewerEqualPriority")),
    (("preemption", "borrowWithinCohort", "policy"), ("Never", "LowerPriority")),
    (("flavorFungibility", "whenCanBorrow"), ("MayStopSearch", "TryNextFlavor")),
    (("flavorFungibility", "whenCanPreempt"), ("MayStopSearch", "TryNextFlavor")),
    (("flavorFungibility", "preference"),
     ("BorrowingOverPreemption", "PreemptionOverBorrowing")),
)


def _enums(spec: Mapping[str, object]) -> None:
    for path, allowed in _ENUMS:
        value: object = spec
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is not None:
            one_of(str(value), allowed, "spec." + ".".join(path))


def _stopped(spec: Mapping[str, object]) -> bool:
    policy = as_str(spec.get("stopPolicy"), "spec.stopPolicy") or "None"
    if policy not in STOP_POLICIES:
        raise InputError(f"unsupported value {policy!r}: supported values: "
                         f"{', '.join(STOP_POLICIES)}", field="spec.stopPolicy")
    return policy != "None"


def _reference(value: object, at: str, what: str) -> str:
    text = as_str(value, at)
    problems = names.dns1123_subdomain(text) if text else ("must be set",)
    if problems:
        raise InputError(f"invalid {what} {text!r}: {names.first(problems)}", field=at)
    return text


def parse_flavor(doc: Document) -> ResourceFlavor:
    spec = as_mapping(doc.obj.get("spec"), "spec")
    labels = as_str_map(spec.get("nodeLabels"), "spec.nodeLabels")
    if len(labels) > MAX_FLAVOR_ITEMS:
        raise InputError(f"Too many: {len(labels)}: must have at most {MAX_FLAVOR_ITEMS} "
                         "items", field="spec.nodeLabels")
    taints = parse_taints(spec.get("nodeTaints"), "spec.nodeTaints")
    _count(taints, MAX_FLAVOR_ITEMS, "spec.nodeTaints")
    tolerations = parse_tolerations(spec.get("tolerations"), "spec.tolerations")
    _count(tolerations, MAX_FLAVOR_ITEMS, "spec.tolerations")
    topology = ""
    if spec.get("topologyName") is not None:
        topology = _reference(spec.get("topologyName"), "spec.topologyName", "Topology name")
        if not labels:
            raise InputError("at least one nodeLabel is required when topology is set",
                             field="spec")
    return ResourceFlavor(doc.name, labels, taints, tolerations, topology)


def _quotas(item: Mapping[str, object], at: str, covered: tuple[str, ...], cohort: str
            ) -> FlavorQuotas:
    name = _reference(item.get("name"), f"{at}.name", "ResourceFlavor name")
    entries = list(mappings(item.get("resources"), f"{at}.resources"))
    if len(entries) != len(covered):
        raise InputError("flavors must have the same number of resources as the "
                         f"coveredResources ({len(entries)}, not {len(covered)})",
                         field=f"{at}.resources")
    nominal: dict[str, int] = {}
    borrowing: dict[str, int] = {}
    lending: dict[str, int] = {}
    for j, (res, path) in enumerate(entries):
        resource = as_str(res.get("name"), f"{path}.name")
        if resource != covered[j]:
            raise InputError(f"must be {covered[j]!r}, as coveredResources[{j}]: a flavor "
                             "lists the group's resources in their order", field=f"{path}.name")
        for key, into in (("nominalQuota", nominal), ("borrowingLimit", borrowing),
                          ("lendingLimit", lending)):
            if res.get(key) is None:
                continue
            try:
                into[resource] = parse_quantity(res.get(key), resource)  # never negative
            except InputError as err:
                raise InputError(err.message, field=f"{path}.{key}") from None
        if resource in borrowing and not cohort:
            raise InputError("borrowingLimit must be nil when cohort is empty",
                             field=f"{path}.borrowingLimit")
        nominal.setdefault(resource, 0)
    return FlavorQuotas(name, nominal, borrowing, lending)


def parse_cluster_queue(doc: Document) -> ClusterQueue:
    spec = as_mapping(doc.obj.get("spec"), "spec")
    cohort_key = "cohort" if doc.api_version.endswith("/v1beta1") else "cohortName"
    cohort = as_str(spec.get(cohort_key), f"spec.{cohort_key}")
    groups: list[ResourceGroup] = []
    resources: dict[str, str] = {}
    flavors: dict[str, str] = {}
    entries = list(mappings(spec.get("resourceGroups"), "spec.resourceGroups"))
    _count(entries, MAX_GROUPS, "spec.resourceGroups")
    for group, at in entries:
        covered = tuple(as_str(r, f"{at}.coveredResources[{j}]")
                        for j, r in enumerate(group.get("coveredResources") or ()))
        if not covered:
            raise InputError("should have at least 1 items", field=f"{at}.coveredResources")
        _count(covered, MAX_ITEMS, f"{at}.coveredResources")
        for j, resource in enumerate(covered):
            where = f"{at}.coveredResources[{j}]"
            if resource in resources:
                raise InputError(f"Duplicate value: {resource!r} (also in "
                                 f"{resources[resource]})", field=where)
            resources[resource] = where
        items = list(mappings(group.get("flavors"), f"{at}.flavors"))
        if not items:
            raise InputError("should have at least 1 items", field=f"{at}.flavors")
        _count(items, MAX_ITEMS, f"{at}.flavors")
        quotas = []
        for item, path in items:
            quota = _quotas(item, path, covered, cohort)
            if quota.name in flavors:
                raise InputError(f"Duplicate value: {quota.name!r} (also in "
                                 f"{flavors[quota.name]})", field=f"{path}.name")
            flavors[quota.name] = f"{path}.name"
            quotas.append(quota)
        groups.append(ResourceGroup(covered, tuple(quotas)))
    _enums(spec)
    selector = None
    if spec.get("namespaceSelector") is not None:
        selector = parse_label_selector(spec.get("namespaceSelector"), "spec.namespaceSelector")
    return ClusterQueue(doc.name, tuple(groups), cohort, selector, _stopped(spec))


def parse_local_queue(doc: Document) -> LocalQueue:
    spec = as_mapping(doc.obj.get("spec"), "spec")
    meta = as_mapping(doc.obj.get("metadata"), "metadata")
    namespace = as_str(meta.get("namespace"), "metadata.namespace") or "default"
    target = _reference(spec.get("clusterQueue"), "spec.clusterQueue", "ClusterQueue name")
    return LocalQueue(namespace, doc.name, target, _stopped(spec))


def _handle_flavor(doc: Document, inputs: Inputs) -> None:
    flavor = parse_flavor(doc)
    inputs.claim(doc)
    inputs.add_object(doc, flavor)


def _handle_cluster_queue(doc: Document, inputs: Inputs) -> None:
    queue = parse_cluster_queue(doc)
    inputs.claim(doc)
    inputs.add_object(doc, queue)


def _handle_local_queue(doc: Document, inputs: Inputs) -> None:
    queue = parse_local_queue(doc)
    inputs.claim(doc, f"{queue.namespace}/{queue.name}")
    inputs.add_object(doc, queue)


_QUOTA = {"name": "string", "nominalQuota": "quantity", "borrowingLimit": "quantity",
          "lendingLimit": "quantity"}
_CQ_SPEC: dict[str, schema.TypeExpr] = {
    "resourceGroups": {"list": "kueue.ResourceGroup"}, "queueingStrategy": "string",
    "namespaceSelector": "meta.v1.LabelSelector",
    "flavorFungibility": "kueue.FlavorFungibility",
    "preemption": "kueue.ClusterQueuePreemption", "admissionChecks": "any",
    "admissionChecksStrategy": "any",
    "stopPolicy": "string", "fairSharing": "any", "admissionScope": "any",
    "concurrentAdmissionPolicy": "any"}


def _object(spec: str) -> dict[str, schema.TypeExpr]:
    return {"apiVersion": "string", "kind": "string", "metadata": "meta.v1.ObjectMeta",
            "spec": spec, "status": "any"}


schema.define({
    "kueue.ResourceFlavor": _object("kueue.ResourceFlavorSpec"),
    "kueue.ResourceFlavorSpec": {"nodeLabels": "labels", "nodeTaints": {"list": "core.v1.Taint"},
                                 "tolerations": {"list": "core.v1.Toleration"},
                                 "topologyName": "string"},
    "kueue.v1beta1.ClusterQueue": _object("kueue.v1beta1.ClusterQueueSpec"),
    "kueue.v1beta1.ClusterQueueSpec": {**_CQ_SPEC, "cohort": "string"},
    "kueue.v1beta2.ClusterQueue": _object("kueue.v1beta2.ClusterQueueSpec"),
    "kueue.v1beta2.ClusterQueueSpec": {**_CQ_SPEC, "cohortName": "string"},
    "kueue.FlavorFungibility": {"whenCanBorrow": "string", "whenCanPreempt": "string",
                                "preference": "string"},
    "kueue.ClusterQueuePreemption": {"reclaimWithinCohort": "string",
                                     "borrowWithinCohort": "kueue.BorrowWithinCohort",
                                     "withinClusterQueue": "string"},
    "kueue.BorrowWithinCohort": {"policy": "string", "maxPriorityThreshold": "int32"},
    "kueue.ResourceGroup": {"coveredResources": {"list": "string"},
                            "flavors": {"list": "kueue.FlavorQuotas"}},
    "kueue.FlavorQuotas": {"name": "string", "resources": {"list": "kueue.ResourceQuota"}},
    "kueue.ResourceQuota": _QUOTA,
    "kueue.LocalQueue": _object("kueue.LocalQueueSpec"),
    "kueue.LocalQueueSpec": {"clusterQueue": "string", "stopPolicy": "string",
                             "fairSharing": "any"},
})

KINDS = (
    Kind("ResourceFlavor", API_VERSIONS, _handle_flavor, schema="kueue.ResourceFlavor"),
    Kind("ClusterQueue", API_VERSIONS[:1], _handle_cluster_queue,
         schema="kueue.v1beta1.ClusterQueue"),
    Kind("ClusterQueue", API_VERSIONS[1:], _handle_cluster_queue,
         schema="kueue.v1beta2.ClusterQueue"),
    Kind("LocalQueue", API_VERSIONS, _handle_local_queue, schema="kueue.LocalQueue"),
)


# -- assigning flavors -------------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """One Kueue PodSet: a pod of it (its request and node requirements), how many pods
    quota must hold, and its topology request."""

    name: str
    pod: Pod
    count: int
    levels: tuple[str, ...] = ()  # the label keys its topology request names
    tas: bool = False  # it asks for TAS (any topology annotation)
    group: str = ""  # podset-group-name: PodSets assigned together
    least: int | None = None  # partial admission: the fewest pods it may be admitted with


@dataclass
class Assigned:
    """The flavors chosen for each PodSet (one per resource group it uses), and the count
    of a PodSet admitted with fewer pods than it asks for (partial admission)."""

    flavors: dict[str, list[ResourceFlavor]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def pods(self, podset: str, pods: Sequence[Pod]) -> list[Pod]:
        """``pods`` of ``podset`` with its flavors' node labels and tolerations."""
        flavors = self.flavors.get(podset)
        if not flavors:
            return list(pods)
        made: dict[NodeRequirements, NodeRequirements] = {}
        out = []
        for p in pods:
            req = made.get(p.requirements)
            if req is None:
                req = made[p.requirements] = _with_flavors(p.requirements, flavors)
            if req is not p.requirements:
                p = p.on_node(p.node_name)  # a copy
                p.requirements = req
            out.append(p)
        return out


def _taint_text(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def _labels_match(req: NodeRequirements, labels: Mapping[str, str]) -> bool:
    """Kueue's ``flavorSelector``: the pod's node selector and required node affinity,
    read only on the flavor's label keys, against the flavor's labels."""
    if any(k in labels and labels[k] != v for k, v in req.node_selector):
        return False
    terms = []
    for term in req.affinity:
        kept = [e for e in term.match_expressions if e.key in labels]
        if not kept:  # a term naming none of the keys: every flavor matches
            return True
        terms.append(kept)
    return not terms or any(all(e.matches(labels) for e in t) for t in terms)


def _with_flavors(req: NodeRequirements, flavors: Sequence[ResourceFlavor]) -> NodeRequirements:
    selector = dict(req.node_selector)
    tolerations = list(req.tolerations)
    for f in flavors:
        for k, v in sorted(f.node_labels.items()):
            selector.setdefault(k, v)
        tolerations.extend(t for t in f.tolerations if t not in tolerations)
    if len(selector) == len(req.node_selector) and len(tolerations) == len(req.tolerations):
        return req
    return NodeRequirements(node_selector=tuple(selector.items()), affinity=req.affinity,
                            tolerations=tuple(tolerations))


class Queues:
    """The Kueue queue objects of the inputs, to assign flavors with."""

    def __init__(self, inputs: Inputs) -> None:
        objects = inputs.objects
        self.flavors = {f.name: f for f in objects.get("ResourceFlavor", [])
                        if isinstance(f, ResourceFlavor)}
        self.cluster_queues = {q.name: q for q in objects.get("ClusterQueue", [])
                               if isinstance(q, ClusterQueue)}
        self.local_queues = {(q.namespace, q.name): q for q in objects.get("LocalQueue", [])
                             if isinstance(q, LocalQueue)}
        self.topologies = {t.name: list(t.levels) for t in topologies(inputs)
                           if t.api_version.startswith("kueue.x-k8s.io/")}

    @classmethod
    def of(cls, inputs: Inputs) -> Queues | None:
        """None when the inputs hold no Kueue queue object (Kueue's chain not followed)."""
        if not any(inputs.objects.get(k) for k in ("ResourceFlavor", "ClusterQueue",
                                                    "LocalQueue")):
            return None
        return cls(inputs)

    def _inactive(self, cq: ClusterQueue) -> str:
        problems = ["is stopped"] if cq.stopped else []
        named = [f.name for g in cq.groups for f in g.flavors]
        missing = [n for n in named if n not in self.flavors]
        if missing:
            problems.append(f"references missing ResourceFlavor(s): {','.join(missing)}")
        problems += [f"there is no Topology {self.flavors[n].topology!r} for TAS flavor {n!r}"
                     for n in named if n in self.flavors and self.flavors[n].topology
                     and self.flavors[n].topology not in self.topologies]
        if not problems:
            return ""
        return f"ClusterQueue {cq.name} is inactive: Can't admit new workloads: " + ", ".join(
            problems)

    def _capacity(self, cq: ClusterQueue, quota: FlavorQuotas, resource: str) -> int:
        """The most ``cq`` can use of ``quota``'s flavor: nominal plus what it may borrow
        from its cohort's other ClusterQueues in the inputs."""
        nominal = quota.nominal.get(resource, 0)
        if not cq.cohort:
            return nominal
        lent = 0
        for other in self.cluster_queues.values():
            if other.name == cq.name or other.cohort != cq.cohort:
                continue
            for g in other.groups:
                for f in g.flavors:
                    if f.name == quota.name and resource in f.nominal:
                        lent += f.lending.get(resource, f.nominal[resource])
        return nominal + min(lent, quota.borrowing.get(resource, lent))

    def assign(self, namespace: str, queue: str, asked: Sequence[Asked]) -> Assigned | str:
        """The flavors of each PodSet of a workload in ``namespace`` submitted to LocalQueue
        ``queue``, or why it waits (Kueue's message)."""
        lq = self.local_queues.get((namespace, queue))
        if lq is None:
            return f"LocalQueue {queue} doesn't exist"
        if lq.stopped:
            return f"LocalQueue {queue} is inactive"
        cq = self.cluster_queues.get(lq.cluster_queue)
        if cq is None:
            return f"ClusterQueue {lq.cluster_queue} doesn't exist"
        inactive = self._inactive(cq)
        if inactive:
            return inactive
        if cq.namespaces is None or not _namespace_matches(cq.namespaces, namespace):
            return "workload namespace doesn't match ClusterQueue selector"
        tas_only = all(self.flavors[f.name].topology for g in cq.groups for f in g.flavors)
        used: dict[tuple[str, str], int] = {}
        out = Assigned()
        problems: list[str] = []
        together: dict[str, list[Asked]] = {}
        for a in asked:
            together.setdefault(a.group or f"\0{a.name}", []).append(a)
        for members in together.values():
            got = self._assign_group(cq, members, tas_only, used)
            if isinstance(got, str) and len(members) == 1 and members[0].least is not None:
                fewer = self._partial(cq, members[0], tas_only, used)
                if fewer is not None:
                    got, out.counts[members[0].name] = fewer
            if isinstance(got, str):
                problems.append(got)
                continue
            for a in members:
                out.flavors[a.name] = got
        return "; ".join(problems) if problems else out

    def _assign_group(self, cq: ClusterQueue, members: Sequence[Asked], tas_only: bool,
                      used: dict[tuple[str, str], int]) -> list[ResourceFlavor] | str:
        """The flavor of each resource group the PodSets ``members`` use, taking their
        quota into ``used``; or Kueue's message for the first PodSet that gets none."""
        covers = {r: g for g in cq.groups for r in g.covered}
        request: dict[str, int] = {}
        for a in members:
            for resource, amount in a.pod.requests.items():
                if resource == "pods":
                    continue
                request[resource] = request.get(resource, 0) + amount * a.count
            if "pods" in covers:
                request["pods"] = request.get("pods", 0) + a.count
        chosen: list[ResourceFlavor] = []
        done: set[int] = set()
        for resource in sorted(request):
            group = covers.get(resource)
            if group is None:
                if request[resource] == 0:
                    continue
                return _no_fit(members, [f"resource {resource} unavailable in ClusterQueue"])
            if id(group) in done:
                continue
            done.add(id(group))
            reasons: list[str] = []
            for quota in group.flavors:
                flavor = self.flavors[quota.name]
                reason = self._mismatch(flavor, members, tas_only)
                if reason is None:
                    reason = self._over_quota(cq, quota, group, request, used)
                if reason is not None:
                    reasons.append(reason)
                    continue
                for r in group.covered:
                    if r in request:
                        used[(quota.name, r)] = used.get((quota.name, r), 0) + request[r]
                chosen.append(flavor)
                break
            else:
                return _no_fit(members, reasons)
        return chosen

    def _partial(self, cq: ClusterQueue, a: Asked, tas_only: bool,
                 used: dict[tuple[str, str], int]) -> tuple[list[ResourceFlavor], int] | None:
        """Kueue's partial admission: the most pods, at least ``a.least``, that get flavors
        (a bisection: fewer pods never need more quota), with their flavors; None when
        even ``a.least`` get none."""
        assert a.least is not None
        lo, hi, best = a.least, a.count - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            trial = dict(used)
            got = self._assign_group(cq, [replace(a, count=mid)], tas_only, trial)
            if isinstance(got, str):
                hi = mid - 1
            else:
                best, lo = (got, mid, trial), mid + 1
        if best is None:
            return None
        used.update(best[2])
        return best[0], best[1]

    def _mismatch(self, flavor: ResourceFlavor, members: Sequence[Asked], tas_only: bool
                  ) -> str | None:
        for a in members:
            if a.tas and not flavor.topology:
                return f"Flavor {flavor.name!r} does not support TopologyAwareScheduling"
            if a.tas and not set(a.levels) <= set(self.topologies[flavor.topology]):
                return f"Flavor {flavor.name!r} does not contain the requested level"
            if not a.tas and flavor.topology and not tas_only:
                return f"Flavor {flavor.name!r} supports only TopologyAwareScheduling"
            req = a.pod.requirements
            taint = untolerated(flavor.node_taints, (*req.tolerations, *flavor.tolerations))
            if taint is not None:
                return f"untolerated taint {_taint_text(taint)} in flavor {flavor.name}"
            if not _labels_match(req, flavor.node_labels):
                return f"flavor {flavor.name} doesn't match node affinity"
        return None

    def _over_quota(self, cq: ClusterQueue, quota: FlavorQuotas, group: ResourceGroup,
                    request: Mapping[str, int], used: Mapping[tuple[str, str], int]
                    ) -> str | None:
        for resource in group.covered:
            if resource not in request:
                continue
            before = used.get((quota.name, resource), 0)
            most = self._capacity(cq, quota, resource)
            if before + request[resource] > most:
                return (f"insufficient quota for {resource} in flavor {quota.name}, "
                        "previously considered podsets requests ("
                        f"{format_quantity(before, resource)}) + current podset request ("
                        f"{format_quantity(request[resource], resource)}) > maximum "
                        f"capacity ({format_quantity(most, resource)})")
        return None


def _no_fit(members: Sequence[Asked], reasons: Sequence[str]) -> str:
    return (f"couldn't assign flavors to pod set {members[0].name}: "
            + (", ".join(reasons) or "no flavor"))


def _namespace_matches(selector: LabelSelector, namespace: str) -> bool:
    """The selector on the namespace's ``kubernetes.io/metadata.name`` label; requirements
    on labels gangsched cannot see (no Namespace objects are read) are taken as met."""
    seen = LabelSelector(
        tuple(kv for kv in selector.match_labels if kv[0] == NAMESPACE_NAME_LABEL),
        tuple(r for r in selector.match_expressions if r.key == NAMESPACE_NAME_LABEL))
    return seen.matches({NAMESPACE_NAME_LABEL: namespace})


__all__ = ["KINDS", "Asked", "Assigned", "ClusterQueue", "LocalQueue", "Queues",
           "ResourceFlavor"]
