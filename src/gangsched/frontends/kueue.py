"""Kueue front-end: Topology Aware Scheduling annotations on ``batch/v1`` ``Job``,
``jobset.x-k8s.io/v1alpha2`` ``JobSet`` and plain pod groups, into gang trees.

Follows kubernetes-sigs/kueue at ff69552 (2026-08, v0.19.2): the annotation keys
(``apis/kueue/v1beta2/topology_types.go``, ``pkg/controller/jobs/pod/constants``), their
validation (``pkg/controller/jobframework/tas_validation.go``: ``ValidateTASPodSetRequest``,
``ValidateSliceSizeAnnotationUpperBound``, ``ValidatePodSetGroupingTopology``), the PodSets
of each kind (``pkg/controller/jobs/job/job_controller.go``, ``jobs/jobset/
jobset_controller.go``, ``jobs/pod/pod_controller.go``) and what the TAS scheduler makes of
a request (``pkg/cache/scheduler/tas_flavor_snapshot.go``). Job and pod names follow the
Job controller (kubernetes ``pkg/controller/job``) and JobSet
(kubernetes-sigs/jobset at 08dfbdf, ``pkg/util/placement``, ``pkg/webhooks``).

**Pods.** gangsched plays the controllers, as for Kthena: a Job gets ``min(parallelism,
completions)`` pods from its template, named ``<job>-<index>-<xxxxx>`` (Indexed) or
``<job>-<xxxxx>`` (NonIndexed; the Job controller's ``generateName`` suffix, made
deterministic), labelled ``batch.kubernetes.io/job-name`` (and ``job-name``) and, when
Indexed, ``batch.kubernetes.io/job-completion-index``. A JobSet gets ``replicas`` Jobs
``<jobset>-<replicatedJob>-<jobIndex>`` per replicated Job (Indexed by default, as its
webhook defaults), their pods labelled with ``jobset.sigs.k8s.io/jobset-name``,
``replicatedjob-name``, ``job-index``, ``job-global-index`` and ``job-key``. Pods of the
Job already in the inputs (by those labels) are used instead of creating them. Every Job's
pods are created; only those of Jobs Kueue manages (the ``kueue.x-k8s.io/queue-name``
label) or placed exclusively (below) are ganged here: the others are left to the
front-ends after this one (a KAI PodGroup their template's ``pod-group-name`` names, a
Volcano PodGroup) or scheduled one by one.

**Gangs.** A Kueue Workload is admitted all or nothing, so each one is a root Group (kind
``Job``, ``JobSet`` or ``Pod``) needing all its PodSets:

* a Job: one PodSet ``main`` of ``min(parallelism, completions)`` pods, all required, or
  ``kueue.x-k8s.io/job-min-parallelism`` of them (partial admission; its webhook's
  ``0 < v < count``);
* a JobSet: one PodSet per replicated Job, named after it, of ``replicas x min(
  parallelism, completions)`` pods ordered by (job index, completion index);
* a plain pod group: the pods naming one ``kueue.x-k8s.io/pod-group-name`` (label, or
  annotation) in a namespace, ``kueue.x-k8s.io/pod-group-total-count`` of them required
  (the group waits while fewer exist, as Kueue waits to compose the Workload); one PodSet
  per role (the ``kueue.x-k8s.io/role-hash`` annotation, else identical pods), its
  request read from the role's first pod; a pending pod with the queue label but no
  group is a group of one (Kueue's pod integration: one Workload per such pod, admitted
  through its queue).

The request of a PodSet, from its pod template's annotations:
``podset-required-topology: K`` is a required constraint on K, ``podset-preferred-
topology: K`` a preferred one, ``podset-unconstrained-topology`` none;
``podset-slice-required-topology: K2`` with ``podset-slice-size: S`` cuts the PodSet into
``count / S`` slices of consecutive pods (Kueue's rank order), each a required group on
K2 (the multi-layer ``podset-slice-required-topology-constraints`` JSON nests them, widest
first); a ``podset-group-name`` shared by two PodSets (JobSet; a leader and its workers)
puts both in one Group carrying their common constraint (one domain for both).

**JobSet exclusive placement.** ``alpha.jobset.sigs.k8s.io/exclusive-topology: K`` on
the JobSet (or on a replicated Job's template, which wins for its Jobs) is copied onto the
Jobs' pods, with the ``job-key`` label (SHA-1 of ``<namespace>/<job>``); the pod webhook
gives each Job's leader a required pod affinity to its own ``job-key`` and a required
anti-affinity against any other on ``K``, in every namespace and at the same priority,
and pins the followers to the leader's domain. So each such Job is a Group needing all
its pods with an exclusive required constraint on ``K`` (gang.py), set
:func:`exclusive_set` (every exclusive Job of that priority); running pods pin their Job
and hold its domain (``Contribution.claims``). Not under Kueue, the JobSet is a workload
of its exclusive Jobs under a basic root (each Job a unit; its other pods are left as
before); under Kueue, the replicated Job's PodSet is a Group of its Jobs carrying the
PodSet's own constraint (slices and exclusive placement together are refused). As for
LWS, one difference: upstream, pods of JobSets without the annotation are kept out of owned
domains too (they carry a ``job-key``); here only owners of the same set and key exclude
each other. With ``alpha.jobset.sigs.k8s.io/node-selector`` as well the controller instead
selects nodes labelled ``alpha.jobset.sigs.k8s.io/namespaced-job: <namespace>_<job>`` (by
the user, beforehand) and tolerates the ``alpha.jobset.sigs.k8s.io/no-schedule`` taint:
the pods get that selector and toleration, and nothing is owned (the labels decide).

**Validation** is Kueue's webhooks', with their messages: at most one of required,
preferred and unconstrained; level keys valid label names; unconstrained a boolean; the
slice annotations together, the size an int32 >= 1 and at most the PodSet's count; a group
name not a number, not with slices, only with required or preferred, and (JobSet) exactly
two PodSets, one of a single pod, with the same required or preferred level; a pod group
needs both its name and total count, a valid name, a count >= 1, the same count and queue
on every pod. Where gangsched differs from Kueue: a slice size must divide the count (the
KEP's rule; Kueue's code floors ``count / size``); and when a Kueue ``Topology`` is in the
inputs, a required or slice level none of them lists makes the workload invalid (the
levels are listed in the Topologies' order, widest first), while a preferred level none of
them lists is dropped with a warning and the PodSet placed without it. Kueue's webhook
accepts either; its flavor assigner (``checkPodSetAndFlavorMatchForTAS``, ``HasLevel``)
then skips every flavor whose Topology lacks the level, required or preferred alike, and
the workload stays pending ("does not contain the requested level"). With Kueue's
``LocalQueue``, ``ClusterQueue`` and ``ResourceFlavor`` objects in the inputs, Kueue's
chain is followed instead (:mod:`.kueue_queues`): each PodSet gets its flavor's nodes,
and a level no candidate flavor's Topology has leaves the workload waiting, as upstream. A Job needs
``restartPolicy`` Never or OnFailure, as the API server validates (a JobSet's defaults to
OnFailure). Problems found on load name the file, document, object and annotation; those
found across objects (plain pods, topology levels) make the workload invalid with the same
kind of message.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gangsched.api import names, schema
from gangsched.api.errors import InputError
from gangsched.api.loader import Document, Inputs, Kind, topologies, with_generated_name
from gangsched.api.objects import (
    PodTemplate,
    about,
    as_int,
    as_mapping,
    as_str,
    mappings,
    object_name,
    parse_pod_template,
    required_str,
)
from gangsched.api.types import Node, NodeRequirements, Pod, Toleration
from gangsched.frontends.base import MAX_OBJECT_PODS, Contribution, Demand, FrontEnd
from gangsched.frontends.kueue_priority import KIND as PRIORITY_KIND
from gangsched.frontends.kueue_priority import (
    KUEUE_GATES,
    PRIORITY_CLASS_LABEL,
    Priorities,
    class_label,
)
from gangsched.frontends.kueue_queues import KINDS as QUEUE_KINDS
from gangsched.frontends.kueue_queues import Asked, Assigned, Queues
from gangsched.frontends.networktopology import Origin
from gangsched.frontends.pods import from_limits, identical, natural_key, podset
from gangsched.gang import Claim, Constraint, Group, PodSet, TreeNode, walk
from gangsched.model import Workload

JOB_API_VERSION = "batch/v1"
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
PREFIX = "kueue.x-k8s.io/"
QUEUE_LABEL = f"{PREFIX}queue-name"
POD_GROUP_NAME = f"{PREFIX}pod-group-name"
POD_GROUP_TOTAL_COUNT = f"{PREFIX}pod-group-total-count"
ROLE_HASH = f"{PREFIX}role-hash"
MIN_PARALLELISM = f"{PREFIX}job-min-parallelism"
REQUIRED = f"{PREFIX}podset-required-topology"
PREFERRED = f"{PREFIX}podset-preferred-topology"
UNCONSTRAINED = f"{PREFIX}podset-unconstrained-topology"
SLICE_REQUIRED = f"{PREFIX}podset-slice-required-topology"
SLICE_SIZE = f"{PREFIX}podset-slice-size"
SLICE_CONSTRAINTS = f"{PREFIX}podset-slice-required-topology-constraints"
GROUP_NAME = f"{PREFIX}podset-group-name"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX_LABEL = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY_LABEL = "jobset.sigs.k8s.io/job-key"
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY = "alpha.jobset.sigs.k8s.io/node-selector"
NAMESPACED_JOB = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE = "alpha.jobset.sigs.k8s.io/no-schedule"
MAIN = "main"  # kueue.DefaultPodSetName
INT32_MAX = 2**31 - 1
MAX_PODS = MAX_OBJECT_PODS  # pods one Job or JobSet may generate here
_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
          "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"  # utilrand's alphabet for generateName

# -- a PodSet's topology request -----------------------------------------------------------


@dataclass(frozen=True)
class TasRequest:
    """One PodSet's topology request, from its pod template's annotations."""

    required: str = ""
    preferred: str = ""
    unconstrained: bool = False
    slices: tuple[tuple[str, int], ...] = ()  # (label key, pods per slice), widest first
    group: str = ""  # podset-group-name
    field: str = "metadata.annotations"
    slice_annotation: str = SLICE_SIZE  # which annotation gave the slices

    @property
    def asked(self) -> bool:
        return bool(self.required or self.preferred or self.unconstrained or self.slices)

    def constraints(self) -> tuple[Constraint, ...]:
        if self.required:
            return (Constraint(self.required, "required"),)
        if self.preferred:
            return (Constraint(self.preferred, "preferred"),)
        return ()

    def levels(self) -> list[tuple[str, str]]:
        """(annotation, level key) of every level the request names."""
        out = [(REQUIRED, self.required), (PREFERRED, self.preferred)]
        out += [(SLICE_REQUIRED if len(self.slices) == 1 else SLICE_CONSTRAINTS, k)
                for k, _ in self.slices]
        return [(a, k) for a, k in out if k]


def _key(path: str, annotation: str) -> str:
    return f"{path}.{annotation}"


def _label_name(value: str, path: str) -> None:
    problems = names.qualified_name(value)
    if problems:
        raise InputError(f"invalid label name {value!r}: {names.first(problems)}", field=path)


def _int32(value: str, path: str, what: str = "must be a numeric value") -> int:
    try:
        number = int(value, 10)
    except ValueError:
        raise InputError(f"{what}, not {value!r}", field=path) from None
    if not -(2**31) <= number <= INT32_MAX:
        raise InputError(f"{what} (32 bits), not {value!r}", field=path)
    return number


def _slice_layers(text: str, path: str) -> tuple[tuple[str, int], ...]:
    """The multi-layer slice annotation: a JSON list of 1-3 ``{topology, size}``."""
    try:
        data = json.loads(text)
    except ValueError:
        raise InputError("must be a JSON list of {\"topology\": ..., \"size\": ...}",
                         field=path) from None
    if not isinstance(data, list) or not 1 <= len(data) <= 3:
        raise InputError("must list 1 to 3 slice layers", field=path)
    layers: list[tuple[str, int]] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("topology"), str) or (
                not isinstance(item.get("size"), int) or isinstance(item.get("size"), bool)):
            raise InputError(f"layer {i} must be {{\"topology\": <label key>, \"size\": "
                             "<pods>}", field=path)
        key, size = item["topology"], item["size"]
        _label_name(key, path)
        if size < 1:
            raise InputError(f"layer {i} size must be greater than or equal to 1", field=path)
        if any(k == key for k, _ in layers):
            raise InputError(f"layer topologies must be unique; {key!r} repeats", field=path)
        if layers and layers[-1][1] % size:
            raise InputError(f"layer {i} size {size} must divide the size of the layer above "
                             f"({layers[-1][1]})", field=path)
        layers.append((key, size))
    return tuple(layers)


def parse_tas(annotations: Mapping[str, str], path: str, count: int | None = None
              ) -> TasRequest:
    """A PodSet's request from its template's annotations at ``path``, checked as Kueue's
    webhooks check it (``count``: the PodSet's pods, for the slice size's upper bound)."""
    get = annotations.get
    found = [k for k in (REQUIRED, PREFERRED, UNCONSTRAINED) if k in annotations]
    if len(found) > 1:
        raise InputError("must not contain more than one topology annotation: "
                         f"[{REQUIRED!r}, {PREFERRED!r}, {UNCONSTRAINED!r}]", field=path)
    required, preferred = get(REQUIRED, ""), get(PREFERRED, "")
    for annotation, value in ((REQUIRED, required), (PREFERRED, preferred),
                              (SLICE_REQUIRED, get(SLICE_REQUIRED, ""))):
        if annotation in annotations:
            _label_name(value, _key(path, annotation))
    unconstrained = False
    if UNCONSTRAINED in annotations:
        value = annotations[UNCONSTRAINED]
        if value not in _BOOLS:
            raise InputError(f"must be a boolean value, not {value!r}",
                             field=_key(path, UNCONSTRAINED))
        unconstrained = _BOOLS[value]
    group = get(GROUP_NAME)
    if group is not None:
        where = _key(path, GROUP_NAME)
        if group.isdigit():
            raise InputError(f"must not be a number, not {group!r}", field=where)
        for other in (SLICE_SIZE, SLICE_REQUIRED):
            if other in annotations:
                raise InputError(f"may not be set when {other!r} is specified", field=where)
        if REQUIRED not in annotations and PREFERRED not in annotations:
            raise InputError(f"may not be set when neither {PREFERRED!r} nor {REQUIRED!r} is "
                             "specified", field=where)
    slices: tuple[tuple[str, int], ...] = ()
    size_text = get(SLICE_SIZE)
    if size_text is not None:
        size = _int32(size_text, _key(path, SLICE_SIZE))
        if size < 1:
            raise InputError(f"must be greater than or equal to 1, not {size}",
                             field=_key(path, SLICE_SIZE))
        if SLICE_REQUIRED not in annotations:
            raise InputError(f"may not be set when {SLICE_REQUIRED!r} is not specified",
                             field=_key(path, SLICE_SIZE))
        slices = ((annotations[SLICE_REQUIRED], size),)
    elif SLICE_REQUIRED in annotations:
        raise InputError(f"must be set when {SLICE_REQUIRED!r} is specified",
                         field=_key(path, SLICE_SIZE))
    if SLICE_CONSTRAINTS in annotations:
        where = _key(path, SLICE_CONSTRAINTS)
        for other in (SLICE_REQUIRED, SLICE_SIZE, GROUP_NAME):
            if other in annotations:
                raise InputError(f"may not be set together with {other!r}", field=where)
        slices = _slice_layers(annotations[SLICE_CONSTRAINTS], where)
    request = TasRequest(required, preferred, unconstrained, slices, group or "", path,
                         SLICE_SIZE if size_text is not None else SLICE_CONSTRAINTS)
    if count is not None:
        check_slice_count(request, count)
    return request


def check_slice_count(request: TasRequest, count: int) -> None:
    """``ValidateSliceSizeAnnotationUpperBound``: the (outer) slice size is at most the
    PodSet's count; and (the KEP's rule) divides it."""
    if not request.slices:
        return
    outer = request.slices[0][1]
    where = _key(request.field, request.slice_annotation)
    if outer > count:
        raise InputError(f"must not be greater than pod set count {count}", field=where)
    if count % outer:
        raise InputError(f"slice size {outer} must divide the pod set count {count} "
                         "(Kueue's TAS KEP; its scheduler would drop the remainder)",
                         field=where)


def check_groups(podsets: Sequence[tuple[str, int, TasRequest]]) -> None:
    """``ValidatePodSetGroupingTopology`` over (name, count, request) of a kind's PodSets:
    a group is exactly two PodSets, one of them of one pod, asking for the same level."""
    by_group: dict[str, list[tuple[str, int, TasRequest]]] = {}
    for item in podsets:
        if item[2].group:
            by_group.setdefault(item[2].group, []).append(item)
    for name, members in by_group.items():
        where = _key(members[0][2].field, GROUP_NAME)
        if len(members) != 2:
            raise InputError(f"can only define groups of exactly 2 pod sets, got: "
                             f"{len(members)} pod set(s)", field=where)
        (_, c1, r1), (_, c2, r2) = members
        if c1 != 1 and c2 != 1:
            raise InputError("can only define groups where at least one pod set has only 1 "
                             f"replica, got: {c1} replica(s) and {c2} replica(s) in the group",
                             field=where)
        if (r1.required, r1.preferred) != (r2.required, r2.preferred):
            raise InputError(f"must specify {REQUIRED!r} or {PREFERRED!r} topology consistent "
                             f"with {_key(members[1][2].field, GROUP_NAME)!r} in group "
                             f"{name!r}", field=where)


# -- the gang of one PodSet -------------------------------------------------------------------


def podset_node(name: str, path: str, pods: Sequence[Pod], request: TasRequest,
                minimum: int, bound: int = 0) -> TreeNode:
    """The tree of one Kueue PodSet: its identical ``pods`` (pending, in rank order),
    ``minimum`` of all of them (``bound`` already running) needed, with the request's
    constraints; slices become required groups of consecutive pods (not when some pods
    already run: the rest is then one set)."""
    need = max(0, minimum - bound)
    first = pods[0]
    top = request.constraints()

    def leaf(label: str, at: str, members: Sequence[Pod], least: int,
             topo: tuple[Constraint, ...]) -> PodSet:
        return PodSet(label, at, tuple(p.key for p in members), dict(first.requests),
                      first.requirements, least, topo, from_limits=from_limits(members))

    if not request.slices or bound:
        return leaf(name, path, pods, need, top)

    def sliced(at: str, members: Sequence[Pod], layers: tuple[tuple[str, int], ...],
               label: str, topo: tuple[Constraint, ...], least_slices: int) -> TreeNode:
        key, size = layers[0]
        kids: list[Group | PodSet] = []
        for i in range(len(members) // size):
            part = members[i * size:(i + 1) * size]
            sub = f"slice-{i}"
            cons = (Constraint(key, "required"),)
            if len(layers) == 1:
                kids.append(leaf(sub, f"{at}/{sub}", part, size, cons))
            else:
                inner = sliced(f"{at}/{sub}", part, layers[1:], sub, cons,
                               size // layers[1][1])
                assert isinstance(inner, Group)
                kids.append(inner)
        return Group(label, at, kids, min_groups=least_slices, topology=topo)

    outer = request.slices[0][1]
    return sliced(path, pods, request.slices, name, top, math.ceil(need / outer))


def grouped(root: str, nodes: Sequence[tuple[TreeNode, TasRequest]]) -> list[Group | PodSet]:
    """Children of a workload root: the PodSets of a ``podset-group-name`` pair under one
    Group carrying their common constraint (so both land in one domain)."""
    out: list[Group | PodSet] = []
    done: set[str] = set()
    for node, request in nodes:
        if not request.group:
            out.append(node)
            continue
        if request.group in done:
            continue
        done.add(request.group)
        pair = [(n, r) for n, r in nodes if r.group == request.group]
        shared = request.constraints()
        kids = [replace(n, topology=tuple(c for c in n.topology if c not in shared))
                for n, _ in pair]
        for kid in kids:
            kid.path = f"{root}/{request.group}/{kid.name}"
            if isinstance(kid, Group):
                _repath(kid)
        out.append(Group(request.group, f"{root}/{request.group}", kids,
                         min_groups=len(kids), topology=shared))
    return out


def _repath(g: Group) -> None:
    for child in g.children:
        child.path = f"{g.path}/{child.name}"
        if isinstance(child, Group):
            _repath(child)


def check_levels(request: TasRequest, levels: Sequence[str] | None
                 ) -> tuple[TasRequest, InputError | None]:
    """Each level the request names against the levels of the inputs' Kueue Topologies
    (``levels``, widest first; None: no Topology, nothing to check).

    A required or slice level no Topology has raises (Kueue's "no requested topology
    level"). A preferred one is dropped: the request comes back without it, with the
    warning to give (Kueue itself would skip every flavor whose Topology lacks the level,
    "does not contain the requested level", and the workload would stay pending)."""
    if levels is None:
        return request, None
    known = f"(levels: {', '.join(levels)})"
    for annotation, key in request.levels():
        if key not in levels and annotation != PREFERRED:
            raise InputError(f"no requested topology level: {key} {known}",
                             field=_key(request.field, annotation))
    if request.preferred and request.preferred not in levels:
        note = InputError(
            f"no requested topology level: {request.preferred} {known}; placed without "
            "this preference (Kueue would leave it pending: no flavor's Topology contains "
            "the requested level)", field=_key(request.field, PREFERRED))
        return replace(request, preferred=""), note
    return request, None


def kueue_levels(inputs: Inputs) -> list[str] | None:
    """The levels of the Kueue Topologies in the inputs, widest first, each Topology's in
    its own order (None: there are none)."""
    found = [t for t in topologies(inputs) if t.api_version.startswith("kueue.x-k8s.io/")]
    if not found:
        return None
    return list(dict.fromkeys(k for t in found for k in t.levels))


# -- Jobs and JobSets -----------------------------------------------------------------------


@dataclass(frozen=True)
class JobTemplate:
    """A Job's spec as far as its pods go (``batch/v1`` JobSpec)."""

    parallelism: int
    completions: int | None
    indexed: bool
    template: PodTemplate
    request: TasRequest

    @property
    def count(self) -> int:
        """Pods running at once: ``parallelism`` capped at ``completions``."""
        if self.completions is not None:
            return min(self.parallelism, self.completions)
        return self.parallelism


@dataclass(frozen=True)
class KueueJob:
    name: str
    namespace: str
    spec: JobTemplate
    queue: str = ""
    uid: str | None = None
    min_parallelism: int | None = None
    origin: Origin = field(default_factory=Origin)
    priority_class: str = ""  # the kueue.x-k8s.io/priority-class label

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class ReplicatedJob:
    name: str
    replicas: int
    spec: JobTemplate
    exclusive: str = ""  # the exclusive-topology label key its Jobs each own a domain of
    node_selector: str | None = None  # the node-selector strategy annotation's value, if set


@dataclass(frozen=True)
class JobSet:
    name: str
    namespace: str
    replicated: tuple[ReplicatedJob, ...]
    queue: str = ""
    uid: str | None = None
    origin: Origin = field(default_factory=Origin)
    priority_class: str = ""  # the kueue.x-k8s.io/priority-class label

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _nonneg(obj: Mapping[str, Any], key: str, path: str, default: int | None
            ) -> int | None:
    if obj.get(key) is None:
        return default
    value = as_int(obj.get(key), f"{path}.{key}")
    if value < 0:
        raise InputError(f"must be greater than or equal to 0, not {value}",
                         field=f"{path}.{key}")
    if value > INT32_MAX:
        raise InputError(f"must fit in 32 bits, not {value}", field=f"{path}.{key}")
    return value


def _job_spec(spec: Mapping[str, Any], path: str, indexed_default: bool,
              restart_default: str | None, whole: bool = True) -> JobTemplate:
    """A JobSpec; ``whole``: its pods are the whole PodSet (a Job; in a JobSet the
    PodSet is every replica's, checked by the caller)."""
    # The Job's defaults (kubernetes pkg/apis/batch/v1 SetDefaults_Job): with neither
    # count set both are 1 (which an Indexed Job then satisfies); else parallelism is 1.
    both_unset = spec.get("parallelism") is None and spec.get("completions") is None
    parallelism = _nonneg(spec, "parallelism", path, 1)
    completions = _nonneg(spec, "completions", path, 1 if both_unset else None)
    mode = as_str(spec.get("completionMode"), f"{path}.completionMode") or (
        "Indexed" if indexed_default else "NonIndexed")
    if mode not in ("NonIndexed", "Indexed"):
        raise InputError(f"unsupported value {mode!r}; must be one of: NonIndexed, Indexed",
                         field=f"{path}.completionMode")
    if mode == "Indexed" and completions is None:
        raise InputError("when completionMode is Indexed, completions must be set",
                         field=f"{path}.completions")
    tmpl_path = f"{path}.template"
    raw = as_mapping(spec.get("template"), tmpl_path)
    if not raw:
        raise InputError("is required", field=tmpl_path)
    pod_spec = as_mapping(raw.get("spec"), f"{tmpl_path}.spec")
    restart = as_str(pod_spec.get("restartPolicy"), f"{tmpl_path}.spec.restartPolicy") or (
        restart_default or "Always")
    if restart not in ("Never", "OnFailure"):
        raise InputError(f"unsupported value {restart!r}; a Job's pods need restartPolicy "
                         "Never or OnFailure", field=f"{tmpl_path}.spec.restartPolicy")
    template = parse_pod_template(raw, tmpl_path)
    assert parallelism is not None
    count = min(parallelism, completions) if completions is not None else parallelism
    request = parse_tas(template.annotations, f"{tmpl_path}.metadata.annotations",
                        count if whole else None)
    return JobTemplate(parallelism, completions, mode == "Indexed", template, request)


def _exclusive(annotations: Mapping[str, Any], path: str) -> tuple[str, str | None] | None:
    """(label key, node-selector value or None) of an ``exclusive-topology`` annotation in
    ``annotations`` at ``path`` (a JobSet's, a replicated Job template's); None: not set."""
    if annotations.get(EXCLUSIVE) is None:
        return None
    where = f"{path}.{EXCLUSIVE}"
    key = as_str(annotations.get(EXCLUSIVE), where)
    problems = names.qualified_name(key)
    if problems:  # the pod affinity's topologyKey: the API server would refuse the pods
        raise InputError(f"invalid label key {key!r}: {names.first(problems)}", field=where)
    value = annotations.get(NODE_SELECTOR_STRATEGY)
    return key, None if value is None else as_str(value, f"{path}.{NODE_SELECTOR_STRATEGY}")


def _queue(meta: Mapping[str, Any]) -> str:
    labels = as_mapping(meta.get("labels"), "metadata.labels")
    return as_str(labels.get(QUEUE_LABEL), f"metadata.labels.{QUEUE_LABEL}")


def _priority_class(meta: Mapping[str, Any]) -> str:
    return class_label(as_mapping(meta.get("labels"), "metadata.labels"))


def parse_job(obj: Mapping[str, Any], origin: Origin | None = None) -> KueueJob:
    name = object_name(obj, "Job")
    with about(f"Job/{name}"):
        problems = names.label_value(name)
        if problems:  # the API server adds it to the pod template's labels, then checks them
            raise InputError(f"invalid Job name {name!r}: its pods' {JOB_NAME_LABEL} label "
                             f"would be invalid: {names.first(problems)}",
                             field="metadata.name")
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = _job_spec(as_mapping(obj.get("spec"), "spec"), "spec", False, None)
        annotations = as_mapping(meta.get("annotations"), "metadata.annotations")
        minimum = None
        if annotations.get(MIN_PARALLELISM) is not None:
            where = f"metadata.annotations.{MIN_PARALLELISM}"
            minimum = _int32(as_str(annotations.get(MIN_PARALLELISM), where), where)
            if not 0 < minimum < spec.count:
                raise InputError(f"should be between 0 and {spec.count}, not {minimum}",
                                 field=where)
        if spec.count > MAX_PODS:
            raise InputError(f"would create {spec.count:,} pods; gangsched reads at most "
                             f"{MAX_PODS:,} per Job", field="spec.parallelism")
        return KueueJob(name, as_str(meta.get("namespace"), "metadata.namespace") or "default",
                        spec, _queue(meta), as_str(meta.get("uid"), "metadata.uid") or None,
                        minimum, origin or Origin(obj=f"Job/{name}"), _priority_class(meta))


def _check_generated_names(jobset: str, rjob: str, replicas: int, job: JobTemplate,
                           path: str) -> None:
    """The JobSet webhook's check (``validateCreate``): the longest Job name it generates,
    and for an Indexed Job with completions the longest pod name (with the Job
    controller's 5-character suffix), are RFC 1035 labels."""
    last = max(replicas - 1, 0)
    longest = f"{jobset}-{rjob}-{last}"
    problems = names.dns1035_label(longest)
    if not problems and job.indexed and job.completions is not None:
        longest = f"{longest}-{max(job.completions - 1, 0)}-abcde"
        problems = names.dns1035_label(longest)
    if problems:
        what = "pod" if longest.endswith("-abcde") else "Job"
        raise InputError(f"generated {what} name {longest!r} is invalid: "
                         f"{names.first(problems)}", field=path)


def parse_jobset(obj: Mapping[str, Any], origin: Origin | None = None) -> JobSet:
    name = object_name(obj, "JobSet")
    with about(f"JobSet/{name}"):
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        everywhere = _exclusive(as_mapping(meta.get("annotations"), "metadata.annotations"),
                                "metadata.annotations")
        queue = _queue(meta)
        out: list[ReplicatedJob] = []
        for item, path in mappings(spec.get("replicatedJobs"), "spec.replicatedJobs"):
            rname = required_str(item, "name", path)
            problems = names.dns1123_label(rname)
            if problems:
                raise InputError(f"invalid name {rname!r}: {names.first(problems)}",
                                 field=f"{path}.name")
            if any(r.name == rname for r in out):
                raise InputError(f"duplicate replicatedJob name {rname!r}", field=f"{path}.name")
            replicas = _nonneg(item, "replicas", path, 1)
            assert replicas is not None
            template = as_mapping(item.get("template"), f"{path}.template")
            job = _job_spec(as_mapping(template.get("spec"), f"{path}.template.spec"),
                            f"{path}.template.spec", True, "OnFailure", whole=False)
            at = f"{path}.template.metadata"
            own = _exclusive(as_mapping(as_mapping(template.get("metadata"), at).get(
                "annotations"), f"{at}.annotations"), f"{at}.annotations")
            key, strategy = everywhere or ("", None)
            if own is not None:  # the controller copies the JobSet's, then the template's
                key, strategy = own[0], own[1] if own[1] is not None else strategy
            if key and strategy is None and queue and job.request.slices:
                raise InputError(f"may not be set together with {job.request.slice_annotation!r}"
                                 " (gangsched places each Job whole in its own domain, or a "
                                 "PodSet in slices; not both)",
                                 field=f"{at}.annotations.{EXCLUSIVE}" if own is not None
                                 else f"metadata.annotations.{EXCLUSIVE}")
            _check_generated_names(name, rname, replicas, job, f"{path}.name")
            out.append(ReplicatedJob(rname, replicas, job, key, strategy))
        total = sum(r.replicas * r.spec.count for r in out)
        if total > MAX_PODS:
            raise InputError(f"would create {total:,} pods; gangsched reads at most "
                             f"{MAX_PODS:,} per JobSet", field="spec.replicatedJobs")
        for r in out:  # a PodSet is every replica's pods
            check_slice_count(r.spec.request, r.replicas * r.spec.count)
        check_groups([(r.name, r.replicas * r.spec.count, r.spec.request) for r in out])
        return JobSet(name, as_str(meta.get("namespace"), "metadata.namespace") or "default",
                      tuple(out), queue, as_str(meta.get("uid"), "metadata.uid") or None,
                      origin or Origin(obj=f"JobSet/{name}"), _priority_class(meta))


def _handle_job(doc: Document, inputs: Inputs) -> None:
    job = parse_job(with_generated_name(doc), Origin.of(doc))
    inputs.claim(doc, job.key)
    inputs.add_object(doc, job)


def _handle_jobset(doc: Document, inputs: Inputs) -> None:
    js = parse_jobset(with_generated_name(doc), Origin.of(doc))
    inputs.claim(doc, js.key)
    inputs.add_object(doc, js)


# batch/v1 Job (Kubernetes 1.37 JobSpec) and JobSet v1alpha2 (api/jobset/v1alpha2/
# jobset_types.go at 08dfbdf); policies gangsched does not read are kept open ("any").
schema.define({
    "batch.v1.Job": {"apiVersion": "string", "kind": "string",
                     "metadata": "meta.v1.ObjectMeta", "spec": "batch.v1.JobSpec",
                     "status": "any"},
    "batch.v1.JobSpec": {"parallelism": "int32", "completions": "int32",
                         "activeDeadlineSeconds": "int64", "podFailurePolicy": "any",
                         "successPolicy": "any", "backoffLimit": "int32",
                         "backoffLimitPerIndex": "int32", "maxFailedIndexes": "int32",
                         "selector": "meta.v1.LabelSelector", "manualSelector": "boolean",
                         "template": "core.v1.PodTemplateSpec",
                         "ttlSecondsAfterFinished": "int32", "completionMode": "string",
                         "suspend": "boolean", "podReplacementPolicy": "string",
                         "managedBy": "string"},
    "batch.v1.JobTemplateSpec": {"metadata": "meta.v1.ObjectMeta", "spec": "batch.v1.JobSpec"},
    "jobset.JobSet": {"apiVersion": "string", "kind": "string",
                      "metadata": "meta.v1.ObjectMeta", "spec": "jobset.JobSetSpec",
                      "status": "any"},
    "jobset.JobSetSpec": {"replicatedJobs": {"list": "jobset.ReplicatedJob"},
                          "network": "jobset.Network", "successPolicy": "any",
                          "failurePolicy": "any", "startupPolicy": "any",
                          "suspend": "boolean", "coordinator": "any", "managedBy": "string",
                          "ttlSecondsAfterFinished": "int32", "volumeClaimPolicies": "any"},
    "jobset.ReplicatedJob": {"name": "string", "groupName": "string",
                             "template": "batch.v1.JobTemplateSpec", "replicas": "int32",
                             "dependsOn": "any"},
    "jobset.Network": {"enableDNSHostnames": "boolean", "subdomain": "string",
                       "publishNotReadyAddresses": "boolean"},
})


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_SUFFIX[b % len(_SUFFIX)] for b in digest[:5])


