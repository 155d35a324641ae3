"""Kthena front-end: ``ModelServing`` (``workload.serving.volcano.sh/v1alpha1``).

Follows volcano-sh/kthena at 3cc0572 (2026-08-21); where older releases differ, this
version wins. :func:`translate` produces what Kthena's model-serving controller creates for
a ModelServing (``pkg/model-serving-controller``: ``podgroupmanager/manager.go``,
``utils/utils.go``, ``controller/model_serving_controller.go``):

* per ServingGroup ``i`` (``spec.replicas``, default 1) a Volcano PodGroup ``<name>-<i>``
  whenever ``schedulerName`` is ``volcano`` (the CRD default): ``shouldCreatePodGroup``
  checks only the scheduler name (and that the PodGroup CRD is installed), with or
  without ``gangPolicy`` or ``networkTopology``; without ``gangPolicy`` every role counts
  all its replicas. ``schedulerName: gangsched`` gets the same PodGroups: that is
  gangsched's extension, for running Kthena's objects under ``gangsched serve`` (real
  Kthena creates PodGroups only for ``volcano`` and leaves other schedulers' pods without
  one). ``minMember`` sums ``(1 + workerReplicas) x min(minRoleReplicas[role], replicas)``
  over the roles (a role missing from the map counts all its replicas); ``minResources``
  sums the *container requests* of exactly those pods (entry template, plus the worker
  template per worker); one ``subGroupPolicy`` per role selects the role's pods and splits
  them by role-id, with ``subGroupSize = 1 + workerReplicas`` and ``minSubGroups`` the
  role's minimum; ``groupPolicy`` becomes the PodGroup's ``networkTopology``,
  ``rolePolicy`` every policy's. ``spec.queue`` is the ModelServing's
  ``scheduling.volcano.sh/queue-name`` annotation (``extractQueueName``), else
  ``default``, the PodGroup CRD's default that the API server fills in.
* per role replica ``j`` an entry pod ``<name>-<i>-<role>-<j>-0`` from ``entryTemplate``
  and workers ``...-1`` .. ``...-<workerReplicas>`` from ``workerTemplate``, labelled with
  the ModelServing name, group name, role and role-id (``<role>-<j>``); only the entry pod
  carries ``modelserving.volcano.sh/entry: "true"``. With a PodGroup, every pod is annotated
  ``scheduling.k8s.io/group-name: <name>-<i>`` and ``volcano.sh/task-spec: <role>-<j>``.
  The controller's ``GROUP_SIZE``, ``ENTRY_ADDRESS`` and ``WORKER_INDEX`` env vars are set;
  the revision and role-template-hash labels (hashes of the controller's revision) are not.

Validation is Kthena's: the CRD schema (known fields, int32 counts, at most 4 roles,
role names of at most 12 characters) and the admission webhook
(``pkg/model-serving-controller/webhook/validator.go``): role names and every generated
name DNS-1035 labels, non-negative replicas and worker replicas, a worker template when
there are workers, and ``minRoleReplicas`` naming existing roles, non-negative and at most
the role's replicas (``validateGangPolicy``: "minRoleReplicas (3) for role prefill cannot
exceed replicas (2)"). A ModelServing that would create more than :data:`MAX_PODS` pods is
refused before any is generated.

The builder turns those dicts into PodGroups and Pods with the same parsers the Volcano
front-end uses and builds one Workload (kind ``ModelServing``) per ServingGroup through the
Volcano tree builder; the generated pods go in ``Contribution.pods``.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gangsched.api import names, schema
from gangsched.api.errors import InputError
from gangsched.api.loader import Document, Inputs, Kind, with_generated_name
from gangsched.api.objects import (
    about,
    as_int,
    as_mapping,
    as_str,
    check_name,
    mappings,
    object_name,
    parse_pod,
    parse_pod_template,
    required_str,
)
from gangsched.api.quantity import format_quantity, parse_resources
from gangsched.frontends import priority_classes
from gangsched.frontends.base import MAX_OBJECT_PODS, Contribution, Demand, FrontEnd
from gangsched.frontends.networktopology import NetworkTopology, Origin, parse_network_topology
from gangsched.frontends.sched_queues import VolcanoQueues
from gangsched.frontends.volcano import (
    API_VERSION as PODGROUP_API_VERSION,
)
from gangsched.frontends.volcano import (
    DEFAULT_QUEUE,
    GROUP_NAME_ANNOTATION,
    TASK_SPEC_KEY,
    PodGroup,
    add_gangs,
    parse_podgroup,
    tiers_of,
)

API_VERSION = "workload.serving.volcano.sh/v1alpha1"
KIND = "ModelServing"
NAME_LABEL = "modelserving.volcano.sh/name"
GROUP_LABEL = "modelserving.volcano.sh/group-name"
ROLE_LABEL = "modelserving.volcano.sh/role"
ROLE_ID_LABEL = "modelserving.volcano.sh/role-id"
ENTRY_LABEL = "modelserving.volcano.sh/entry"
GANG_SCHEDULERS = ("volcano", "gangsched")
DEFAULT_SCHEDULER = "volcano"
MAX_ROLES = 4
MAX_ROLE_NAME = 12
MAX_DNS_LABEL = 63
MAX_PODS = MAX_OBJECT_PODS  # pods one ModelServing may generate here
"""Most pods one ModelServing may generate (replicas x role replicas x pods per replica):
far beyond any real deployment, and small enough to generate in seconds."""
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"  # volcano.sh/apis QueueNameAnnotationKey
INT32_MAX = 2**31 - 1
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")

# -- typed objects -----------------------------------------------------------------------

Resources = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Role:
    """One ``spec.template.roles[]`` entry; templates are kept as written."""

    name: str
    replicas: int
    worker_replicas: int
    entry_template: Mapping[str, Any]
    worker_template: Mapping[str, Any] | None = None
    entry_requests: Resources = ()  # container requests, as Kthena sums minResources
    worker_requests: Resources = ()

    @property
    def pods_per_replica(self) -> int:
        return 1 + self.worker_replicas


@dataclass(frozen=True)
class ModelServing:
    name: str
    namespace: str
    roles: tuple[Role, ...]
    replicas: int = 1  # ServingGroups
    scheduler_name: str = DEFAULT_SCHEDULER
    uid: str | None = None
    gang_policy: bool = False  # template.gangPolicy present
    min_role_replicas: tuple[tuple[str, int], ...] = ()
    network_topology: bool = False  # template.networkTopology present
    group_policy: NetworkTopology | None = None
    role_policy: NetworkTopology | None = None
    queue: str = DEFAULT_QUEUE  # the scheduling.volcano.sh/queue-name annotation
    warnings: tuple[str, ...] = ()  # notes for the user (none since minRoleReplicas above
    # replicas became an error; kept for callers such as cli/translate.py)
    origin: Origin = field(default_factory=Origin)

    @property
    def creates_podgroups(self) -> bool:
        """One PodGroup per ServingGroup whenever a gang scheduler schedules the pods:
        ``volcano``, as Kthena's ``shouldCreatePodGroup`` decides (with or without
        ``gangPolicy``: without it every role is gang-required), or ``gangsched``,
        gangsched's own extension for ``gangsched serve`` (real Kthena creates none
        for it)."""
        return self.scheduler_name in GANG_SCHEDULERS

    @property
    def total_pods(self) -> int:
        """Pods the controller creates for this ModelServing."""
        return self.replicas * sum(r.replicas * r.pods_per_replica for r in self.roles)

    def min_replicas(self, role: Role) -> int:
        """Replicas of ``role`` in the gang: its minRoleReplicas, clamped to replicas."""
        return min(dict(self.min_role_replicas).get(role.name, role.replicas), role.replicas)


# -- parsing and validation (Kthena's CRD schema and admission webhook) ------------------


def _count(obj: Mapping[str, Any], key: str, field: str, default: int | None) -> int:
    """A non-negative int32 (the CRD's format for every count)."""
    path = f"{field}.{key}"
    if obj.get(key) is None and default is None:
        raise InputError("is required", field=path)
    value = as_int(obj.get(key), path, default or 0)
    if value < 0:
        raise InputError(f"must be a non-negative integer, not {value}", field=path)
    if value > INT32_MAX:
        raise InputError(f"must fit in 32 bits (at most {INT32_MAX}), not {value}", field=path)
    return value


def _check_role_name(name: str, field: str) -> None:
    if len(name) > MAX_ROLE_NAME:
        raise InputError(f"role name {name!r} is longer than {MAX_ROLE_NAME} characters",
                         field=field)
    if not _DNS1035.fullmatch(name):
        raise InputError(f"role name {name!r} must be a DNS-1035 label (lowercase letters, "
                         "digits and '-', starting with a letter)", field=field)


def _container_requests(template: Mapping[str, Any], field: str) -> Resources:
    """Sum of the containers' ``resources.requests`` (what Kthena aggregates: no init
    containers, no requests defaulted from limits)."""
    spec = as_mapping(template.get("spec"), f"{field}.spec")
    total: dict[str, int] = {}
    for container, path in mappings(spec.get("containers"), f"{field}.spec.containers"):
        resources = as_mapping(container.get("resources"), f"{path}.resources")
        requests = parse_resources(resources.get("requests"), f"{path}.resources.requests")
        for name, value in requests.items():
            total[name] = total.get(name, 0) + value
    return tuple(sorted(total.items()))


def _template(value: object, field: str) -> Mapping[str, Any]:
    template = as_mapping(value, field)
    parse_pod_template(template, field)  # validates metadata, resources, affinity, ...
    return template


def _parse_role(item: Mapping[str, Any], path: str) -> Role:
    name = required_str(item, "name", path)
    _check_role_name(name, f"{path}.name")
    workers = _count(item, "workerReplicas", path, None)
    if item.get("entryTemplate") is None:
        raise InputError("is required", field=f"{path}.entryTemplate")
    entry = _template(item.get("entryTemplate"), f"{path}.entryTemplate")
    worker = None
    if item.get("workerTemplate") is not None:
        worker = _template(item.get("workerTemplate"), f"{path}.workerTemplate")
    elif workers > 0:
        raise InputError("is required when workerReplicas is greater than 0",
                         field=f"{path}.workerTemplate")
    return Role(
        name=name,
        replicas=_count(item, "replicas", path, 1),
        worker_replicas=workers,
        entry_template=entry,
        worker_template=worker,
        entry_requests=_container_requests(entry, f"{path}.entryTemplate"),
        worker_requests=() if worker is None else _container_requests(
            worker, f"{path}.workerTemplate"),
    )


def _parse_roles(value: object, field: str) -> tuple[Role, ...]:
    roles: list[Role] = []
    for item, path in mappings(value, field):
        role = _parse_role(item, path)
        if any(r.name == role.name for r in roles):
            raise InputError(f"duplicate role name {role.name!r}", field=f"{path}.name")
        roles.append(role)
    if not roles:
        raise InputError("must list at least one role", field=field)
    if len(roles) > MAX_ROLES:
        raise InputError(f"must list at most {MAX_ROLES} roles, not {len(roles)}", field=field)
    return tuple(roles)


def _min_role_replicas(
    value: object, field: str, roles: tuple[Role, ...]
) -> tuple[tuple[str, int], ...]:
    """The minRoleReplicas map, checked as Kthena's webhook does (``validateGangPolicy``,
    with its messages): every key a role, every value from 0 to the role's replicas."""
    by_name = {r.name: r for r in roles}
    out: list[tuple[str, int]] = []
    for name, raw in as_mapping(value, field).items():
        path = f"{field}.{name}"
        role = by_name.get(name) if isinstance(name, str) else None
        if role is None:
            raise InputError(f"role {name} does not exist in template.roles", field=path)
        minimum = as_int(raw, path)
        if minimum > role.replicas:
            raise InputError(f"minRoleReplicas ({minimum}) for role {name} cannot exceed "
                             f"replicas ({role.replicas})", field=path)
        if minimum < 0:
            raise InputError(f"minRoleReplicas for role {name} must be non-negative",
                             field=path)
        out.append((name, minimum))
    return tuple(out)


def _queue(meta: Mapping[str, Any]) -> str:
    """The ``scheduling.volcano.sh/queue-name`` annotation (``extractQueueName``), which
    must be a valid queue name (the PodGroup CRD's pattern), else ``default``."""
    annotations = as_mapping(meta.get("annotations"), "metadata.annotations")
    path = f"metadata.annotations.{QUEUE_ANNOTATION}"
    queue = as_str(annotations.get(QUEUE_ANNOTATION), path)
    if not queue:
        return DEFAULT_QUEUE
    check_name(queue, path, names.dns1123_subdomain, "queue name")
    return queue


def _check_generated_names(name: str, replicas: int, roles: tuple[Role, ...]) -> None:
    """Kthena's webhook: ``<name>-<replicas>-<role>-<roleReplicas>-<workers>`` must be a
    DNS-1035 label, so that every pod and service name it derives is valid."""
    for role in roles:
        longest = f"{name}-{replicas}-{role.name}-{role.replicas}-{role.worker_replicas}"
        if len(longest) > MAX_DNS_LABEL or not _DNS1035.fullmatch(longest):
            raise InputError(
                f"generated name {longest!r} is not a DNS-1035 label of at most "
                f"{MAX_DNS_LABEL} characters; shorten the ModelServing or role name",
                field="metadata.name")


def parse_model_serving(obj: Mapping[str, Any], origin: Origin | None = None) -> ModelServing:
    """A ModelServing, validated as Kthena's CRD schema and webhook do."""
    name = object_name(obj, KIND)
    origin = origin or Origin(obj=f"{KIND}/{name}")
    with about(f"{KIND}/{name}"):
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        template = as_mapping(spec.get("template"), "spec.template")
        roles = _parse_roles(template.get("roles"), "spec.template.roles")
        replicas = _count(spec, "replicas", "spec", 1)
        _check_generated_names(name, replicas, roles)
        gang = as_mapping(template.get("gangPolicy"), "spec.template.gangPolicy")
        minimums = _min_role_replicas(
            gang.get("minRoleReplicas"), "spec.template.gangPolicy.minRoleReplicas", roles)
        topo_field = "spec.template.networkTopology"
        topo = as_mapping(template.get("networkTopology"), topo_field)
        scheduler = as_str(spec.get("schedulerName"), "spec.schedulerName")
        if scheduler:  # its pods' schedulerName (ValidatePodSpec: a DNS subdomain)
            check_name(scheduler, "spec.schedulerName", names.dns1123_subdomain,
                       "scheduler name")
        per_group = sum(r.replicas * r.pods_per_replica for r in roles)
        if replicas * per_group > MAX_PODS:
            raise InputError(f"would create {replicas * per_group:,} pods ({replicas:,} "
                             f"ServingGroups of {per_group:,}); gangsched reads at most "
                             f"{MAX_PODS:,} per ModelServing", field="spec")
        return ModelServing(
            name=name,
            namespace=as_str(meta.get("namespace"), "metadata.namespace") or "default",
            roles=roles,
            replicas=replicas,
            scheduler_name=scheduler or DEFAULT_SCHEDULER,
            uid=as_str(meta.get("uid"), "metadata.uid") or None,
            gang_policy=template.get("gangPolicy") is not None,
            min_role_replicas=minimums,
            network_topology=template.get("networkTopology") is not None,
            group_policy=parse_network_topology(topo.get("groupPolicy"),
                                                f"{topo_field}.groupPolicy"),
            role_policy=parse_network_topology(topo.get("rolePolicy"),
                                               f"{topo_field}.rolePolicy"),
            queue=_queue(meta),
            origin=origin,
        )


def _handle(doc: Document, inputs: Inputs) -> None:
    ms = parse_model_serving(with_generated_name(doc), Origin.of(doc))
    inputs.claim(doc, f"{ms.namespace}/{ms.name}")
    inputs.add_object(doc, ms)


# Known fields of the ModelServing CRD (volcano-sh/kthena at 3cc0572, charts/kthena/charts/
# workload/crds/workload.serving.volcano.sh_modelservings.yaml): its pod templates are
# Kubernetes PodSpecs under Kthena's own metadata (labels and annotations only).
schema.define({
    "kthena.ModelServing": {"apiVersion": "string", "kind": "string",
                            "metadata": "meta.v1.ObjectMeta", "spec": "kthena.ModelServingSpec",
                            "status": "kthena.ModelServingStatus"},
    "kthena.ModelServingSpec": {"replicas": "int32", "schedulerName": "string",
                                "plugins": {"list": "kthena.PluginSpec"},
                                "template": "kthena.ServingGroup",
                                "rolloutStrategy": "kthena.RolloutStrategy",
                                "recoveryPolicy": "string"},
    "kthena.PluginSpec": {"name": "string", "type": "string", "config": "any",
                          "scope": "kthena.PluginScope"},
    "kthena.PluginScope": {"roles": {"list": "string"}, "target": "string"},
    "kthena.RolloutStrategy": {"type": "string",
                               "rollingUpdateConfiguration": "kthena.RollingUpdate"},
    "kthena.RollingUpdate": {"maxUnavailable": "int-or-string", "partition": "int-or-string"},
    "kthena.ServingGroup": {"restartGracePeriodSeconds": "int64",
                            "gangPolicy": "kthena.GangPolicy",
                            "networkTopology": "kthena.NetworkTopology",
                            "roles": {"list": "kthena.Role"}},
    "kthena.GangPolicy": {"minRoleReplicas": {"map": "int32"}},
    "kthena.NetworkTopology": {"groupPolicy": "volcano.NetworkTopologySpec",
                               "rolePolicy": "volcano.NetworkTopologySpec"},
    "kthena.Role": {"name": "string", "replicas": "int32",
                    "entryTemplate": "kthena.PodTemplateSpec", "workerReplicas": "int32",
                    "workerTemplate": "kthena.PodTemplateSpec",
                    "maxUnavailable": "int-or-string", "partition": "int-or-string"},
    "kthena.PodTemplateSpec": {"metadata": "kthena.Metadata", "spec": "core.v1.PodSpec"},
    "kthena.Metadata": {"labels": "labels", "annotations": "annotations"},
    "kthena.ModelServingStatus": {"observedGeneration": "int64", "replicas": "int32",
                                  "currentReplicas": "int32", "updatedReplicas": "int32",
                                  "availableReplicas": "int32", "currentRevision": "string",
                                  "updateRevision": "string",
                                  "conditions": {"list": "meta.v1.Condition"},
                                  "labelSelector": "string"},
})


# -- translation: what Kthena's controller creates ---------------------------------------


def _owner(ms: ModelServing, *, block: bool) -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "name": ms.name}
    if ms.uid:
        ref["uid"] = ms.uid
    if block:
        ref["blockOwnerDeletion"] = True
    ref["controller"] = True
    return ref


