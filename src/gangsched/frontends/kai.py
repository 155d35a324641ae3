"""KAI-Scheduler front-end: ``PodGroup`` (``scheduling.run.ai/v2alpha2``) with its
``subGroups`` tree, resolved through KAI ``Topology`` objects (``kai.scheduler/v1alpha1``).

Follows kai-scheduler/KAI-Scheduler at d5bc503 (2026-08, v0.17.0): the types and CRD
(``pkg/apis/scheduling/v2alpha2/podgroup_types.go``), the validating webhook
(``podgroup_webhook.go``), how the scheduler reads the tree
(``pkg/scheduler/api/podgroup_info/job_info.go``, ``subgroup_info/factory.go``) and
topology levels (``pkg/scheduler/plugins/topology/job_filtering.go``,
``pkg/scheduler/api/topology_info/topology_info.go`` for aliases). Manifests written for
the older API (NVIDIA/KAI-Scheduler before 2026-04: ``parallelism``, ``completions``,
``backoffLimit``) load; those fields are ignored, as the current CRD prunes them.

**Membership.** A pod belongs to the PodGroup its ``pod-group-name`` annotation names, in
the pod's namespace (``PodGroupAnnotationForPod``); with ``subGroups`` it joins the *leaf*
SubGroup its ``kai.scheduler/subgroup-name`` label names. As in KAI's ``AddTaskInfo``, a
pod of a PodGroup with subGroups that names no leaf (no label, an unknown or a mid-level
SubGroup), and a labelled pod of a PodGroup without subGroups, is not scheduled: it stays
claimed and unplaced, with a warning. Pods naming a PodGroup that is not in the inputs
wait for it.

**The tree** (DESIGN.md section 1), one root Group (kind ``PodGroup``) per PodGroup:

* without ``subGroups``: the pods in PodSets of identical pods, ``minMember`` of them
  required (absent: 1, as KAI's scheduler reads it; ``0``: no gang, each PodSet placed on
  its own and carrying the root's constraints);
* with ``subGroups``: a mid-level SubGroup (one some SubGroup names as ``parent``) and the
  root are Groups needing ``minSubGroup`` of their direct children (absent: all of them);
  a leaf is a PodSet (or, for pods of several shapes, a Group of PodSets) needing its
  ``minMember`` pods. ``spec.minMember`` is then ignored, as by KAI's scheduler.
* ``topologyConstraint`` on the PodGroup and on every SubGroup: ``requiredTopologyLevel``
  becomes a required constraint, ``preferredTopologyLevel`` a preferred one, each on the
  node label key of that level of the named Topology (a level may be named by its
  ``nodeLabel`` or, since KAI #1788, its ``alias``). An empty ``topology`` ignores the
  constraint (as KAI does; gangsched warns).

Pods already bound count toward their leaf's ``minMember`` (the tree asks for the rest); a
SubGroup satisfied by them alone counts as a satisfied child. A leaf with too few pods can
never be satisfied: it is left out, and when its parent can no longer be satisfied the
whole PodGroup waits for pods.

**Validation.** On load, the CRD schema and the webhook's rules, with its messages:
``minMember`` and ``minSubGroup`` are mutually exclusive (on the PodGroup and on each
SubGroup; presence, not value), SubGroup names are unique DNS labels, a ``parent`` must
exist and parents must not form a cycle, a leaf needs ``minMember`` and may not have
``minSubGroup``, a mid-level SubGroup may not have ``minMember``. Where KAI only warns or
fails at scheduling time, gangsched refuses what can never be scheduled: ``minSubGroup``
above the number of children (the PodGroup's own counts the root SubGroups; set without
``subGroups`` it can never be met), a ``topology`` with neither level, a Topology not in the
inputs (when the inputs hold no KAI Topology at all, levels with a prefix such as
``example.com/rack`` are read as node label keys, with a warning), a level the Topology does
not have, ``preferredTopologyLevel`` wider than
``requiredTopologyLevel``, and a SubGroup required level wider than its parent's (same
Topology). Those needing the Topology object make the workload *invalid* (``validate``
reports them, naming file, object and field); the rest fail the load.

**Batch Jobs.** KAI's podgrouper gives every ``batch/v1`` Job whose pods it schedules
(``schedulerName: kai-scheduler``; gangsched's own ``gangsched`` too) one PodGroup
``pg-<job>-<uid>`` with ``minMember`` the Job's ``kai.scheduler/batch-min-member``
annotation (absent: 1, which pods placed one by one meet, so nothing is built then;
``pkg/podgrouper/podgrouper/plugins/job/job_grouper.go``). gangsched builds that PodGroup
over the Job's pods; an annotation that is no int32 is an error (KAI creates no PodGroup
and the pods never run), one on pods of another scheduler a warning. The
Job's ``kai.scheduler/topology``, ``kai.scheduler/topology-required-placement`` and
``kai.scheduler/topology-preferred-placement`` annotations become that PodGroup's
``topologyConstraint`` (``defaultgrouper.GetPodGroupMetadata`` copies them from the top
owner; ``docs/topology``), so a Job with them gets its PodGroup even with minMember 1: its
pods go into one domain of the level. Resolved as a PodGroup's, errors naming the
annotation.

**JobSets.** A ``jobset.x-k8s.io`` JobSet whose pods KAI schedules (and Kueue does not)
gets one PodGroup ``pg-<jobset>-<uid>`` as KAI's ``JobSetGrouper`` builds it
(``plugins/jobset/jobset_grouper.go``): a SubGroup per replicatedJob needing all its
replicas, below it a leaf ``<replicatedJob>-replica-<i>`` per Job needing its template's
``parallelism`` pods (default 1; the Job template's ``batch-min-member``, at least 1,
overrides it) with the Job template's topology annotations as its constraint; the
PodGroup needs every replicatedJob, one under ``startupPolicyOrder: InOrder``, or the
JobSet's ``batch-min-member`` (at least 1, at most every one), and takes the JobSet's own
topology annotations. Each pod joins the leaf of its replicatedJob and job index.

``queue``, ``priorityClassName`` and ``preemptibility`` are read and checked (the CRD's
enum) and shown by ``translate -o tree``; placement uses the pods' own priority.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from gangsched.api import names, schema
from gangsched.api.errors import InputError
from gangsched.api.loader import (
    Document,
    Inputs,
    Kind,
    TopologyObject,
    topologies,
    with_generated_name,
)
from gangsched.api.objects import about, as_int, as_mapping, as_str, mappings, object_name
from gangsched.api.types import Pod
from gangsched.frontends.base import MAX_LOAD_PODS, Contribution, FrontEnd, add_groups
from gangsched.frontends.networktopology import Origin
from gangsched.frontends.pods import identical, natural_key, podset
from gangsched.frontends.sched_queues import KAI_KIND as QUEUE_KIND
from gangsched.frontends.sched_queues import KaiQueues
from gangsched.gang import MAX_DEPTH, Constraint, Group, PodSet, TreeNode
from gangsched.model import Workload

GROUP = "scheduling.run.ai"
API_VERSION = f"{GROUP}/v2alpha2"
KIND = "PodGroup"
TOPOLOGY_API_VERSION = "kai.scheduler/v1alpha1"
POD_GROUP_ANNOTATION = "pod-group-name"  # constants.PodGroupAnnotationForPod
SUBGROUP_LABEL = "kai.scheduler/subgroup-name"  # constants.SubGroupLabelKey
PREEMPTIBILITY = ("preemptible", "non-preemptible")
INT32_MAX = 2**31 - 1
MIN_MEMBER_ANNOTATION = "kai.scheduler/batch-min-member"  # constants.MinMemberOverrideKey
# the top owner's topology annotations the podgrouper copies into its PodGroup's
# topologyConstraint (defaultgrouper.GetPodGroupMetadata): field -> annotation key
TOPOLOGY_ANNOTATIONS = {"topology": "kai.scheduler/topology",
                        "requiredTopologyLevel": "kai.scheduler/topology-required-placement",
                        "preferredTopologyLevel": "kai.scheduler/topology-preferred-placement"}
QUEUE_LABEL = "kai.scheduler/queue"
KAI_SCHEDULERS = ("kai-scheduler", "gangsched")  # gangsched's own, as for Kthena
JOB_API_VERSIONS = ("batch/v1", "jobset.x-k8s.io/v1alpha2")
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
_SUBGROUP_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

# -- typed objects -----------------------------------------------------------------------


@dataclass(frozen=True)
class TopologyConstraint:
    """A ``topologyConstraint`` (PodGroup or SubGroup), levels as written."""

    topology: str
    required: str = ""
    preferred: str = ""
    field: str = "spec.topologyConstraint"  # where it is, for errors
    annotations: bool = False  # written as a Job's kai.scheduler/topology annotations
    # (name, path) of values written elsewhere (an LWS's segment annotations)
    paths: tuple[tuple[str, str], ...] = ()

    def path(self, name: str) -> str:
        """Where ``name`` (``topology``, ``requiredTopologyLevel``, ...) was written."""
        for key, where in self.paths:
            if key == name:
                return where
        if self.annotations:
            return f"{self.field}.{TOPOLOGY_ANNOTATIONS[name]}"
        return f"{self.field}.{name}"


@dataclass(frozen=True)
class SubGroup:
    name: str
    index: int  # in spec.subGroups
    min_member: int | None = None
    min_sub_group: int | None = None
    parent: str | None = None
    topology: TopologyConstraint | None = None

    @property
    def field(self) -> str:
        return f"spec.subGroups[{self.index}]"


@dataclass(frozen=True)
class KaiPodGroup:
    """A KAI ``scheduling.run.ai/v2alpha2`` PodGroup, checked as KAI's webhook does."""

    name: str
    namespace: str = "default"
    min_member: int | None = None
    min_sub_group: int | None = None
    queue: str = ""
    priority_class_name: str = ""
    preemptibility: str = ""
    topology: TopologyConstraint | None = None
    subgroups: tuple[SubGroup, ...] = ()
    origin: Origin = field(default_factory=Origin)
    warnings: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @cached_property
    def _children(self) -> dict[str | None, list[SubGroup]]:
        out: dict[str | None, list[SubGroup]] = {}
        for s in self.subgroups:
            out.setdefault(s.parent, []).append(s)
        return out

    def children(self, parent: str | None) -> list[SubGroup]:
        return self._children.get(parent, [])

    def is_leaf(self, sg: SubGroup) -> bool:
        return sg.name not in self._children