def _job_pods(namespace: str, job: str, spec: JobTemplate, labels: Mapping[str, str],
              existing: Sequence[Pod], uid: str | None = None,
              annotations: Mapping[str, str] | None = None,
              requirements: NodeRequirements | None = None) -> list[Pod]:
    """The pods the Job controller creates for one Job (``existing``: its pods already
    in the inputs, used instead; ``annotations`` and ``requirements`` the JobSet
    controller's additions to the template)."""
    extra = dict(annotations or {})
    needs = requirements or spec.template.requirements
    taken = {p.labels.get(COMPLETION_INDEX) for p in existing}
    out = list(existing)
    index = 0
    while len(out) < spec.count and index < 10 * spec.count + 10:
        if spec.indexed and str(index) in taken:
            index += 1
            continue
        base = {**spec.template.labels, **labels, JOB_NAME_LABEL: job,
                LEGACY_JOB_NAME_LABEL: job}
        if uid:
            base[CONTROLLER_UID_LABEL] = uid
        annotations = {**spec.template.annotations, **extra}
        if spec.indexed:
            base[COMPLETION_INDEX] = str(index)
            annotations[COMPLETION_INDEX] = str(index)
            name = f"{job}-{index}-{_suffix(f'{namespace}/{job}/{index}')}"
        else:
            name = f"{job}-{_suffix(f'{namespace}/{job}/{index}')}"
        out.append(spec.template.make_pod(name, namespace, labels=base, annotations=annotations,
                                          requirements=needs))
        index += 1
    return out


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _placement(namespace: str, job: str, r: ReplicatedJob) -> dict[str, Any]:
    """What the JobSet controller adds to a Job's pods for exclusive placement: the
    annotations it copies and, with the node-selector strategy, a node selector on the
    Job's own node label and a toleration of its taint (``addNamespacedJobNodeSelector``,
    ``addTaintToleration``)."""
    if not r.exclusive:
        return {}
    annotations = {EXCLUSIVE: r.exclusive}
    if r.node_selector is None:
        return {"annotations": annotations}
    annotations[NODE_SELECTOR_STRATEGY] = r.node_selector
    needs = r.spec.template.requirements
    selector = {**dict(needs.node_selector), NAMESPACED_JOB: f"{namespace}_{job}"}
    return {"annotations": annotations, "requirements": replace(
        needs, node_selector=tuple(sorted(selector.items())),
        tolerations=(*needs.tolerations, Toleration(NO_SCHEDULE, "Exists", "", "NoSchedule")))}