def _min_resources(ms: ModelServing) -> dict[str, str]:
    total: dict[str, int] = {}
    for role in ms.roles:
        n = ms.min_replicas(role)
        parts = [*role.entry_requests] + [*role.worker_requests] * role.worker_replicas
        for name, value in parts:
            total[name] = total.get(name, 0) + value * n
    return {name: format_quantity(total[name], name) for name in sorted(total)}


def _subgroup_policy(ms: ModelServing, role: Role) -> dict[str, Any]:
    policy: dict[str, Any] = {
        "labelSelector": {"matchLabels": {NAME_LABEL: ms.name, ROLE_LABEL: role.name}},
        "matchLabelKeys": [ROLE_ID_LABEL],
        "minSubGroups": ms.min_replicas(role),
        "name": role.name,
    }
    if ms.role_policy is not None:
        policy["networkTopology"] = ms.role_policy.as_dict()
    policy["subGroupSize"] = role.pods_per_replica
    return policy


def podgroup_dict(ms: ModelServing, group: str) -> dict[str, Any]:
    """The PodGroup of ServingGroup ``group`` (``createPodGroup`` + ``appendSubGroupPolicy``)."""
    spec: dict[str, Any] = {
        "minMember": sum(r.pods_per_replica * ms.min_replicas(r) for r in ms.roles),
        "minResources": _min_resources(ms),
    }
    if ms.group_policy is not None:
        spec["networkTopology"] = ms.group_policy.as_dict()
    spec["queue"] = ms.queue
    spec["subGroupPolicy"] = [_subgroup_policy(ms, r) for r in ms.roles]
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": group,
            "namespace": ms.namespace,
            "labels": {NAME_LABEL: ms.name, GROUP_LABEL: group},
            "annotations": {GROUP_NAME_ANNOTATION: group},
            "ownerReferences": [_owner(ms, block=False)],
        },
        "spec": spec,
    }