# -- parsing and validation (the CRD schema and KAI's webhook) ----------------------------


def _count(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    """An optional non-negative int32 (the CRD's ``minimum: 0``); None when absent."""
    if obj.get(key) is None:
        return None
    value = as_int(obj.get(key), f"{path}.{key}")
    if value < 0:
        raise InputError(f"must be >= 0, not {value}", field=f"{path}.{key}")
    if value > INT32_MAX:
        raise InputError(f"must fit in 32 bits, not {value}", field=f"{path}.{key}")
    return value


def _exclusive(obj: Mapping[str, Any], path: str, what: str) -> None:
    if obj.get("minMember") is not None and obj.get("minSubGroup") is not None:
        raise InputError(f"minMember and minSubGroup are mutually exclusive{what}; set "
                         "minMember for a gang of pods, minSubGroup for a gang of subgroups",
                         field=f"{path}.minSubGroup")


def _subgroup_name(value: str, path: str) -> None:
    if not _SUBGROUP_NAME.fullmatch(value):
        raise InputError(f"invalid subgroup name {value!r}: must consist of lower case "
                         "alphanumeric characters or '-', and start and end with an "
                         "alphanumeric character", field=path)


def _topology_constraint(value: object, path: str, warnings: list[str]
                         ) -> TopologyConstraint | None:
    if value is None:
        return None
    obj = as_mapping(value, path)
    topo = as_str(obj.get("topology"), f"{path}.topology")
    required = as_str(obj.get("requiredTopologyLevel"), f"{path}.requiredTopologyLevel")
    preferred = as_str(obj.get("preferredTopologyLevel"), f"{path}.preferredTopologyLevel")
    if not topo:
        if required or preferred:
            warnings.append(f"{path}: no topology named, so KAI ignores its levels")
        return None
    if not required and not preferred:
        raise InputError("no topology constraints were found: set requiredTopologyLevel "
                         "or preferredTopologyLevel", field=path)
    return TopologyConstraint(topo, required, preferred, path)


def _parse_subgroups(value: object, warnings: list[str]) -> tuple[SubGroup, ...]:
    out: list[SubGroup] = []
    for i, (item, path) in enumerate(mappings(value, "spec.subGroups")):
        name = as_str(item.get("name"), f"{path}.name")
        if not name:
            raise InputError("is required", field=f"{path}.name")
        _subgroup_name(name, f"{path}.name")
        parent = item.get("parent")
        if parent is not None:
            parent = as_str(parent, f"{path}.parent")
            _subgroup_name(parent, f"{path}.parent")
        out.append(SubGroup(
            name=name, index=i,
            min_member=_count(item, "minMember", path),
            min_sub_group=_count(item, "minSubGroup", path),
            parent=parent or None,
            topology=_topology_constraint(item.get("topologyConstraint"),
                                          f"{path}.topologyConstraint", warnings),
        ))
    return tuple(out)


def _check_tree(pg: KaiPodGroup, items: Sequence[Mapping[str, Any]]) -> None:
    """The webhook's structural rules, in its order, then the min-definition rules."""
    seen: dict[str, SubGroup] = {}
    for sg in pg.subgroups:
        if sg.name in seen:
            raise InputError(f"duplicate subgroup name {sg.name}", field=f"{sg.field}.name")
        seen[sg.name] = sg
    for sg in pg.subgroups:
        if sg.parent is not None and sg.parent not in seen:
            raise InputError(f"parent {sg.parent} of {sg.name} was not found",
                             field=f"{sg.field}.parent")
    depth: dict[str, int] = {}  # subgroups from each up to its root subgroup
    for sg in pg.subgroups:
        chain = [sg.name]
        on_chain = {sg.name}
        node = sg
        while node.parent is not None and node.parent not in depth:
            if node.parent in on_chain:
                loop = " -> ".join([*chain[chain.index(node.parent):], node.parent])
                raise InputError(f"cycle detected in subgroups: {loop}",
                                 field=f"{sg.field}.parent")
            chain.append(node.parent)
            on_chain.add(node.parent)
            node = seen[node.parent]
        below = 0 if node.parent is None else depth[node.parent]
        for i, name in enumerate(reversed(chain), 1):
            depth[name] = below + i
        if depth[sg.name] > MAX_DEPTH:
            raise InputError(f"subgroup {sg.name} is {depth[sg.name]} levels deep: gang trees "
                             f"are at most {MAX_DEPTH} levels", field=f"{sg.field}.parent")
    for sg, item in zip(pg.subgroups, items, strict=True):
        _exclusive(item, sg.field, f" (subgroup {sg.name})")
    for sg in sorted(pg.subgroups, key=lambda s: s.name):
        kids = pg.children(sg.name)
        if not kids:
            if sg.min_sub_group is not None:
                raise InputError(f"subgroup {sg.name} is a leaf (no subgroup names it as "
                                 "parent): minSubGroup is only for subgroups with children",
                                 field=f"{sg.field}.minSubGroup")
            if sg.min_member is None:
                raise InputError(f"minMember is required for leaf subgroup {sg.name}",
                                 field=f"{sg.field}.minMember")
            continue
        if sg.min_member is not None:
            raise InputError(f"subgroup {sg.name} has child subgroups: minMember is only for "
                             "leaf subgroups (use minSubGroup)", field=f"{sg.field}.minMember")
        if sg.min_sub_group is not None and sg.min_sub_group > len(kids):
            raise InputError(f"minSubGroup {sg.min_sub_group} of subgroup {sg.name} exceeds "
                             f"its {len(kids)} child subgroups: it can never be satisfied",
                             field=f"{sg.field}.minSubGroup")
    roots = pg.children(None)
    if pg.min_sub_group is not None and pg.min_sub_group > len(roots):
        what = (f"its {len(roots)} root subgroups" if pg.subgroups
                else "the subgroups (there are none)")
        raise InputError(f"minSubGroup {pg.min_sub_group} exceeds {what}: it can never be "
                         "satisfied", field="spec.minSubGroup")


def parse_podgroup(obj: Mapping[str, Any], origin: Origin | None = None) -> KaiPodGroup:
    """A KAI PodGroup, checked as KAI's CRD and webhook check it."""
    name = object_name(obj, KIND)
    with about(f"{KIND}/{name}"):
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        if "subgroups" in spec and "subGroups" not in spec:
            raise InputError("unknown field; the field is spelled subGroups (capital G)",
                             field="spec.subgroups")
        _exclusive(spec, "spec", "")
        warnings: list[str] = []
        items = [item for item, _ in mappings(spec.get("subGroups"), "spec.subGroups")]
        preemptibility = as_str(spec.get("preemptibility"), "spec.preemptibility")
        if preemptibility and preemptibility not in PREEMPTIBILITY:
            raise InputError(f"unsupported value {preemptibility!r}; must be one of: "
                             f"{', '.join(PREEMPTIBILITY)}", field="spec.preemptibility")
        queue = as_str(spec.get("queue"), "spec.queue")
        pg = KaiPodGroup(
            name=name,
            namespace=as_str(meta.get("namespace"), "metadata.namespace") or "default",
            min_member=_count(spec, "minMember", "spec"),
            min_sub_group=_count(spec, "minSubGroup", "spec"),
            queue=queue,
            priority_class_name=as_str(spec.get("priorityClassName"), "spec.priorityClassName"),
            preemptibility=preemptibility,
            topology=_topology_constraint(spec.get("topologyConstraint"),
                                          "spec.topologyConstraint", warnings),
            subgroups=_parse_subgroups(spec.get("subGroups"), warnings),
            origin=origin or Origin(obj=f"{KIND}/{name}"),
        )
        _check_tree(pg, items)
        where = f"{pg.origin.where} {KIND}/{name}".strip()
        return replace(pg, warnings=tuple(f"{where}: {w}" for w in warnings))


def _handle(doc: Document, inputs: Inputs) -> None:
    pg = parse_podgroup(with_generated_name(doc), Origin.of(doc))
    problems = names.dns1123_subdomain(pg.queue) if pg.queue else ()
    if problems:  # a Queue is an object: its name is a DNS subdomain
        raise doc.error(f"invalid queue name {pg.queue!r}: {names.first(problems)}",
                        "spec.queue")
    inputs.claim(doc, f"{pg.key} ({GROUP})")  # Volcano and the Workload API have PodGroups
    inputs.add_object(doc, pg)
    inputs.warnings.extend(pg.warnings)


# Known fields of the CRD (deployments/kai-scheduler/crds/scheduling.run.ai_podgroups.yaml
# at d5bc503), plus the fields the CRD had before 2026-04 (parallelism, completions,
# backoffLimit), which the API server now prunes: ignored, never an error.
schema.define({
    "kai.PodGroup": {"apiVersion": "string", "kind": "string",
                     "metadata": "meta.v1.ObjectMeta", "spec": "kai.PodGroupSpec",
                     "status": "any"},
    "kai.PodGroupSpec": {"minMember": "int32", "minSubGroup": "int32", "queue": "string",
                         "priorityClassName": "string", "preemptibility": "string",
                         "topologyConstraint": "kai.TopologyConstraint",
                         "subGroups": {"list": "kai.SubGroup"},
                         "markUnschedulable": "boolean", "schedulingBackoff": "int32",
                         "preemptionDelay": "string", "stalenessGracePeriod": "string",
                         "parallelism": "int32", "completions": "int32",
                         "backoffLimit": "int32"},
    "kai.SubGroup": {"name": "string", "minMember": "int32", "minSubGroup": "int32",
                     "parent": "string", "topologyConstraint": "kai.TopologyConstraint"},
    "kai.TopologyConstraint": {"topology": "string", "requiredTopologyLevel": "string",
                               "preferredTopologyLevel": "string"},
})


# -- topology ----------------------------------------------------------------------------


def _resolve(tc: TopologyConstraint | None, topos: Mapping[str, TopologyObject]
             ) -> tuple[tuple[Constraint, ...], int | None]:
    """The constraints of ``tc`` and the rank (index in its Topology) of its required
    level; raises InputError naming the field."""
    if tc is None:
        return (), None
    topo = topos.get(tc.topology)
    if topo is None:
        if topos or not all(_is_key(x) for x in (tc.required, tc.preferred) if x):
            known = ", ".join(sorted(topos)) or "none in the inputs"
            raise InputError(f"topology {tc.topology!r} not found (a {TOPOLOGY_API_VERSION} "
                             f"Topology; known: {known})", field=tc.path("topology"))
        # no KAI Topology in the inputs at all: the levels are read as node label keys
        keys = [Constraint(tc.required, "required")] if tc.required else []
        if tc.preferred:
            keys.append(Constraint(tc.preferred, "preferred"))
        return tuple(keys), None
    out: list[Constraint] = []
    ranks: dict[str, int] = {}
    for attr, mode in (("required", "required"), ("preferred", "preferred")):
        level = getattr(tc, attr)
        if not level:
            continue
        key = topo.resolve(level)
        path = tc.path(f"{attr}TopologyLevel")
        if key is None:
            choices = [*topo.levels, *(a for a in topo.aliases if a)]
            raise InputError(f"level {level!r} is not a level of topology {topo.name} "
                             f"(levels: {', '.join(choices)})", field=path)
        ranks[attr] = topo.levels.index(key)
        out.append(Constraint(key, "required" if mode == "required" else "preferred"))
    if "required" in ranks and "preferred" in ranks and ranks["preferred"] < ranks["required"]:
        raise InputError(f"preferredTopologyLevel {tc.preferred!r} is wider than "
                         f"requiredTopologyLevel {tc.required!r}: the preferred level must be "
                         "the same as or narrower than the required one",
                         field=tc.path("preferredTopologyLevel"))
    return tuple(out), ranks.get("required")


def _is_key(level: str) -> bool:
    """A level that can only be a node label key (it has a prefix: ``example.com/rack``),
    never an alias."""
    return "/" in level and not names.qualified_name(level)


# -- the tree ----------------------------------------------------------------------------


@dataclass
class _Built:
    node: Group | PodSet | None  # None: nothing left to place
    done: bool  # satisfied already (pods bound, or nothing required)
    possible: bool  # can be satisfied with the pods there are
    reasons: list[str] = field(default_factory=list)


class _Builder:
    def __init__(self, pg: KaiPodGroup, pods: Sequence[Pod],
                 topos: Mapping[str, TopologyObject]) -> None:
        self.pg = pg
        self.topos = topos
        self.by_leaf: dict[str, list[Pod]] = {}
        self.invalid: list[Pod] = []
        self.warnings: list[str] = []
        leaves = {s.name for s in pg.subgroups if pg.is_leaf(s)}
        where = f"{pg.origin.where} {KIND}/{pg.name}".strip()
        for pod in pods:
            label = pod.labels.get(SUBGROUP_LABEL)
            if pg.subgroups and label in leaves:
                self.by_leaf.setdefault(label or "", []).append(pod)
            elif not pg.subgroups and label is None:
                self.by_leaf.setdefault("", []).append(pod)
            else:
                self.invalid.append(pod)
                why = (f"references subgroup {label}, which is not a leaf subgroup of the "
                       "PodGroup" if label else "has no subgroup label "
                       f"({SUBGROUP_LABEL}) though the PodGroup has subGroups")
                if not pg.subgroups:
                    why = f"has a subgroup label ({SUBGROUP_LABEL}) though the PodGroup has none"
                self.warnings.append(f"{where}: pod {pod.key} {why}: it is not scheduled")

    def constraints(self, tc: TopologyConstraint | None, parent: tuple[str, int] | None
                    ) -> tuple[tuple[Constraint, ...], tuple[str, int] | None]:
        cons, rank = _resolve(tc, self.topos)
        if tc is not None and not self.topos:
            where = f"{self.pg.origin.where} {KIND}/{self.pg.name}".strip()
            note = (f"{where}: {tc.path('topology')}: no {TOPOLOGY_API_VERSION} Topology in the "
                    f"inputs; its levels are read as node label keys")
            if note not in self.warnings:
                self.warnings.append(note)
        if tc is None or rank is None:
            return cons, parent
        if parent is not None and parent[0] == tc.topology and rank < parent[1]:
            raise InputError(f"requiredTopologyLevel {tc.required!r} is wider than its "
                             "parent's: a subgroup must fit inside its parent's domain",
                             field=tc.path("requiredTopologyLevel"))
        return cons, (tc.topology, rank)

    def leaf(self, name: str, path: str, minimum: int, topo: tuple[Constraint, ...]
             ) -> _Built:
        pods = sorted(self.by_leaf.get(name, []), key=lambda p: natural_key(p.name))
        pending = [p for p in pods if not p.node_name]
        need = max(0, minimum - (len(pods) - len(pending)))
        if len(pending) < need:
            return _Built(None, False, False,
                          [f"{name or self.pg.name} has {len(pods)} of minMember {minimum}"])
        if not pending:
            return _Built(None, need == 0, True)
        sets = identical(pending)
        label = name or self.pg.name
        if len(sets) == 1:
            ps = replace(podset(label, path, pending, need), path=path, topology=topo)
            return _Built(ps, need == 0, True)
        every = need >= len(pending)
        kids: list[Group | PodSet] = [
            podset(f"pods-{i}", path, members, len(members) if every else 0)
            for i, members in enumerate(sets)]
        return _Built(Group(label, path, kids, min_groups=len(kids), min_pods=need,
                            topology=topo), need == 0, True)

    def subgroup(self, sg: SubGroup, parent_path: str, parent: tuple[str, int] | None
                 ) -> _Built:
        path = f"{parent_path}/{sg.name}"
        try:
            topo, mine = self.constraints(sg.topology, parent)
        except InputError as err:
            raise self.pg.origin.locate(err) from None
        if self.pg.is_leaf(sg):
            return self.leaf(sg.name, path, sg.min_member or 0, topo)
        kids = [self.subgroup(c, path, mine) for c in self.pg.children(sg.name)]
        return self.gang(sg.name, path, kids, sg.min_sub_group, topo)

    @staticmethod
    def gang(name: str, path: str, kids: list[_Built], min_sub: int | None,
             topo: tuple[Constraint, ...]) -> _Built:
        required = len(kids) if min_sub is None else min_sub
        done = sum(1 for k in kids if k.done)
        live = [k for k in kids if k.node is not None and k.possible]
        could = done + sum(1 for k in live if not k.done)
        if could < required:
            reasons = [r for k in kids for r in k.reasons]
            return _Built(None, False, False, reasons or
                          [f"{name} has {could} of minSubGroup {required} subgroups"])
        need = max(0, required - done)
        if not live:
            return _Built(None, need == 0, True)
        included_done = sum(1 for k in live if k.done)
        nodes = [k.node for k in live if k.node is not None]
        return _Built(Group(name, path, nodes, min_groups=need + included_done if need else 0,
                            topology=topo), need == 0, True)

    def tree(self) -> _Built:
        pg = self.pg
        try:
            topo, mine = self.constraints(pg.topology, None)
        except InputError as err:
            raise pg.origin.locate(err) from None
        if not pg.subgroups:
            minimum = 1 if pg.min_member is None else pg.min_member
            built = self.leaf("", pg.key, minimum, topo)
        else:
            kids = [self.subgroup(s, pg.key, mine) for s in pg.children(None)]
            built = self.gang(pg.name, pg.key, kids, pg.min_sub_group, topo)
        node = built.node
        if isinstance(node, PodSet):
            node = Group(pg.name, pg.key, [replace(node, path=f"{pg.key}/pods", name="pods",
                                                   topology=())],
                         min_groups=1 if node.min_pods else 0, min_pods=node.min_pods,
                         topology=node.topology)
        if isinstance(node, Group):
            node.name, node.kind, node.source = pg.name, "PodGroup", pg.key
            if not node.min_groups and not node.min_pods and node.topology:
                _push_down(node)  # no gang: each child carries the root's constraints
        built.node = node
        return built


def _push_down(root: Group) -> None:
    """A root that gangs nothing splits into its children as units: they keep its
    constraints (each child in one domain of its own)."""
    kids: list[Group | PodSet] = []
    for child in root.children:
        have = {c.key for c in child.topology}
        extra = tuple(c for c in root.topology if c.key not in have)
        kids.append(replace(child, topology=(*child.topology, *extra)))
    root.children = kids
    root.topology = ()


def build_workload(pg: KaiPodGroup, pods: Sequence[Pod],
                   topos: Mapping[str, TopologyObject], queues: KaiQueues
                   ) -> tuple[Workload, list[str]]:
    """The Workload of one PodGroup and its member pods, and warnings about it; it waits
    when KAI would skip it for its queue (``queues``: the inputs')."""
    builder = _Builder(pg, pods, topos)
    priority = max((p.priority for p in pods), default=0)
    workload = Workload(name=pg.key, kind=KIND, tree=None, priority=priority,
                        source=pg.origin.where)
    try:
        built = builder.tree()
    except InputError as err:
        workload.invalid = str(err)
        return workload, builder.warnings
    blocked = queues.problem(pg.queue)
    if blocked:
        workload.waiting = blocked
        workload.pods = {p.key: p for p in pods if not p.node_name}
        return workload, builder.warnings
    if not built.possible:
        workload.waiting = "waiting for pods: " + "; ".join(dict.fromkeys(built.reasons))
        return workload, builder.warnings
    if built.node is None:
        workload.waiting = "no pending pods"
        return workload, builder.warnings
    tree: TreeNode = built.node
    if isinstance(tree, Group):
        tree.priority = priority
    keys = {k for ps in _leaves(tree) for k in ps.pods}
    workload.tree = tree
    workload.pods = {p.key: p for p in pods if p.key in keys}
    return workload, builder.warnings


def _leaves(node: TreeNode) -> list[PodSet]:
    if isinstance(node, PodSet):
        return [node]
    return [ps for c in node.children for ps in _leaves(c)]


# -- the builder -------------------------------------------------------------------------


def kai_podgroups(inputs: Inputs) -> list[KaiPodGroup]:
    return [o for o in inputs.objects.get(KIND, []) if isinstance(o, KaiPodGroup)]


def group_of(pod: Pod) -> str | None:
    """``namespace/name`` of the KAI PodGroup a pod names, if any."""
    name = pod.annotations.get(POD_GROUP_ANNOTATION)
    return f"{pod.namespace}/{name}" if name else None


# -- KAI's podgrouper for batch Jobs: kai.scheduler/batch-min-member --------------------


def _min_member_override(obj: Mapping[str, Any], origin: Origin, at: str = "") -> int | None:
    """The Job's ``kai.scheduler/batch-min-member`` (``strconv.ParseInt(v, 10, 32)``);
    None when absent. A value KAI cannot parse leaves the Job without a PodGroup, its pods
    never scheduled: an error here (``at``: the path to ``obj``, with its dot)."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping) or MIN_MEMBER_ANNOTATION not in annotations:
        return None
    raw = annotations[MIN_MEMBER_ANNOTATION]
    if isinstance(raw, str) and re.fullmatch(r"\+?[0-9]{1,10}", raw) and int(raw) <= INT32_MAX:
        return int(raw)
    raise origin.error(f"invalid min-member value {raw!r}: must be an integer from 0 to "
                       f"{INT32_MAX}", f"{at}metadata.annotations.{MIN_MEMBER_ANNOTATION}")


def annotation_topology(obj: Mapping[str, Any], origin: Origin, warnings: list[str],
                         at: str = "") -> TopologyConstraint | None:
    """The Job's ``kai.scheduler/topology`` and placement annotations, the
    ``topologyConstraint`` KAI's podgrouper gives its PodGroup; None when not set."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping):
        return None
    values = {name: annotations.get(key) for name, key in TOPOLOGY_ANNOTATIONS.items()}
    if not any(values.values()):
        return None
    topo, required, preferred = (str(values[name] or "") for name in TOPOLOGY_ANNOTATIONS)
    tc = TopologyConstraint(topo, required, preferred, f"{at}metadata.annotations",
                            annotations=True)
    if not topo:
        warnings.append(str(origin.error("no topology named (kai.scheduler/topology), so "
                                          "KAI ignores its placement levels",
                                          tc.path("topology"))))
        return None
    if not required and not preferred:
        raise origin.error("no topology constraints were found: set "
                           f"{TOPOLOGY_ANNOTATIONS['requiredTopologyLevel']} or "
                           f"{TOPOLOGY_ANNOTATIONS['preferredTopologyLevel']}",
                           tc.path("topology"))
    return tc


def _batch_job_groups(inputs: Inputs, topos: Mapping[str, TopologyObject],
                      out: Contribution, queues: KaiQueues) -> None:
    """A PodGroup ``pg-<job>-<uid>`` per ``batch/v1`` Job whose pods KAI schedules, with
    ``minMember`` its ``kai.scheduler/batch-min-member`` (KAI's ``K8sJobGrouper``) and the
    ``topologyConstraint`` of its topology annotations (``DefaultGrouper``); a Job with
    neither gets minMember 1 and no constraint from KAI, which its pods placed one by one
    already meet. Pods Kueue gangs (claimed before this builder) are left to it."""
    for doc in inputs.documents:
        if doc.kind not in ("Job", "JobSet") or doc.api_version not in JOB_API_VERSIONS:
            continue
        obj = with_generated_name(doc)
        origin = Origin.of(doc)
        minimum = _min_member_override(obj, origin)
        topology = annotation_topology(obj, origin, out.warnings)
        if minimum is None and topology is None and doc.kind == "Job":
            continue  # KAI's minMember 1, which its pods placed one by one meet
        meta = as_mapping(obj.get("metadata"), "metadata")
        name, namespace = meta.get("name"), meta.get("namespace") or "default"
        label = JOBSET_NAME_LABEL if doc.kind == "JobSet" else JOB_NAME_LABEL
        pods = [p for p in inputs.pods if p.namespace == namespace and group_of(p) is None
                and p.labels.get(label) == name]
        others = sorted({p.scheduler_name for p in pods} - set(KAI_SCHEDULERS))
        if others:
            if minimum is not None or topology is not None:
                field = (f"metadata.annotations.{MIN_MEMBER_ANNOTATION}" if minimum is not None
                         else "metadata.annotations.kai.scheduler/topology")
                out.warnings.append(str(origin.error(
                    f"ignored: the {doc.kind}'s pods use schedulerName {', '.join(others)}, "
                    "which KAI does not schedule", field)))
            continue
        uid = meta.get("uid")
        pg = KaiPodGroup(name=f"pg-{name}-{uid}" if uid else f"pg-{name}",
                         namespace=namespace, min_member=minimum, origin=origin,
                         queue=(meta.get("labels") or {}).get(QUEUE_LABEL, ""),
                         topology=topology)
        if doc.kind == "JobSet":
            if not pods:
                continue  # Kueue's (it claimed them), or none of KAI's
            pg, pods = _jobset_group(pg, obj, origin, pods, out.warnings)
        workload, warnings = build_workload(pg, pods, topos, queues)
        if pods or workload.invalid:  # a Topology or level not found is wrong without pods
            out.workloads.append(workload)
            out.warnings.extend(warnings)
            out.claimed.update(p.key for p in pods)


def _jobset_group(pg: KaiPodGroup, obj: Mapping[str, Any], origin: Origin,
                  pods: Sequence[Pod], warnings: list[str]) -> tuple[KaiPodGroup, list[Pod]]:
    """KAI's ``JobSetGrouper``: a SubGroup per replicatedJob needing all its replicas,
    below it a leaf ``<replicatedJob>-replica-<i>`` per Job needing ``parallelism`` pods
    (or its template's ``batch-min-member``) with its template's topology annotations;
    the PodGroup needs every replicatedJob (``InOrder`` startup: one; the JobSet's
    ``batch-min-member``: that many). The pods labelled into their leaves."""
    spec = as_mapping(obj.get("spec"), "spec")
    jobs = 0  # replicatedJobs
    subgroups: list[SubGroup] = []
    for rj, at in mappings(spec.get("replicatedJobs"), "spec.replicatedJobs"):
        template = as_mapping(rj.get("template"), f"{at}.template")
        tmeta = template.get("metadata")
        job_spec = as_mapping(template.get("spec"), f"{at}.template.spec")
        parallelism = as_int(job_spec.get("parallelism"), f"{at}.template.spec.parallelism", 1)
        leaf_min = _min_member_override(template, origin, f"{at}.template.")
        if leaf_min is not None and leaf_min < 1:
            raise origin.error(f"invalid min-member value {leaf_min}: must be >= 1",
                               f"{at}.template.metadata.annotations.{MIN_MEMBER_ANNOTATION}")
        leaf_topology = annotation_topology({"metadata": tmeta or {}}, origin, warnings,
                                             f"{at}.template.")
        rj_name = str(rj.get("name"))
        replicas = as_int(rj.get("replicas"), f"{at}.replicas", 1)
        if len(subgroups) + replicas > MAX_LOAD_PODS:
            raise origin.error(f"{replicas:,} replicas: gangsched builds at most "
                               f"{MAX_LOAD_PODS:,} SubGroups per PodGroup", f"{at}.replicas")
        subgroups.append(SubGroup(rj_name, len(subgroups), min_sub_group=replicas))
        subgroups.extend(SubGroup(f"{rj_name}-replica-{j}", len(subgroups) + j,
                                  min_member=leaf_min or parallelism, parent=rj_name,
                                  topology=leaf_topology) for j in range(replicas))
        jobs += 1
    if pg.min_member is not None and pg.min_member < 1:
        raise origin.error(f"invalid min-member value {pg.min_member}: must be >= 1",
                           f"metadata.annotations.{MIN_MEMBER_ANNOTATION}")
    startup = spec.get("startupPolicy")
    in_order = isinstance(startup, Mapping) and startup.get("startupPolicyOrder") == "InOrder"
    need = min(pg.min_member, jobs) if pg.min_member is not None else 1 if in_order else jobs
    labelled = []
    for p in pods:
        leaf = f"{p.labels.get(REPLICATED_JOB_LABEL)}-replica-{p.labels.get(JOB_INDEX_LABEL)}"
        labelled.append(replace(p, labels={**p.labels, SUBGROUP_LABEL: leaf}))
    return replace(pg, min_member=None, min_sub_group=need, subgroups=tuple(subgroups)), labelled


def build(inputs: Inputs) -> Contribution:
    out = Contribution()
    topos = {t.name: t for t in topologies(inputs) if t.kai}
    members: dict[str, list[Pod]] = {}
    for pod in inputs.pods:
        key = group_of(pod)
        if key is not None:
            members.setdefault(key, []).append(pod)
    queues = KaiQueues(inputs)
    add_groups(out, kai_podgroups(inputs), members,
               lambda pg, mine: build_workload(pg, mine, topos, queues), KIND)
    _batch_job_groups(inputs, topos, out, queues)
    return out


FRONT_END = FrontEnd(
    "kai", (Kind(KIND, (API_VERSION,), _handle, schema="kai.PodGroup"), QUEUE_KIND), build)

__all__ = [
    "API_VERSION",
    "FRONT_END",
    "POD_GROUP_ANNOTATION",
    "SUBGROUP_LABEL",
    "KaiPodGroup",
    "SubGroup",
    "TopologyConstraint",
    "annotation_topology",
    "build",
    "build_workload",
    "kai_podgroups",
    "parse_podgroup",
]