def _by_label(pods: Iterable[Pod], namespace: str, label: str, value: str) -> list[Pod]:
    return [p for p in pods if p.namespace == namespace and p.labels.get(label) == value]


def job_pods(job: KueueJob, pods: Sequence[Pod]) -> tuple[list[Pod], list[Pod]]:
    """(all of the Job's pods, those created here)."""
    existing = _by_label(pods, job.namespace, JOB_NAME_LABEL, job.name)
    every = _job_pods(job.namespace, job.name, job.spec, {}, existing, job.uid)
    return every, every[len(existing):]


def _completion_index(pod: Pod) -> int:
    """The pod's ``job-completion-index`` label (absent or empty: 0), -1 when it is no
    index (a label value may be any word; :func:`_bad_index` names such a pod)."""
    raw = pod.labels.get(COMPLETION_INDEX) or "0"
    return int(raw) if re.fullmatch(r"[0-9]{1,9}", raw) else -1


def _bad_index(pods: Iterable[Pod]) -> Pod | None:
    """The first of ``pods`` whose completion index label is no index."""
    return next((p for p in pods if _completion_index(p) < 0), None)


def jobset_pods(js: JobSet, pods: Sequence[Pod]) -> tuple[dict[str, list[Pod]], list[Pod]]:
    """(pods per replicated Job in rank order, those created here)."""
    mine = _by_label(pods, js.namespace, JOBSET_NAME_LABEL, js.name)
    out: dict[str, list[Pod]] = {}
    created: list[Pod] = []
    global_index = 0
    for r in js.replicated:
        out[r.name] = []
        for j in range(r.replicas):
            job = f"{js.name}-{r.name}-{j}"  # placement.GenJobName
            labels = {JOBSET_NAME_LABEL: js.name, REPLICATED_JOB_LABEL: r.name,
                      JOB_INDEX_LABEL: str(j), JOB_GLOBAL_INDEX_LABEL: str(global_index),
                      JOB_KEY_LABEL: _sha1(f"{js.namespace}/{job}")}
            existing = [p for p in mine if p.labels.get(JOB_NAME_LABEL) == job]
            every = _job_pods(js.namespace, job, r.spec, labels, existing,
                              **_placement(js.namespace, job, r))
            created.extend(every[len(existing):])
            out[r.name].extend(sorted(every, key=_completion_index))
            global_index += 1
    return out, created


