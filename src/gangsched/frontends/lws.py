"""LeaderWorkerSet front-end (``leaderworkerset.x-k8s.io/v1``): one gang per group.

Follows kubernetes-sigs/lws at 060ab4d (2026-08, v0.10.0): the types and constants
(``api/leaderworkerset/v1/leaderworkerset_types.go``), the LWS webhook's defaults and
validation (``pkg/webhooks/leaderworkerset_webhook.go``: ``Default``,
``generalValidate``, ``validateUpdateSubGroupPolicy``), the pod webhook's labels,
subgroup indices and exclusive affinities (``pkg/webhooks/pod_webhook.go``:
``getSubGroupIndex``, ``SetExclusiveAffinities``) and the controllers that create the
pods (``pkg/controllers/leaderworkerset_controller.go``, ``pod_controller.go``).

**Pods.** gangsched plays LWS's controllers, as for Kthena: group ``g`` of ``replicas``
(default 1) has a leader ``<name>-<g>`` (from ``leaderTemplate``, else
``workerTemplate``) and workers ``<name>-<g>-<w>`` for ``w`` in ``1 .. size-1`` (the
worker StatefulSet's ordinals), labelled ``leaderworkerset.sigs.k8s.io/name``,
``group-index``, ``worker-index`` (the leader 0) and ``group-key`` (the SHA-1 of
``<namespace>/<leader>``, as the pod webhook computes it), annotated with ``size``
(workers also ``leader-name``); with a ``subGroupPolicy`` each pod in a subgroup gets
``subgroup-index`` and ``subgroup-key`` (SHA-1 of ``<leader>/<index>``) and the
``subgroup-size`` and ``subgroup-policy-type`` annotations; the LWS's exclusive-topology
annotations are copied onto the pods. Pods of the LWS already in the inputs (by name) are
used instead of creating them. The env vars (``LWS_LEADER_ADDRESS``, ...) are not modelled.

**Subgroups.** ``subGroupSize`` pods per subgroup: worker ``w`` is in subgroup
``(w-1) / subGroupSize`` when ``(size-1) % subGroupSize == 0`` and
``size % subGroupSize != 0`` (the leader is the extra pod of subgroup 0), else in
``w / subGroupSize``; the leader is in subgroup 0 unless the policy type is
``LeaderExcluded``, which leaves it in none.

**The tree** of group ``g`` (a Workload ``<namespace>/<name>-<g>`` of kind
``LeaderWorkerSet``): a root Group needing every pod (LWS starts a group whole; with
``startupPolicy: LeaderReady`` the workers are only created once the leader is ready,
a start order gangsched does not model: it places the group whole, where Volcano's LWS
provider asks for ``minMember: 1``), its children the leader and the workers as PodSets
of identical pods, or with a ``subGroupPolicy`` one Group per subgroup (all required) and a
``LeaderExcluded`` leader beside them.

**Exclusive topology.** ``leaderworkerset.sigs.k8s.io/exclusive-topology: K`` on the LWS
puts the group in one domain of ``K`` that it owns: an exclusive required constraint
(gang.py) whose set is every LWS group of the namespace, because LWS gives the leader a
required pod affinity to its own ``group-key`` and a required anti-affinity against any
other ``group-key`` in the namespace on ``K``, and pins the workers to the leader's domain.
``subgroup-exclusive-topology: K2`` does the same per subgroup (set: every LWS subgroup of
the namespace, by ``subgroup-key``). Pods of a group already running pin the rest of it to
their domain and hold it (``Contribution.claims``). One difference: upstream, pods of LWS
groups *without* the annotation are kept out of owned domains too (the anti-affinity
matches any ``group-key``); here only owners of the same set and key exclude each other.

**Kueue.** An LWS with the ``kueue.x-k8s.io/queue-name`` label is one Kueue Workload per
group (Kueue's ``leaderworkerset_reconciler.go``): the templates' TAS annotations apply to
the leader and worker PodSets (:mod:`.kueue`), a ``podset-group-name`` pair puts both in
one domain. With a ``subGroupPolicy`` only such a common level is applied (to the group).
Their levels are checked against the inputs' Kueue Topologies as a Job's are: a required
level none has makes every group invalid, a preferred one is dropped with a warning.

**Validation** is the webhooks': the name a DNS-1035 label (it names a Service),
``replicas`` 0..1000000 and ``replicas x size`` within int32, ``size >= 1``, the enums,
``subGroupSize >= 1``, at most ``size``, dividing ``size`` or ``size - 1`` (``size - 1``
for ``LeaderExcluded``), ``subgroup-exclusive-topology`` only with a ``subGroupPolicy``,
the annotations' values valid label keys; messages as LWS words them.

**KAI.** An LWS whose workerTemplate names ``schedulerName: kai-scheduler`` (and that Kueue
does not queue) gets, per group, the PodGroup KAI's podgrouper writes
(``pkg/podgrouper/podgrouper/plugins/leaderworkerset/lws_grouper.go`` at d5bc503), built
into a tree by :mod:`.kai` (workload ``<namespace>/<name>-<g>``; KAI names it
``pg-<name>-<uid>-group-<g>``):

* ``minMember`` (``GetPodGroupMetadata``): ``size`` under ``LeaderCreated``; under
  ``LeaderReady`` 1 while the leader is pending (``calcLeaderReadyMinAvailable``): the
  PodGroup then holds the leader alone and the workers, which LWS creates only once the
  leader is ready, are held back; with the leader running, ``size``. KAI's LWS grouper
  reads no ``kai.scheduler/batch-min-member`` (set, it is ignored with a warning).
* without segments (``buildSubGroupsWithoutSegmentation``): SubGroups ``leader`` (1) and
  ``workers`` (``minMember - 1``, when more than 0), all required.
* segments (``getSegmentSize``): ``subGroupPolicy.subGroupSize``, else the LWS's
  ``kai.scheduler/segment-size``, else the workerTemplate's (Go's ``strconv.Atoi``); it
  must be greater than 1 and at most ``minMember`` (so never with ``LeaderReady`` while the
  leader is pending), at most 10000 segments. Worker ``w`` is in segment
  ``getSegmentIndex``: the leader in 0, ``(w-1)/S`` when ``S`` divides ``minMember - 1``,
  else ``w/S``. ``segment-<i>`` SubGroups need ``S`` pods, the last those of the highest
  indices in it (``fixLastSegmentSize``, which with a single segment counts the leader too).
  ``LeaderWorker`` (the default): ``segment-0`` is a parent of ``leader`` (1) and ``workers``
  (its size, plus the leader when ``S`` divides ``minMember - 1``, minus 1)
  (``handleLeaderInFirstSegment``); ``LeaderExcluded``: a ``leader`` SubGroup beside the
  segments, ``S`` must divide ``minMember - 1``. With a single segment and ``S`` dividing
  ``size - 1`` KAI asks that segment for one pod more than it has: the group never starts
  (it waits, with a warning), as in KAI.
* topology: the LWS's ``kai.scheduler/topology`` and ``topology-required-placement`` /
  ``topology-preferred-placement`` on the PodGroup (``DefaultGrouper``; a topology without
  a level constrains nothing, it may only name the segments' Topology), each segment's from
  the workerTemplate's ``kai.scheduler/segment-topology-required-placement`` /
  ``-preferred-placement`` with the workerTemplate's ``kai.scheduler/topology`` (else the
  LWS's; none: ignored with a warning) (``getSegmentTopologyConstraints``); resolved through
  KAI Topologies as a PodGroup's. The queue is the ``kai.scheduler/queue`` label.
* LWS's exclusive topology still applies (the pod webhook's affinities): the group's on the
  root, ``subgroup-exclusive-topology`` on the segments (LWS's subgroups).

Errors KAI's grouper returns (no PodGroup, the pods never run) make every affected group
invalid, naming the field. Not modelled, with a warning: the leader pod's own
``kai.scheduler/topology`` or segment placement annotations, which KAI reads instead of the
workerTemplate's when it groups the leader (the PodGroup then depends on which pod it
grouped last; gangsched uses the workerTemplate's); KAI's annotations on an LWS Kueue queues.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
from gangsched.api.objects import (
    PodTemplate,
    about,
    as_int,
    as_mapping,
    as_str,
    object_name,
    one_of,
    parse_pod_template,
)
from gangsched.api.types import Node, Pod
from gangsched.frontends import kai as kaipg
from gangsched.frontends import kueue
from gangsched.frontends.base import MAX_OBJECT_PODS, Contribution, Demand, FrontEnd
from gangsched.frontends.kueue_priority import KUEUE_GATES, Priorities, class_label
from gangsched.frontends.kueue_queues import Queues
from gangsched.frontends.networktopology import Origin
from gangsched.frontends.pods import identical, podset
from gangsched.frontends.sched_queues import KaiQueues
from gangsched.gang import Claim, Constraint, Group, PodSet, TreeNode
from gangsched.model import Workload

API_VERSION = "leaderworkerset.x-k8s.io/v1"
KIND = "LeaderWorkerSet"
PREFIX = "leaderworkerset.sigs.k8s.io/"
EXCLUSIVE = f"{PREFIX}exclusive-topology"
SUBGROUP_EXCLUSIVE = f"{PREFIX}subgroup-exclusive-topology"
NAME_LABEL = f"{PREFIX}name"
GROUP_INDEX = f"{PREFIX}group-index"
WORKER_INDEX = f"{PREFIX}worker-index"
GROUP_KEY = f"{PREFIX}group-key"
SIZE = f"{PREFIX}size"
LEADER_NAME = f"{PREFIX}leader-name"
SUBGROUP_INDEX = f"{PREFIX}subgroup-index"
SUBGROUP_KEY = f"{PREFIX}subgroup-key"
SUBGROUP_SIZE = f"{PREFIX}subgroup-size"
SUBGROUP_POLICY_TYPE = f"{PREFIX}subgroup-policy-type"
RESTART_POLICIES = ("RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "Default", "None")
STARTUP_POLICIES = ("LeaderCreated", "LeaderReady")
SUBGROUP_TYPES = ("LeaderWorker", "LeaderExcluded")
SUBDOMAIN_POLICIES = ("Shared", "UniquePerReplica")
MAX_REPLICAS = 1_000_000
INT32_MAX = 2**31 - 1
MAX_PODS = MAX_OBJECT_PODS  # pods one LWS may generate here
# KAI's podgrouper reads these on an LWS it schedules (segments, topology)
KAI_PREFIXES = ("kai.scheduler/segment-", "kai.scheduler/topology")
KAI_SCHEDULER = "kai-scheduler"
KAI_TOPOLOGY = kaipg.TOPOLOGY_ANNOTATIONS["topology"]  # constants.TopologyKey
SEGMENT_SIZE = "kai.scheduler/segment-size"  # constants.SegmentSizeKey
SEGMENT_REQUIRED = "kai.scheduler/segment-topology-required-placement"
SEGMENT_PREFERRED = "kai.scheduler/segment-topology-preferred-placement"
MAX_SEGMENTS = 10_000  # lws_grouper.go maxAllowedSegmentation

# -- typed objects -----------------------------------------------------------------------


@dataclass(frozen=True)
class SubGroupPolicy:
    size: int
    type: str = "LeaderWorker"

    @property
    def leader_excluded(self) -> bool:
        return self.type == "LeaderExcluded"


@dataclass(frozen=True)
class LeaderWorkerSet:
    name: str
    namespace: str
    size: int
    worker: PodTemplate
    leader: PodTemplate | None = None
    replicas: int = 1
    startup_policy: str = "LeaderCreated"
    restart_policy: str = "RecreateGroupOnPodRestart"
    subgroups: SubGroupPolicy | None = None
    exclusive: str = ""  # node label key of the exclusive-topology annotation
    subgroup_exclusive: str = ""
    queue: str = ""  # kueue.x-k8s.io/queue-name
    priority_class: str = ""  # kueue.x-k8s.io/priority-class
    leader_request: kueue.TasRequest | None = None
    worker_request: kueue.TasRequest | None = None
    origin: Origin = field(default_factory=Origin)
    kai: str = ""  # where KAI's topology or segment annotations are written, if anywhere
    annotations: Mapping[str, str] = field(default_factory=dict, hash=False)  # the LWS's
    kai_queue: str = ""  # the kai.scheduler/queue label (the LWS's, else the workers')

    @property
    def kai_scheduled(self) -> bool:
        """KAI's podgrouper groups the pods (their ``schedulerName``)."""
        return self.worker.scheduler_name == KAI_SCHEDULER

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def subgroup_of(self, worker: int) -> int | None:
        """Subgroup index of worker ``worker`` (0: the leader), None for none
        (``getSubGroupIndex``; a ``LeaderExcluded`` leader)."""
        sg = self.subgroups
        if sg is None or (worker == 0 and sg.leader_excluded):
            return None
        if (self.size - 1) % sg.size == 0 and self.size % sg.size != 0:
            return max(0, (worker - 1) // sg.size)
        return worker // sg.size


# -- parsing and validation ------------------------------------------------------------------


def _int32(obj: Mapping[str, Any], key: str, path: str, default: int) -> int:
    if obj.get(key) is None:
        return default
    value = as_int(obj.get(key), f"{path}.{key}")
    if not -(2**31) <= value <= INT32_MAX:
        raise InputError(f"must fit in 32 bits, not {value}", field=f"{path}.{key}")
    return value


def _label_key(value: str, path: str) -> str:
    problems = names.qualified_name(value)
    if problems:
        raise InputError(f"invalid node label key {value!r}: {names.first(problems)}",
                         field=path)
    return value


def _subgroup_policy(value: object, size: int, path: str) -> SubGroupPolicy | None:
    if value is None:
        return None
    obj = as_mapping(value, path)
    kind = as_str(obj.get("subGroupPolicyType"), f"{path}.subGroupPolicyType") or "LeaderWorker"
    one_of(kind, SUBGROUP_TYPES, f"{path}.subGroupPolicyType")
    where = f"{path}.subGroupSize"
    if obj.get("subGroupSize") is None:
        raise InputError("is required", field=where)
    sgs = _int32(obj, "subGroupSize", path, 0)
    if sgs < 1:
        raise InputError("subGroupSize must be equal or greater than 1", field=where)
    if size % sgs != 0 and (size - 1) % sgs != 0:
        raise InputError("size or size - 1 must be divisible by subGroupSize", field=where)
    if size < sgs:
        raise InputError("subGroupSize cannot be larger than size", field=where)
    if kind == "LeaderExcluded" and (size - 1) % sgs != 0:
        raise InputError("size-1 must be divisible by subGroupSize when using LeaderExcluded",
                         field=where)
    return SubGroupPolicy(sgs, kind)


def _rollout(spec: Mapping[str, Any], replicas: int) -> None:
    """The rollout fields the webhook checks (values only: nothing here uses them)."""
    path = "spec.rolloutStrategy"
    strategy = as_mapping(spec.get("rolloutStrategy"), path)
    kind = as_str(strategy.get("type"), f"{path}.type") or "RollingUpdate"
    one_of(kind, ("RollingUpdate",), f"{path}.type")
    conf_path = f"{path}.rollingUpdateConfiguration"
    conf = as_mapping(strategy.get("rollingUpdateConfiguration"), conf_path)
    if _int32(conf, "partition", conf_path, 0) < 0:
        raise InputError("must be greater than or equal to 0", field=f"{conf_path}.partition")
    scaled = []
    for key, default in (("maxUnavailable", 1), ("maxSurge", 0)):
        raw = conf.get(key, default)
        where = f"{conf_path}.{key}"
        if isinstance(raw, str):
            if not re.fullmatch(r"[0-9]{1,10}%", raw):
                raise InputError(f"a valid percent string must be a numeric string followed "
                                 f"by an ending '%', not {raw!r}", field=where)
            percent = int(raw[:-1])
            if percent > 100:
                raise InputError("must not be greater than 100%", field=where)
            value = (replicas * percent + (99 if key == "maxSurge" else 0)) // 100
        else:
            value = as_int(raw, where)
            if value < 0:
                raise InputError("must be greater than or equal to 0", field=where)
        scaled.append(value)
    if scaled == [0, 0] and replicas != 0:
        raise InputError("must not be 0 when `maxSurge` is 0", field=f"{conf_path}.maxUnavailable")


def _template(value: object, path: str) -> PodTemplate:
    return parse_pod_template(as_mapping(value, path), path)


def parse_lws(obj: Mapping[str, Any], origin: Origin | None = None) -> LeaderWorkerSet:
    """A LeaderWorkerSet, defaulted and checked as LWS's webhook does."""
    name = object_name(obj, KIND)
    with about(f"{KIND}/{name}"):
        problems = names.dns1035_label(name)
        if problems:  # it names the headless Service
            raise InputError(f"invalid name {name!r}: {names.first(problems)}",
                             field="metadata.name")
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        replicas = _int32(spec, "replicas", "spec", 1)
        if replicas < 0:
            raise InputError("replicas must be equal or greater than 0", field="spec.replicas")
        if replicas > MAX_REPLICAS:
            raise InputError(f"replicas must be equal or less than {MAX_REPLICAS}",
                             field="spec.replicas")
        lwt_path = "spec.leaderWorkerTemplate"
        lwt = as_mapping(spec.get("leaderWorkerTemplate"), lwt_path)
        if not lwt:
            raise InputError("is required", field=lwt_path)
        size = _int32(lwt, "size", lwt_path, 1)
        if size < 1:
            raise InputError("size must be equal or greater than 1", field=f"{lwt_path}.size")
        if replicas * size > INT32_MAX:
            raise InputError(f"the product of replicas and worker replicas must not exceed "
                             f"{INT32_MAX}", field="spec.replicas")
        if replicas * size > MAX_PODS:
            raise InputError(f"would create {replicas * size:,} pods; gangsched reads at most "
                             f"{MAX_PODS:,} per LeaderWorkerSet", field="spec.replicas")
        restart = as_str(lwt.get("restartPolicy"), f"{lwt_path}.restartPolicy") or (
            "RecreateGroupOnPodRestart")
        one_of(restart, RESTART_POLICIES, f"{lwt_path}.restartPolicy")
        startup = as_str(spec.get("startupPolicy"), "spec.startupPolicy") or "LeaderCreated"
        one_of(startup, STARTUP_POLICIES, "spec.startupPolicy")
        network = as_mapping(spec.get("networkConfig"), "spec.networkConfig")
        subdomain = as_str(network.get("subdomainPolicy"), "spec.networkConfig.subdomainPolicy")
        if subdomain:
            one_of(subdomain, SUBDOMAIN_POLICIES, "spec.networkConfig.subdomainPolicy")
        _rollout(spec, replicas)
        if lwt.get("workerTemplate") is None:
            raise InputError("is required", field=f"{lwt_path}.workerTemplate")
        worker = _template(lwt.get("workerTemplate"), f"{lwt_path}.workerTemplate")
        leader = None
        if lwt.get("leaderTemplate") is not None:
            leader = _template(lwt.get("leaderTemplate"), f"{lwt_path}.leaderTemplate")
        policy = _subgroup_policy(lwt.get("subGroupPolicy"), size, f"{lwt_path}.subGroupPolicy")
        annotations = as_mapping(meta.get("annotations"), "metadata.annotations")
        exclusive = as_str(annotations.get(EXCLUSIVE), f"metadata.annotations.{EXCLUSIVE}")
        sub_exclusive = as_str(annotations.get(SUBGROUP_EXCLUSIVE),
                               f"metadata.annotations.{SUBGROUP_EXCLUSIVE}")
        if EXCLUSIVE in annotations:
            _label_key(exclusive, f"metadata.annotations.{EXCLUSIVE}")
        if SUBGROUP_EXCLUSIVE in annotations:
            where = f"metadata.annotations.{SUBGROUP_EXCLUSIVE}"
            if policy is None:
                raise InputError("cannot have subgroup-exclusive-topology without "
                                 "subGroupSize set", field=where)
            _label_key(sub_exclusive, where)
        labels = as_mapping(meta.get("labels"), "metadata.labels")
        queue = as_str(labels.get(kueue.QUEUE_LABEL), f"metadata.labels.{kueue.QUEUE_LABEL}")
        leader_request = worker_request = None
        if queue:  # Kueue's PodSets: leader (1) and worker (size - 1), or main (size)
            path = f"{lwt_path}.{{}}.metadata.annotations"
            if leader is not None:
                leader_request = kueue.parse_tas(leader.annotations,
                                                 path.format("leaderTemplate"), 1)
                worker_request = kueue.parse_tas(worker.annotations,
                                                 path.format("workerTemplate"), size - 1)
                kueue.check_groups([("leader", 1, leader_request),
                                    ("worker", size - 1, worker_request)])
            else:
                worker_request = kueue.parse_tas(worker.annotations,
                                                 path.format("workerTemplate"), size)
        worker_ann = worker.annotations
        kai = next((f"{at}.{k}" for at, ann in (("metadata.annotations", annotations), (
            f"{lwt_path}.workerTemplate.metadata.annotations", worker_ann)) for k in ann
            if k.startswith(KAI_PREFIXES)), "")
        kai_queue = labels.get(kaipg.QUEUE_LABEL) or worker.labels.get(kaipg.QUEUE_LABEL) or ""
        return LeaderWorkerSet(
            kai=kai,
            annotations={str(k): str(v) for k, v in annotations.items()},
            kai_queue=str(kai_queue),
            name=name,
            namespace=as_str(meta.get("namespace"), "metadata.namespace") or "default",
            size=size, worker=worker, leader=leader, replicas=replicas,
            startup_policy=startup, restart_policy=restart, subgroups=policy,
            exclusive=exclusive, subgroup_exclusive=sub_exclusive, queue=queue,
            priority_class=class_label(labels) if queue else "",
            leader_request=leader_request, worker_request=worker_request,
            origin=origin or Origin(obj=f"{KIND}/{name}"),
        )


def _handle(doc: Document, inputs: Inputs) -> None:
    lws = parse_lws(with_generated_name(doc), Origin.of(doc))
    inputs.claim(doc, lws.key)
    inputs.add_object(doc, lws)


# Known fields (api/leaderworkerset/v1/leaderworkerset_types.go at 060ab4d; the CRD under
# config/crd/bases): the pod templates are Kubernetes PodTemplateSpecs.
schema.define({
    "lws.LeaderWorkerSet": {"apiVersion": "string", "kind": "string",
                            "metadata": "meta.v1.ObjectMeta", "spec": "lws.Spec",
                            "status": "any"},
    "lws.Spec": {"replicas": "int32", "leaderWorkerTemplate": "lws.LeaderWorkerTemplate",
                 "rolloutStrategy": "lws.RolloutStrategy", "startupPolicy": "string",
                 "networkConfig": "lws.NetworkConfig"},
    "lws.LeaderWorkerTemplate": {"leaderTemplate": "core.v1.PodTemplateSpec",
                                 "workerTemplate": "core.v1.PodTemplateSpec",
                                 "size": "int32", "restartPolicy": "string",
                                 "subGroupPolicy": "lws.SubGroupPolicy",
                                 "volumeClaimTemplates": {"list": "any"},
                                 "persistentVolumeClaimRetentionPolicy": "any"},
    "lws.RolloutStrategy": {"type": "string",
                            "rollingUpdateConfiguration": "lws.RollingUpdateConfiguration"},
    "lws.RollingUpdateConfiguration": {"partition": "int32", "maxUnavailable": "int-or-string",
                                       "maxSurge": "int-or-string"},
    "lws.SubGroupPolicy": {"subGroupPolicyType": "string", "subGroupSize": "int32"},
    "lws.NetworkConfig": {"subdomainPolicy": "string"},
})


# -- the pods LWS creates ----------------------------------------------------------------


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def group_pods(lws: LeaderWorkerSet, g: int) -> list[Pod]:
    """The pods of group ``g``, leader first (what the controllers and the pod webhook
    create)."""
    leader_name = f"{lws.name}-{g}"
    group_key = _sha1(f"{lws.namespace}/{leader_name}")
    copied = {k: v for k, v in ((EXCLUSIVE, lws.exclusive),
                                (SUBGROUP_EXCLUSIVE, lws.subgroup_exclusive)) if v}
    out: list[Pod] = []
    for w in range(lws.size):
        template = (lws.leader or lws.worker) if w == 0 else lws.worker
        labels = {**template.labels, NAME_LABEL: lws.name, GROUP_INDEX: str(g),
                  WORKER_INDEX: str(w), GROUP_KEY: group_key}
        annotations = {**template.annotations, **copied, SIZE: str(lws.size)}
        if w:
            annotations[LEADER_NAME] = leader_name
        if lws.subgroups is not None:
            annotations[SUBGROUP_SIZE] = str(lws.subgroups.size)
            annotations[SUBGROUP_POLICY_TYPE] = lws.subgroups.type
            index = lws.subgroup_of(w)
            if index is not None:
                labels[SUBGROUP_INDEX] = str(index)
                labels[SUBGROUP_KEY] = _sha1(f"{leader_name}/{index}")
        name = leader_name if w == 0 else f"{leader_name}-{w}"
        out.append(template.make_pod(name, lws.namespace, labels=labels,
                                     annotations=annotations))
    return out


# -- the tree of one group --------------------------------------------------------------------


def exclusive_set(namespace: str, label: str) -> str:
    """The set of an LWS exclusive constraint: every LWS (sub)group of the namespace, as
    the anti-affinity on ``label`` (``group-key`` / ``subgroup-key``) reaches."""
    return f"{namespace}/{label}"


def _owning(key: str, exclusive: str, bound: Sequence[Pod], nodes: Mapping[str, Node]
            ) -> tuple[Constraint, ...]:
    """The exclusive constraint of a (sub)group, pinned to the domain its running pods
    are in (LWS pins the workers to the leader's domain)."""
    if not key:
        return ()
    value = None
    for pod in bound:
        node = nodes.get(pod.node_name or "")
        if node is not None and node.labels.get(key) is not None:
            value = node.labels[key]
            break
    return (Constraint(key, "required", value, exclusive),)


def _sets(path: str, parts: Sequence[tuple[str, Sequence[Pod]]]) -> list[Group | PodSet]:
    """Pending pods as PodSets of identical pods, all required: one per part (``leader``,
    ``workers``), split further when a part holds pods of several shapes."""
    out: list[Group | PodSet] = []
    for label, pods in parts:
        groups = identical(pods)
        for i, members in enumerate(groups):
            name = label if len(groups) == 1 else f"{label}-{i}"
            out.append(podset(name, path, members, len(members)))
    return out


def _leader(pod: Pod) -> bool:
    return pod.labels.get(WORKER_INDEX, "0") == "0"


def _worker_index(pod: Pod) -> int:
    """The pod's ``worker-index`` label (absent: 0, the leader); a value that is no index
    is an error naming the pod and the label."""
    raw = pod.labels.get(WORKER_INDEX, "0")
    if not re.fullmatch(r"[0-9]{1,9}", raw):
        raise InputError(f"must be a worker index (0, 1, ...), not {raw!r}",
                         obj=f"Pod/{pod.namespace}/{pod.name}",
                         field=f"metadata.labels.{WORKER_INDEX}")
    return int(raw)


def group_tree(lws: LeaderWorkerSet, g: int, pods: Sequence[Pod], nodes: Mapping[str, Node]
               ) -> Group | None:
    """The gang of group ``g`` over its pods (bound ones pin and are left out); None when
    every pod is bound."""
    name = f"{lws.name}-{g}"
    root = f"{lws.namespace}/{name}"
    pending = [p for p in pods if not p.node_name]
    if not pending:
        return None
    bound = [p for p in pods if p.node_name]
    top = _owning(lws.exclusive, exclusive_set(lws.namespace, GROUP_KEY), bound, nodes)
    kids: list[Group | PodSet] = []
    if lws.subgroups is None:
        leaders = [p for p in pending if _leader(p)]
        workers = [p for p in pending if not _leader(p)]
        if lws.queue and lws.leader is not None:
            kids = _kueue_kids(lws, root, leaders, workers)
        elif lws.queue and lws.worker_request is not None:  # Kueue's single PodSet "main"
            kids = [kueue.podset_node("main", f"{root}/main", pending, lws.worker_request,
                                      len(pending))]
        elif lws.leader is not None:
            kids = _sets(root, [("leader", leaders), ("workers", workers)])
        else:
            kids = _sets(root, [("pods", pending)])
    else:
        by_index: dict[int | None, list[Pod]] = {}
        for pod in pods:
            index = lws.subgroup_of(_worker_index(pod))
            by_index.setdefault(index, []).append(pod)
        sub_set = exclusive_set(lws.namespace, SUBGROUP_KEY)
        for index in sorted(by_index, key=lambda i: -1 if i is None else i):
            members = [p for p in by_index[index] if not p.node_name]
            if not members:
                continue
            if index is None:  # a LeaderExcluded leader: beside the subgroups
                kids.extend(_sets(root, [("leader", members)]))
                continue
            sub = f"subgroup-{index}"
            held = [p for p in by_index[index] if p.node_name]
            topo = _owning(lws.subgroup_exclusive, sub_set, held, nodes)
            inner = _sets(f"{root}/{sub}", [("leader", [p for p in members if _leader(p)]),
                                            ("workers", [p for p in members
                                                         if not _leader(p)])])
            kids.append(Group(sub, f"{root}/{sub}", inner, min_groups=len(inner),
                              topology=topo))
        if lws.queue:
            common = _common_request(lws)
            top = (*top, *common)
    return Group(name, root, kids, min_groups=len(kids), topology=top, kind=KIND, source=root)


def _common_request(lws: LeaderWorkerSet) -> tuple[Constraint, ...]:
    leader, worker = lws.leader_request, lws.worker_request
    if leader is None:
        return worker.constraints() if worker is not None else ()
    if worker is not None and leader.group and leader.group == worker.group:
        return leader.constraints()
    return ()


def _kueue_kids(lws: LeaderWorkerSet, root: str, leaders: Sequence[Pod],
                workers: Sequence[Pod]) -> list[Group | PodSet]:
    """Kueue's leader and worker PodSets, each with its request (a podset-group-name
    pair under one Group in one domain)."""
    assert lws.leader_request is not None and lws.worker_request is not None
    nodes: list[tuple[TreeNode, kueue.TasRequest]] = []
    for label, members, request in (("leader", leaders, lws.leader_request),
                                    ("worker", workers, lws.worker_request)):
        if members:
            nodes.append((kueue.podset_node(label, f"{root}/{label}", members, request,
                                            len(members)), request))
    return kueue.grouped(root, nodes)


# -- KAI's podgrouper (pkg/podgrouper/podgrouper/plugins/leaderworkerset/lws_grouper.go) ----

LWT = "spec.leaderWorkerTemplate"
WORKER_ANNOTATIONS = f"{LWT}.workerTemplate.metadata.annotations"
_ATOI = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi takes
NEVER_RUNS = "KAI's podgrouper makes no PodGroup for it, so its pods never run"


@dataclass(frozen=True)
class KaiShape:
    """What KAI's LWS grouper reads from the LWS itself, the same for every group."""

    topology: kaipg.TopologyConstraint | None  # the PodGroup's (DefaultGrouper)
    segment_size: int | None = None  # getSegmentSize, before the check against minMember
    segment_field: str = ""  # where the segment size was written
    leader_excluded: bool = False  # getSegmentationPolicy's type
    segment_topology: kaipg.TopologyConstraint | None = None  # getSegmentTopologyConstraints


def _segment_size(lws: LeaderWorkerSet) -> tuple[int, str] | None:
    """``getSegmentSize`` up to its check against the PodGroup's minimum: ``subGroupSize``,
    else the LWS's ``kai.scheduler/segment-size``, else the workerTemplate's (each a Go
    ``strconv.Atoi``); at least 2."""
    if lws.subgroups is not None:
        size, where = lws.subgroups.size, f"{LWT}.subGroupPolicy.subGroupSize"
    else:
        found = next(((a[SEGMENT_SIZE], f"{at}.{SEGMENT_SIZE}") for a, at in (
            (lws.annotations, "metadata.annotations"),
            (lws.worker.annotations, WORKER_ANNOTATIONS)) if SEGMENT_SIZE in a), None)
        if found is None:
            return None
        raw, where = found
        if not _ATOI.fullmatch(raw) or not -(2**63) <= int(raw) < 2**63:
            raise lws.origin.error(f"invalid segment size {raw!r}: not an integer; "
                                   f"{NEVER_RUNS}", where)
        size = int(raw)
    if size <= 1:
        raise lws.origin.error(f"segment size {size} is not valid: it must be greater than 1; "
                               f"{NEVER_RUNS}", where)
    return size, where


def _segment_topology(lws: LeaderWorkerSet, warnings: list[str]
                      ) -> kaipg.TopologyConstraint | None:
    """``getSegmentTopologyConstraints`` as a worker pod sees it: the workerTemplate's
    segment placement levels, its ``kai.scheduler/topology`` (else the LWS's); none
    without a topology or without a level."""
    worker = lws.worker.annotations
    required, preferred = worker.get(SEGMENT_REQUIRED, ""), worker.get(SEGMENT_PREFERRED, "")
    if worker.get(KAI_TOPOLOGY):
        topology, topology_at = worker[KAI_TOPOLOGY], f"{WORKER_ANNOTATIONS}.{KAI_TOPOLOGY}"
    else:
        topology = lws.annotations.get(KAI_TOPOLOGY, "")
        topology_at = f"metadata.annotations.{KAI_TOPOLOGY}"
    if not required and not preferred:
        return None
    if not topology:
        key = SEGMENT_REQUIRED if required else SEGMENT_PREFERRED
        warnings.append(str(lws.origin.error(
            "no topology named (kai.scheduler/topology on the workerTemplate or the "
            "LeaderWorkerSet), so KAI ignores the segment placement levels",
            f"{WORKER_ANNOTATIONS}.{key}")))
        return None
    return kaipg.TopologyConstraint(
        topology, required, preferred, WORKER_ANNOTATIONS, annotations=True,
        paths=(("topology", topology_at),
               ("requiredTopologyLevel", f"{WORKER_ANNOTATIONS}.{SEGMENT_REQUIRED}"),
               ("preferredTopologyLevel", f"{WORKER_ANNOTATIONS}.{SEGMENT_PREFERRED}")))


def _kai_notes(lws: LeaderWorkerSet, shape: KaiShape, warnings: list[str]) -> None:
    """Warnings for what KAI's LWS grouper ignores, and for what gangsched cannot
    model: a leader pod whose own topology annotations KAI reads instead."""
    def note(message: str, where: str) -> None:
        warnings.append(str(lws.origin.error(message, where)))
    for key in (SEGMENT_REQUIRED, SEGMENT_PREFERRED):
        if key in lws.annotations:
            note("ignored: KAI's LWS grouper reads the segment placement levels from the "
                 "workerTemplate only", f"metadata.annotations.{key}")
    if kaipg.MIN_MEMBER_ANNOTATION in lws.annotations:
        note("ignored: KAI's LWS grouper sets minMember from size and startupPolicy",
             f"metadata.annotations.{kaipg.MIN_MEMBER_ANNOTATION}")
    if shape.segment_size is None and shape.segment_topology is not None:
        key = SEGMENT_REQUIRED if shape.segment_topology.required else SEGMENT_PREFERRED
        note("ignored: no segments (set kai.scheduler/segment-size or subGroupPolicy)",
             f"{WORKER_ANNOTATIONS}.{key}")
    if lws.leader is None or shape.segment_size is None:
        return
    leader = lws.leader.annotations
    seen = shape.segment_topology
    mine = {KAI_TOPOLOGY: seen.topology if seen else "",
            SEGMENT_REQUIRED: seen.required if seen else "",
            SEGMENT_PREFERRED: seen.preferred if seen else ""}
    for key, value in mine.items():
        if leader.get(key) and leader[key] != value:
            note(f"KAI reads the leader pod's {key} ({leader[key]!r}) instead of the "
                 f"workerTemplate's ({value!r}) when it groups the leader, so its segments' "
                 "constraint depends on which pod it grouped last: not modelled (gangsched "
                 "uses the workerTemplate's)", f"{LWT}.leaderTemplate.metadata.annotations.{key}")


def kai_shape(lws: LeaderWorkerSet, warnings: list[str]) -> KaiShape:
    """What KAI's LWS grouper reads from the LWS (errors located, naming the field)."""
    levels = [kaipg.TOPOLOGY_ANNOTATIONS[k] for k in ("requiredTopologyLevel",
                                                       "preferredTopologyLevel")]
    topology = None
    if any(lws.annotations.get(k) for k in levels):
        topology = kaipg.annotation_topology({"metadata": {"annotations": lws.annotations}},
                                             lws.origin, warnings)
    # else a kai.scheduler/topology alone names the segments' Topology (segments.md): the
    # PodGroup's topologyConstraint then has no level, which constrains nothing
    segment = _segment_size(lws)
    shape = KaiShape(topology, segment_topology=_segment_topology(lws, warnings))
    if segment is not None:
        leader_excluded = lws.subgroups is not None and lws.subgroups.leader_excluded
        shape = replace(shape, segment_size=segment[0], segment_field=segment[1],
                        leader_excluded=leader_excluded)
    _kai_notes(lws, shape, warnings)
    return shape


def segment_index(worker: int, size: int, segment: int) -> int:
    """``getSegmentIndex``: the leader (0) is in segment 0; when ``size - 1`` divides into
    segments the leader is an extra pod of segment 0."""
    if worker == 0:
        return 0
    if (size - 1) % segment == 0:
        return (worker - 1) // segment
    return worker // segment


def kai_podgroup(lws: LeaderWorkerSet, shape: KaiShape, g: int, pods: Sequence[Pod],
                 warnings: list[str]) -> tuple[kaipg.KaiPodGroup, list[Pod]]:
    """The PodGroup KAI's LWS grouper writes for group ``g`` (``GetPodGroupMetadata``) and
    the pods in it, labelled with their SubGroup; raises what makes it fail, located."""
    indices = {p.key: _worker_index(p) for p in pods}  # validateWorkerIndex
    leader = next((p for p in pods if indices[p.key] == 0), None)
    members = lws.size  # LeaderCreated, or LeaderReady once the leader is scheduled
    if lws.startup_policy == "LeaderReady" and leader is not None and not leader.node_name:
        members = 1  # calcLeaderReadyMinAvailable: only the leader exists yet
    sg = kaipg.SubGroup
    subs: list[kaipg.SubGroup]
    size = shape.segment_size
    if size is None:  # buildSubGroupsWithoutSegmentation
        subs = [sg("leader", 0, min_member=1)]
        if members > 1:
            subs.append(sg("workers", 1, min_member=members - 1))

        def leaf(w: int) -> str:
            return "leader" if w == 0 else "workers"
    else:
        if size > members:
            why = (" while the leader is pending (startupPolicy LeaderReady)"
                   if members < lws.size else "")
            raise lws.origin.error(f"segment size {size} is greater than {members}, the "
                                   f"PodGroup's minMember{why}; {NEVER_RUNS}",
                                   shape.segment_field)
        count = segment_index(members - 1, members, size) + 1
        if count > MAX_SEGMENTS:
            raise lws.origin.error(f"{count} segments: KAI's LWS grouper allows at most "
                                   f"{MAX_SEGMENTS}; {NEVER_RUNS}", shape.segment_field)
        mins = [size] * count
        # fixLastSegmentSize: worker indices from the last down, while in the last segment
        # (with one segment that counts the leader too)
        mins[-1] = sum(1 for _ in _last_run(members, size, count - 1))
        divisible = (members - 1) % size == 0
        tc = shape.segment_topology
        if shape.leader_excluded:  # addExcludedLeaderSegments
            if not divisible:
                raise lws.origin.error(f"size - 1 ({members - 1}) is not divisible by the "
                                       f"segment size {size}, which KAI's LeaderExcluded "
                                       f"segments need; {NEVER_RUNS}", shape.segment_field)
            subs = [sg("leader", 0, min_member=1)] + [
                sg(f"segment-{i}", i + 1, min_member=m, topology=tc)
                for i, m in enumerate(mins)]

            def leaf(w: int) -> str:
                return "leader" if w == 0 else f"segment-{segment_index(w, members, size)}"
        else:  # handleLeaderInFirstSegment: leader and workers under segment-0
            first = mins[0] + (1 if divisible else 0)
            subs = [sg("segment-0", 0, min_sub_group=2, topology=tc)] + [
                sg(f"segment-{i}", i, min_member=m, topology=tc)
                for i, m in enumerate(mins) if i] + [
                sg("leader", count, min_member=1, parent="segment-0"),
                sg("workers", count + 1, min_member=first - 1, parent="segment-0")]

            def leaf(w: int) -> str:
                if w == 0:
                    return "leader"
                index = segment_index(w, members, size)
                return "workers" if index == 0 else f"segment-{index}"
    # while the PodGroup holds the leader alone, LWS has not created the workers
    mine = [replace(p, labels={**p.labels, kaipg.SUBGROUP_LABEL: leaf(indices[p.key])})
            for p in pods if members == lws.size or indices[p.key] == 0]
    joined: dict[str, int] = {}
    for p in mine:
        joined[p.labels[kaipg.SUBGROUP_LABEL]] = joined.get(
            p.labels[kaipg.SUBGROUP_LABEL], 0) + 1
    for s in subs:
        if s.min_member is not None and s.min_member > joined.get(s.name, 0):
            warnings.append(str(lws.origin.error(
                f"KAI's LWS grouper asks SubGroup {s.name} for {s.min_member} "
                f"pods but {joined.get(s.name, 0)} join it (with a single segment "
                "fixLastSegmentSize counts the leader in): the group never starts",
                shape.segment_field)))
    pg = kaipg.KaiPodGroup(name=f"{lws.name}-{g}", namespace=lws.namespace,
                           min_member=members, queue=lws.kai_queue, topology=shape.topology,
                           subgroups=tuple(subs), origin=lws.origin)
    return pg, mine


def _last_run(members: int, size: int, last: int) -> Iterable[int]:
    for w in range(members - 1, -1, -1):
        if segment_index(w, members, size) != last:
            return
        yield w


def _kai_exclusive(lws: LeaderWorkerSet, tree: TreeNode, pods: Sequence[Pod],
                   nodes: Mapping[str, Node]) -> None:
    """LWS's exclusive topology (its pod webhook's affinities, which KAI honours) on
    KAI's tree: the group's on the root, ``subgroup-exclusive-topology`` on the segments
    (with a ``subGroupPolicy`` the segments are LWS's subgroups)."""
    bound = [p for p in pods if p.node_name]
    tree.topology = (*_owning(lws.exclusive, exclusive_set(lws.namespace, GROUP_KEY), bound,
                              nodes), *tree.topology)
    if not lws.subgroup_exclusive or not isinstance(tree, Group):
        return
    sub_set = exclusive_set(lws.namespace, SUBGROUP_KEY)
    for node in tree.children:
        name = node.path.removeprefix(f"{tree.path}/")
        index = name.removeprefix("segment-")
        if name == index or not index.isdigit():
            continue  # the leader
        held = [p for p in bound if lws.subgroup_of(_worker_index(p)) == int(index)]
        node.topology = (*_owning(lws.subgroup_exclusive, sub_set, held, nodes),
                         *node.topology)


# -- the builder ------------------------------------------------------------------------------


def leader_worker_sets(inputs: Inputs) -> list[LeaderWorkerSet]:
    return [o for o in inputs.objects.get(KIND, []) if isinstance(o, LeaderWorkerSet)]


def _checked(lws: LeaderWorkerSet, levels: Sequence[str] | None, warnings: list[str]
             ) -> LeaderWorkerSet:
    """The LWS with its Kueue topology requests checked against the inputs' Kueue
    Topologies, as a Job's are (:func:`.kueue.check_levels`): a required level no
    Topology has raises, a preferred one is dropped with a warning."""
    got = []
    for request in (lws.leader_request, lws.worker_request):
        if request is not None:
            request, note = kueue.check_levels(request, levels)
            if note is not None:
                warnings.append(str(lws.origin.locate(note)))
        got.append(request)
    return replace(lws, leader_request=got[0], worker_request=got[1])


def _kueue_podsets(lws: LeaderWorkerSet, pods: Sequence[Pod]
                   ) -> list[tuple[str, list[Pod], kueue.TasRequest]]:
    """The Kueue PodSets of a group (those with pods): ``leader`` and ``worker`` with a
    leader template, else ``main``."""
    blank = kueue.TasRequest()
    if lws.leader is not None:
        roles = [("leader", [p for p in pods if _leader(p)], lws.leader_request or blank),
                 ("worker", [p for p in pods if not _leader(p)], lws.worker_request or blank)]
    else:
        roles = [("main", list(pods), lws.worker_request or blank)]
    return [r for r in roles if r[1]]


def build(inputs: Inputs) -> Contribution:
    out = Contribution()
    nodes = {n.name: n for n in inputs.nodes}
    existing = {p.key: p for p in inputs.pods}
    levels = kueue.kueue_levels(inputs)
    queues = Queues.of(inputs)  # with them, the flavors check the levels
    priorities = Priorities(inputs)
    topos = {t.name: t for t in topologies(inputs) if t.kai}
    kai_queues = KaiQueues(inputs)
    for lws in leader_worker_sets(inputs):
        invalid = ""
        shape = None
        if lws.kai_scheduled and not lws.queue:
            try:
                shape = kai_shape(lws, out.warnings)
            except InputError as err:
                invalid = str(err)
        elif lws.kai and lws.kai_scheduled:
            out.warnings.append(str(lws.origin.error(
                "KAI's topology and segment annotations on a LeaderWorkerSet Kueue queues are "
                "not modelled: each group is placed as Kueue admits it", lws.kai)))
        if lws.queue and queues is None:
            try:
                lws = _checked(lws, levels, out.warnings)
            except InputError as err:
                invalid = str(lws.origin.locate(err))
        for g in range(lws.replicas):
            made = group_pods(lws, g)
            pods = [existing.get(p.key, p) for p in made]
            out.pods.extend(p for p in made if p.key not in existing)
            out.claimed.update(p.key for p in pods)
            key = f"{lws.namespace}/{lws.name}-{g}"
            ranked = priorities.of(lws.priority_class, max((p.priority for p in pods), default=0))
            if isinstance(ranked, InputError):
                invalid = invalid or str(lws.origin.locate(ranked))
            priority = ranked if isinstance(ranked, int) else 0
            if invalid:
                out.workloads.append(Workload(key, KIND, None, invalid=invalid))
                continue
            if shape is not None:
                _kai_workload(lws, shape, g, pods, nodes, topos, kai_queues, out)
                continue
            if lws.queue and queues is not None and any(not p.node_name for p in pods):
                roles = _kueue_podsets(lws, pods)
                got = queues.assign(lws.namespace, lws.queue, [
                    kueue.asked(name, members, len(members), request)
                    for name, members, request in roles])
                if isinstance(got, str):
                    out.workloads.append(Workload(key, KIND, None, waiting=got,
                                                  priority=priority, source=lws.origin.where,
                                                  waiting_minimum=len(pods)))
                    continue
                flavored = {p.key: p for name, members, _ in roles
                            for p in got.pods(name, members)}
                pods = [flavored[p.key] for p in pods]
            try:
                tree = group_tree(lws, g, pods, nodes)
            except InputError as err:
                out.workloads.append(Workload(key, KIND, None, invalid=str(
                    lws.origin.locate(err))))
                continue
            bound = [p for p in pods if p.node_name]
            if bound:
                out.claims.update(_bound_claims(lws, g, bound))
            if tree is None:
                continue  # running whole
            tree.priority = priority
            pending = {p.key: p for p in pods if not p.node_name}
            out.workloads.append(Workload(key, KIND, tree, pending, priority=priority,
                                          source=lws.origin.where))
    return out


def demands(inputs: Inputs) -> Iterable[Demand]:
    """The pods every LWS asks for: ``replicas`` groups of ``size``."""
    for lws in leader_worker_sets(inputs):
        yield Demand(lws.origin, "spec.replicas", lws.replicas * lws.size)


def _kai_workload(lws: LeaderWorkerSet, shape: KaiShape, g: int, pods: Sequence[Pod],
                  nodes: Mapping[str, Node], topos: Mapping[str, TopologyObject],
                  queues: KaiQueues, out: Contribution) -> None:
    """The workload of group ``g`` as KAI's PodGroup, built by :mod:`.kai`."""
    key = f"{lws.namespace}/{lws.name}-{g}"
    bound = [p for p in pods if p.node_name]
    if bound:
        out.claims.update(_bound_claims(lws, g, bound, "segment"))
    if len(bound) == len(pods):
        return  # running whole
    notes: list[str] = []
    try:
        pg, members = kai_podgroup(lws, shape, g, pods, notes)
    except InputError as err:
        out.workloads.append(Workload(key, KIND, None, invalid=str(err)))
        return
    workload, more = kaipg.build_workload(pg, members, topos, queues)
    # its notes name the PodGroup of the group: name the LWS, once for all its groups
    named = [w.replace(f" {kaipg.KIND}/{pg.name}:", f" {lws.origin.obj}:") for w in more]
    out.warnings.extend(w for w in dict.fromkeys((*notes, *named)) if w not in out.warnings)
    workload.kind = KIND
    if workload.tree is not None:
        _kai_exclusive(lws, workload.tree, pods, nodes)
        if isinstance(workload.tree, Group):
            workload.tree.kind = KIND
    out.workloads.append(workload)


def _bound_claims(lws: LeaderWorkerSet, g: int, bound: Sequence[Pod], sub: str = "subgroup"
                  ) -> dict[str, tuple[Claim, ...]]:
    """The exclusive domains the group's running pods hold (its owners' paths as the
    tree names them)."""
    root = f"{lws.namespace}/{lws.name}-{g}"
    out: dict[str, tuple[Claim, ...]] = {}
    for pod in bound:
        claims: list[Claim] = []
        if lws.exclusive:
            claims.append((exclusive_set(lws.namespace, GROUP_KEY), lws.exclusive, root))
        index = lws.subgroup_of(_worker_index(pod))
        if lws.subgroup_exclusive and index is not None:
            claims.append((exclusive_set(lws.namespace, SUBGROUP_KEY), lws.subgroup_exclusive,
                           f"{root}/{sub}-{index}"))
        if claims:
            out[pod.key] = tuple(claims)
    return out


FRONT_END = FrontEnd(
    "lws", (Kind(KIND, (API_VERSION,), _handle, schema="lws.LeaderWorkerSet"),), build,
    demands, own_gates=(KUEUE_GATES,))  # Kueue gates the pods of an LWS it queues

__all__ = [
    "API_VERSION",
    "EXCLUSIVE",
    "FRONT_END",
    "KIND",
    "SUBGROUP_EXCLUSIVE",
    "LeaderWorkerSet",
    "build",
    "exclusive_set",
    "group_pods",
    "group_tree",
    "leader_worker_sets",
    "parse_lws",
]