def _with_env(spec: dict[str, Any], env: list[dict[str, str]]) -> None:
    """Set the controller's env vars on every container and init container."""
    names = {e["name"] for e in env}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            kept = [e for e in container.get("env") or [] if e.get("name") not in names]
            container["env"] = kept + [dict(e) for e in env]


def _pod_dict(ms: ModelServing, role: Role, group: str, index: int, worker: int) -> dict[str, Any]:
    role_id = f"{role.name}-{index}"
    entry_name = f"{group}-{role_id}-0"
    template = role.entry_template if worker == 0 else role.worker_template or {}
    meta = template.get("metadata") or {}
    labels = {NAME_LABEL: ms.name, GROUP_LABEL: group, ROLE_LABEL: role.name,
              ROLE_ID_LABEL: role_id}
    if worker == 0:
        labels[ENTRY_LABEL] = "true"
    labels.update(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    if ms.creates_podgroups:
        annotations[GROUP_NAME_ANNOTATION] = group
        annotations[TASK_SPEC_KEY] = role_id
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    spec["schedulerName"] = ms.scheduler_name
    _with_env(spec, [
        {"name": "GROUP_SIZE", "value": str(role.pods_per_replica)},
        {"name": "ENTRY_ADDRESS", "value": f"{entry_name}.{ms.namespace}"},
        {"name": "WORKER_INDEX", "value": str(worker)},
    ])
    metadata: dict[str, Any] = {"name": f"{group}-{role_id}-{worker}",
                                "namespace": ms.namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    metadata["ownerReferences"] = [_owner(ms, block=True)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def translate(ms: ModelServing) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The PodGroups and Pods Kthena's controller creates for ``ms``."""
    podgroups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for i in range(ms.replicas):
        group = f"{ms.name}-{i}"
        if ms.creates_podgroups:
            podgroups.append(podgroup_dict(ms, group))
        for role in ms.roles:
            for j in range(role.replicas):
                pods.extend(_pod_dict(ms, role, group, j, k)
                            for k in range(role.pods_per_replica))
    return podgroups, pods


# -- the builder -------------------------------------------------------------------------


def model_servings(inputs: Inputs) -> list[ModelServing]:
    return [o for o in inputs.objects.get(KIND, []) if isinstance(o, ModelServing)]


def demands(inputs: Inputs) -> Iterable[Demand]:
    """The pods every ModelServing asks for: ``replicas`` ServingGroups of its roles."""
    for ms in model_servings(inputs):
        yield Demand(ms.origin, "spec.replicas", ms.total_pods)


def _typed_podgroup(ms: ModelServing, obj: Mapping[str, Any]) -> PodGroup:
    """A generated PodGroup parsed as any other, its topology specs pointing back at the
    ModelServing fields they came from (for error messages)."""
    pg = parse_podgroup(obj, dataclasses.replace(ms.origin, obj=f"{KIND}/{ms.name}"))
    policies = tuple(dataclasses.replace(p, network_topology=ms.role_policy)
                     for p in pg.policies)
    return dataclasses.replace(pg, network_topology=ms.group_policy, policies=policies)


def build(inputs: Inputs) -> Contribution:
    tiers = tiers_of(inputs)
    out = Contribution(levels=tiers.levels, node_labels=tiers.node_labels)
    queues = VolcanoQueues(inputs)
    for ms in model_servings(inputs):
        podgroup_dicts, pod_dicts = translate(ms)
        try:
            pods = [parse_pod(d) for d in pod_dicts]
            groups = [_typed_podgroup(ms, d) for d in podgroup_dicts]
        except InputError as err:
            raise ms.origin.locate(err) from None
        out.pods.extend(pods)
        add_gangs(out, groups, pods, tiers, queues, priority_classes.classes(inputs),
                  kind=KIND)
    out.warnings.extend(tiers.warnings)
    return out


FRONT_END = FrontEnd(
    "kthena", (Kind(KIND, (API_VERSION,), _handle, schema="kthena.ModelServing"),), build,
    demands)