# -- plain pod groups -------------------------------------------------------------------------


def _pod_origins(inputs: Inputs) -> dict[str, Origin]:
    out: dict[str, Origin] = {}
    for doc in inputs.documents:
        if doc.kind != "Pod":
            continue
        meta = with_generated_name(doc).get("metadata")
        if isinstance(meta, Mapping):
            ns = meta.get("namespace") or "default"
            out[f"{ns}/{meta.get('name')}"] = Origin.of(doc)
    return out


def _group_name(pod: Pod) -> str | None:
    return pod.annotations.get(POD_GROUP_NAME) or pod.labels.get(POD_GROUP_NAME)


def _pod_error(pod: Pod, origins: Mapping[str, Origin], message: str, at: str) -> str:
    origin = origins.get(pod.key, Origin(obj=f"Pod/{pod.name}"))
    return str(origin.error(message, at))


def _pod_group(name: str, namespace: str, pods: Sequence[Pod], origins: Mapping[str, Origin],
               levels: Sequence[str] | None, warnings: list[str],
               queues: Queues | None = None, priorities: Priorities | None = None) -> Workload:
    key = f"{namespace}/{name}"
    workload = Workload(name=key, kind="Pod", tree=None,
                        priority=max((p.priority for p in pods), default=0))
    ordered = sorted(pods, key=lambda p: natural_key(p.name))
    labelled = next((p for p in ordered if p.labels.get(PRIORITY_CLASS_LABEL)), None)
    if priorities is not None and labelled is not None and labelled.labels.get(QUEUE_LABEL):
        ranked = priorities.of(labelled.labels[PRIORITY_CLASS_LABEL], workload.priority)
        if isinstance(ranked, InputError):
            workload.invalid = _pod_error(labelled, origins, ranked.message, ranked.field or "")
            return workload
        workload.priority = ranked
    counts: dict[str, list[Pod]] = {}
    for pod in ordered:
        at = f"metadata.annotations.{POD_GROUP_TOTAL_COUNT}"
        text = pod.annotations.get(POD_GROUP_TOTAL_COUNT)
        if text is None:
            workload.invalid = _pod_error(pod, origins, f"the {POD_GROUP_TOTAL_COUNT} annotation "
                                          f"must be set with the {POD_GROUP_NAME} label", at)
            return workload
        counts.setdefault(text, []).append(pod)
    first = ordered[0]
    if names.dns1123_subdomain(name):
        workload.invalid = _pod_error(first, origins, f"invalid pod group name {name!r}: "
                                      f"{names.first(names.dns1123_subdomain(name))}",
                                      f"metadata.labels.{POD_GROUP_NAME}")
        return workload
    if len(counts) > 1:
        workload.invalid = _pod_error(first, origins, "pods of one group must have the same "
                                      f"{POD_GROUP_TOTAL_COUNT}, got {sorted(counts)}",
                                      f"metadata.annotations.{POD_GROUP_TOTAL_COUNT}")
        return workload
    where = f"metadata.annotations.{POD_GROUP_TOTAL_COUNT}"
    try:
        total = _int32(next(iter(counts)), where, "must be an integer")
    except InputError as err:
        workload.invalid = _pod_error(first, origins, err.message, where)
        return workload
    if total < 1:
        workload.invalid = _pod_error(first, origins, f"must be greater than or equal to 1, "
                                      f"not {total}", where)
        return workload
    queue_names = {p.labels.get(QUEUE_LABEL, "") for p in ordered}
    if len(queue_names) > 1:
        workload.invalid = _pod_error(first, origins, "pods of one group must have the same "
                                      f"queue, got {sorted(queue_names)}",
                                      f"metadata.labels.{QUEUE_LABEL}")
        return workload
    roles: dict[str, list[Pod]] = {}
    hashed = [p for p in ordered if p.annotations.get(ROLE_HASH)]
    for pod in hashed:
        roles.setdefault(pod.annotations[ROLE_HASH], []).append(pod)
    shapes = identical([p for p in ordered if p not in hashed])
    for i, members in enumerate(shapes):  # Kueue hashes each pod's shape into its role
        roles.setdefault(MAIN if len(shapes) == 1 and not roles else f"role-{i}",
                         []).extend(members)
    if len(ordered) < total:
        workload.waiting = (f"waiting for pods: group has {len(ordered)} of "
                            f"{POD_GROUP_TOTAL_COUNT} {total}")
        return workload
    bound = sum(1 for p in ordered if p.node_name)
    nodes: list[tuple[TreeNode, TasRequest]] = []
    notes: list[str] = []
    left = max(0, total - bound)
    every = len(ordered) - bound <= left  # no more pods than the group needs: all of them
    requests: dict[str, TasRequest] = {}
    for role, members in roles.items():  # each role's request, from its first pod
        head = members[0]
        try:
            requests[role] = parse_tas(head.annotations, "metadata.annotations")
        except InputError as err:
            workload.invalid = str(origins.get(head.key, Origin(obj=f"Pod/{head.name}"))
                                   .locate(err))
            return workload
    queue = next(iter(queue_names))
    if queues is not None and queue and bound < len(ordered):
        got = queues.assign(namespace, queue, [asked(role, members, len(members),
                                                     requests[role])
                                               for role, members in roles.items()])
        if isinstance(got, str):
            workload.waiting, workload.waiting_minimum = got, total
            return workload
        roles = {role: got.pods(role, members) for role, members in roles.items()}
        ordered = [p for members in roles.values() for p in members]
        levels = None  # the flavors have the levels asked for
    for role, members in roles.items():
        pending = [p for p in members if not p.node_name]
        head = members[0]
        origin = origins.get(head.key, Origin(obj=f"Pod/{head.name}"))
        try:
            request, note = check_levels(requests[role], levels)
            if note is not None:
                notes.append(str(origin.locate(note)))
            if request.slices and len(pending) % request.slices[0][1]:
                raise InputError(f"slice size {request.slices[0][1]} must divide the role's "
                                 f"{len(pending)} pods", field=_key(request.field, SLICE_SIZE))
        except InputError as err:
            workload.invalid = str(origin.locate(err))
            return workload
        if not pending:
            continue
        for sub in identical(pending):  # a role hash may hold pods of several shapes
            label = role if len(sub) == len(pending) else f"{role}-{len(nodes)}"
            nodes.append((podset_node(label, f"{key}/{label}", sub, request,
                                      len(sub) if every else 0), request))
    warnings.extend(notes)
    if not nodes:
        workload.waiting = "no pending pods"
        return workload
    kids = [n for n, _ in nodes]
    need = sum(n.size for n in kids)
    root = Group(name, key, kids, min_groups=len(kids), min_pods=min(left, need), kind="Pod",
                 source=key, priority=workload.priority)
    workload.tree = root
    workload.pods = {p.key: p for p in ordered if not p.node_name}
    return workload


# -- the builder ------------------------------------------------------------------------------


def jobs(inputs: Inputs) -> list[KueueJob]:
    return [o for o in inputs.objects.get("Job", []) if isinstance(o, KueueJob)]


def jobsets(inputs: Inputs) -> list[JobSet]:
    return [o for o in inputs.objects.get("JobSet", []) if isinstance(o, JobSet)]


@dataclass(frozen=True)
class _PodSetPods:
    """One PodSet of a Job or JobSet: its pending pods in rank order, how many of all its
    pods are needed and how many already run; of a JobSet's replicated Job placed
    exclusively, the label key and all its pods."""

    name: str
    pending: list[Pod]
    request: TasRequest
    minimum: int
    bound: int
    exclusive: str = ""
    every: Sequence[Pod] = ()


def exclusive_set(priority: int) -> str:
    """The set of a JobSet exclusive constraint: every Job placed exclusively at
    ``priority``, in any namespace, as the anti-affinity the pod webhook gives a Job's
    leader reaches (any other ``job-key``, ``namespaceSelector: {}``, the same
    ``jobset.sigs.k8s.io/priority``)."""
    return f"{JOB_KEY_LABEL} priority={priority}"


@dataclass
class _Owners:
    """The cluster's nodes, to pin a Job to the domain its running pods are in, and the
    domains running pods hold (pod key -> claims), for :attr:`Contribution.claims`."""

    nodes: Mapping[str, Node]
    claims: dict[str, tuple[Claim, ...]]

    def jobs(self, parent: str, pods: Sequence[Pod], key: str) -> list[Group]:
        """One Group per Job of ``pods`` (an exclusive replicated Job's, in rank order) at
        ``parent``: its pending pods, all needed, in a domain of ``key`` it owns; pinned to
        the domain its running pods are in, which they hold."""
        by_job: dict[str, list[Pod]] = {}
        for pod in pods:
            by_job.setdefault(pod.labels.get(JOB_NAME_LABEL, ""), []).append(pod)
        out: list[Group] = []
        for job, members in by_job.items():
            path, owner = f"{parent}/{job}", exclusive_set(members[0].priority)
            held = [p for p in members if p.node_name]
            labels = [self.nodes[p.node_name].labels for p in held
                      if p.node_name and p.node_name in self.nodes]
            value = next((found[key] for found in labels if key in found), None)
            self.claims.update((p.key, ((owner, key, path),)) for p in held)
            pending = [p for p in members if not p.node_name]
            if not pending:
                continue
            shapes = identical(pending)
            sets: list[Group | PodSet] = [
                podset("pods" if len(shapes) == 1 else f"pods-{i}", path, same, len(same))
                for i, same in enumerate(shapes)]
            out.append(Group(job, path, sets, min_groups=len(sets),
                             topology=(Constraint(key, "required", value, owner),)))
        return out

    def moved(self, root: Group, pods: Sequence[Pod]) -> None:
        """Claims of running pods after their Job's Group moved (a ``podset-group-name``
        pair): owned by its path in the finished tree."""
        held: dict[str, list[Pod]] = {}
        for p in pods:
            if p.node_name:
                held.setdefault(p.labels.get(JOB_NAME_LABEL, ""), []).append(p)
        for node in walk(root):
            for c in node.topology:
                if c.exclusive is not None:
                    self.claims.update((p.key, ((c.exclusive, c.key, node.path),))
                                       for p in held.get(node.name, ()))


def asked(name: str, pods: Sequence[Pod], count: int, request: TasRequest,
          least: int | None = None) -> Asked:
    """A Kueue PodSet as the flavor assigner reads it (``pods``: not empty; ``least``:
    the fewest pods partial admission may admit)."""
    return Asked(name, pods[0], count, tuple(k for _, k in request.levels()), request.asked,
                 request.group, least)


def _assigned(queues: Queues | None, namespace: str, queue: str,
              podsets: Sequence[_PodSetPods]) -> Assigned | str | None:
    """The flavors of a workload's PodSets (None: no queue objects in the inputs, or no
    pod left to place), or why it waits."""
    if queues is None or not any(ps.pending for ps in podsets):
        return None
    return queues.assign(namespace, queue, [
        asked(ps.name, ps.every or ps.pending, ps.bound + len(ps.pending), ps.request,
              ps.minimum if ps.minimum < ps.bound + len(ps.pending) else None)
        for ps in podsets if ps.every or ps.pending])


def _flavored(podsets: Sequence[_PodSetPods], pods: Sequence[Pod], assigned: Assigned
              ) -> tuple[list[_PodSetPods], list[Pod]]:
    """The PodSets and pods with their flavors' node labels and tolerations."""
    out = [replace(ps, pending=assigned.pods(ps.name, ps.pending),
                   every=assigned.pods(ps.name, ps.every)) for ps in podsets]
    swapped = {p.key: p for ps in out for p in (*ps.pending, *ps.every)}
    return out, [swapped.get(p.key, p) for p in pods]


def _workload(kind: str, key: str, name: str, podsets: Sequence[_PodSetPods],
              pods: Sequence[Pod], origin: Origin, levels: Sequence[str] | None,
              warnings: list[str], owners: _Owners | None = None,
              assigned: Assigned | str | None = None, priorities: Priorities | None = None,
              priority_class: str = "") -> Workload:
    """The Workload of a Job or JobSet; with ``assigned`` (queue objects in the inputs),
    its flavors or why it waits, and then its levels were checked by the flavors; its
    priority from the WorkloadPriorityClass its label names (``priority_class``), if any."""
    own = max((p.priority for p in pods), default=0)
    ranked = own if priorities is None else priorities.of(priority_class, own)
    if isinstance(ranked, InputError):
        return Workload(name=key, kind=kind, tree=None, invalid=str(origin.locate(ranked)))
    priority = ranked
    workload = Workload(name=key, kind=kind, tree=None, priority=priority, source=origin.where)
    if isinstance(assigned, str):
        workload.waiting = assigned
        workload.waiting_minimum = sum(ps.minimum for ps in podsets)
        return workload
    if assigned is not None:
        podsets, pods = _flavored(podsets, pods, assigned)
        levels = None
    nodes: list[tuple[TreeNode, TasRequest]] = []
    notes: list[str] = []
    try:
        for ps in podsets:
            request, note = check_levels(ps.request, levels)
            if note is not None:
                notes.append(str(origin.locate(note)))
            if ps.exclusive and owners is not None:  # each Job in a domain of its own
                jobs = owners.jobs(f"{key}/{ps.name}", ps.every, ps.exclusive)
                if jobs:
                    nodes.append((Group(ps.name, f"{key}/{ps.name}", list(jobs),
                                        min_groups=len(jobs), topology=request.constraints()),
                                  request))
            elif ps.pending:
                nodes.append((podset_node(ps.name, f"{key}/{ps.name}", ps.pending, request,
                                          ps.minimum, ps.bound), request))
    except InputError as err:
        workload.invalid = str(origin.locate(err))
        return workload
    warnings.extend(notes)
    kids = grouped(key, [(n, r) for n, r in nodes if n.size])
    if not kids:
        workload.waiting = "no pending pods"
        return workload
    workload.tree = Group(name, key, list(kids), min_groups=len(kids), kind=kind, source=key,
                          priority=priority)
    if owners is not None and any(ps.exclusive for ps in podsets):
        owners.moved(workload.tree, pods)
    workload.pods = {p.key: p for p in pods if not p.node_name}
    return workload


def _exclusive_jobs(js: JobSet, per_job: Mapping[str, list[Pod]], owners: _Owners
                    ) -> tuple[Workload, list[Pod]] | None:
    """A JobSet Kueue does not manage whose replicated Jobs (some) place each Job
    exclusively: their Jobs as independent gangs under a basic root (the Jobs of a JobSet
    start on their own), with all their pods; None when none does."""
    mine = [p for r in js.replicated if r.exclusive and r.node_selector is None
            for p in per_job[r.name]]
    if not mine:
        return None
    priority = max((p.priority for p in mine), default=0)
    workload = Workload(name=js.key, kind="JobSet", tree=None, priority=priority,
                        source=js.origin.where)
    kids: list[Group | PodSet] = []
    for r in js.replicated:
        if r.exclusive and r.node_selector is None:
            kids.extend(owners.jobs(js.key, per_job[r.name], r.exclusive))
    if not kids:
        workload.waiting = "no pending pods"
        return workload, mine
    workload.tree = Group(js.name, js.key, kids, kind="JobSet", source=js.key,
                          priority=priority)
    workload.pods = {p.key: p for p in mine if not p.node_name}
    return workload, mine


def demands(inputs: Inputs) -> Iterable[Demand]:
    """The pods every Job and JobSet asks for (each replicated Job's)."""
    for job in jobs(inputs):
        yield Demand(job.origin, "spec.parallelism", job.spec.count)
    for js in jobsets(inputs):
        for i, r in enumerate(js.replicated):
            yield Demand(js.origin, f"spec.replicatedJobs[{i}].replicas",
                         r.replicas * r.spec.count)


def _warn_unmanaged(out: Contribution, kind: str, origin: Origin, name: str,
                    requests: Iterable[TasRequest]) -> None:
    if any(r.asked or r.group for r in requests):
        where = f"{origin.where} {kind}/{name}".strip()
        out.warnings.append(f"{where}: no {QUEUE_LABEL} label, so Kueue does not manage it: "
                            "its topology annotations are ignored")


def build(inputs: Inputs) -> Contribution:
    out = Contribution()
    found: list[dict[str, Origin]] = []

    def origins() -> dict[str, Origin]:  # where each pod was read: for pod groups, errors
        if not found:
            found.append(_pod_origins(inputs))
        return found[0]

    levels = kueue_levels(inputs)
    queues = Queues.of(inputs)
    priorities = Priorities(inputs)
    owners = _Owners({n.name: n for n in inputs.nodes}, out.claims)
    for job in jobs(inputs):
        every, created = job_pods(job, inputs.pods)
        if not job.queue:
            out.pods.extend(created)
            _warn_unmanaged(out, "Job", job.origin, job.name, [job.spec.request])
            continue
        pending = [p for p in every if not p.node_name]
        minimum = job.min_parallelism or job.spec.count
        podset = _PodSetPods(MAIN, pending, job.spec.request, minimum,
                             len(every) - len(pending))
        assigned = _assigned(queues, job.namespace, job.queue, [podset])
        left: set[str] = set()
        if isinstance(assigned, Assigned) and MAIN in assigned.counts:  # partial admission
            kept = pending[:max(0, assigned.counts[MAIN] - podset.bound)]
            left = {p.key for p in pending[len(kept):]}  # the controller never creates them
            podset = replace(podset, pending=kept)
            created = [p for p in created if p.key not in left]
        out.pods.extend(created)
        out.workloads.append(_workload(
            "Job", job.key, job.name, [podset],
            [p for p in every if p.key not in left] if left else every, job.origin, levels,
            out.warnings, assigned=assigned, priorities=priorities,
            priority_class=job.priority_class))
        out.claimed.update(p.key for p in every)  # all: pods past the count are not scheduled
    for js in jobsets(inputs):
        per_job, created = jobset_pods(js, inputs.pods)
        out.pods.extend(created)
        if not js.queue:
            _warn_unmanaged(out, "JobSet", js.origin, js.name,
                            [r.spec.request for r in js.replicated])
            exclusive = _exclusive_jobs(js, per_job, owners)
            if exclusive is not None:
                out.workloads.append(exclusive[0])
                out.claimed.update(p.key for p in exclusive[1])
            continue
        every = [p for r in js.replicated for p in per_job[r.name]]
        bad = _bad_index(every)
        if bad is not None:  # its pods cannot be ranked: the JobSet is invalid, not placed
            out.workloads.append(Workload(js.key, "JobSet", None, invalid=_pod_error(
                bad, origins(), "must be a completion index (0, 1, ...), not "
                f"{bad.labels[COMPLETION_INDEX]!r}", f"metadata.labels.{COMPLETION_INDEX}")))
            out.claimed.update(p.key for p in every)
            continue
        podsets = []
        for r in js.replicated:
            mine = per_job[r.name]
            pending = [p for p in mine if not p.node_name]
            podsets.append(_PodSetPods(r.name, pending, r.spec.request, len(mine),
                                       len(mine) - len(pending),
                                       r.exclusive if r.node_selector is None else "", mine))
        out.workloads.append(_workload(
            "JobSet", js.key, js.name, podsets, every, js.origin, levels, out.warnings, owners,
            _assigned(queues, js.namespace, js.queue, podsets), priorities, js.priority_class))
        out.claimed.update(p.key for p in every)
    groups: dict[tuple[str, str], list[Pod]] = {}
    for pod in inputs.pods:
        name = _group_name(pod)
        if name:
            groups.setdefault((pod.namespace, name), []).append(pod)
        elif POD_GROUP_TOTAL_COUNT in pod.annotations:
            out.workloads.append(Workload(pod.key, "Pod", None, invalid=_pod_error(
                pod, origins(), f"the {POD_GROUP_NAME} label must be set with the "
                f"{POD_GROUP_TOTAL_COUNT} annotation", f"metadata.labels.{POD_GROUP_NAME}")))
            out.claimed.add(pod.key)
    for (namespace, name), members in groups.items():
        out.workloads.append(_pod_group(name, namespace, members, origins(), levels,
                                        out.warnings, queues, priorities))
        out.claimed.update(p.key for p in members)
    return out


def build_single_pods(inputs: Inputs) -> Contribution:
    """Kueue's pod integration for a pending pod with the queue label in no pod group:
    one Workload of that pod, admitted through its queue. Run after every other
    front-end, so a pod some gang claims (its own controller's) is not taken here."""
    out = Contribution()
    single = [p for p in inputs.pods if not p.node_name and p.labels.get(QUEUE_LABEL)
              and not _group_name(p) and POD_GROUP_TOTAL_COUNT not in p.annotations]
    if not single:
        return out
    levels, queues, priorities = kueue_levels(inputs), Queues.of(inputs), Priorities(inputs)
    origins = _pod_origins(inputs)
    for pod in single:
        one = replace(pod, annotations={**pod.annotations, POD_GROUP_TOTAL_COUNT: "1"})
        out.workloads.append(_pod_group(pod.name, pod.namespace, [one], origins, levels,
                                        out.warnings, queues, priorities))
        out.claimed.add(pod.key)
    return out


FRONT_END = FrontEnd(
    "kueue",
    (Kind("Job", (JOB_API_VERSION,), _handle_job, schema="batch.v1.Job"),
     Kind("JobSet", (JOBSET_API_VERSION,), _handle_jobset, schema="jobset.JobSet"),
     *QUEUE_KINDS, PRIORITY_KIND),
    build,
    demands,
    own_gates=(KUEUE_GATES,),
)
# the last front-end: single pods no other front-end's gang claimed (build_single_pods)
SINGLE_PODS = FrontEnd("kueue-pods", (), build_single_pods, own_gates=(KUEUE_GATES,))

__all__ = [
    "FRONT_END",
    "JOBSET_API_VERSION",
    "JOB_API_VERSION",
    "SINGLE_PODS",
    "JobSet",
    "KueueJob",
    "TasRequest",
    "build",
    "check_groups",
    "exclusive_set",
    "grouped",
    "job_pods",
    "jobset_pods",
    "parse_job",
    "parse_jobset",
    "parse_tas",
    "podset_node",
]
