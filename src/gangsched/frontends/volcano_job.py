"""Volcano Job front-end: ``Job`` (``batch.volcano.sh/v1alpha1``, a "vcjob").

gangsched plays Volcano's job controller, as it plays Kthena's: a vcjob becomes the one
PodGroup and the pods the controller creates, and that PodGroup is read and built into a
gang tree by the Volcano PodGroup front-end (:mod:`gangsched.frontends.volcano`), so a
vcjob is placed exactly as the equivalent hand-written PodGroup and pods would be.

Follows volcano-sh/volcano at ed72c7c (2026-08) and volcano-sh/apis at 536f121
(``pkg/apis/batch/v1alpha1/job.go``, ``labels.go``):

* the mutating webhook's defaults (``pkg/webhooks/admission/jobs/mutate``): an empty task
  name is ``default<i>``, a task's ``minAvailable`` its ``partitionPolicy``'s
  ``minPartitions x partitionSize`` when ``minPartitions > 0``, else its ``replicas``;
  ``spec.minAvailable`` 0 (or absent) is the sum of the tasks' ``minAvailable``;
  ``queue`` ``default``, ``schedulerName`` ``volcano``;
* the PodGroup (``createOrUpdatePodGroup``, ``setPgSubGroupPolicy``): named
  ``<job>-<uid>`` (``<job>`` when the Job has no ``metadata.uid``: the name before
  Volcano 1.5, which the controller still finds), ``minMember = spec.minAvailable``,
  ``minTaskMember[task] = task.minAvailable``, ``minResources`` (``calcPGMinResources``,
  tasks taken in order: PriorityClass values are not in the inputs), ``queue``,
  ``priorityClassName``, ``networkTopology``; per task with a ``partitionPolicy`` a
  ``subGroupPolicy`` named after the task selecting its pods (label
  ``volcano.sh/task-spec``) and splitting them by ``volcano.sh/partition-id``, with
  ``subGroupSize = partitionSize``, ``minSubGroups = minPartitions`` and the policy's
  ``networkTopology``;
* the pods (``syncJob``, ``createJobPod``): ``replicas`` pods per task named
  ``<job>-<task>-<index>`` from the task's template, annotated with the PodGroup name
  (``scheduling.k8s.io/group-name``), the task (``volcano.sh/task-spec``), the index,
  job name and queue, labelled likewise plus ``volcano.sh/partition-id = index /
  partitionSize``; the Job's ``schedulerName`` and ``priorityClassName`` when the template
  sets none. A pod of that name already in the inputs is not created again, nor the
  PodGroup: when the inputs hold the PodGroup the controller names (a live cluster's
  objects), it is placed as it is, with the Job's pods, by the PodGroup front-end.

Validation is the CRD's (int32 counts from 0, task names DNS-1123 labels, at least one
task, queue and priority class names) and the validating webhook's
(``pkg/webhooks/admission/jobs/validate/admit_job.go``): unique task names, a task's
``minAvailable`` at most its ``replicas``, ``spec.minAvailable`` at most the tasks' total
replicas, ``replicas = totalPartitions x partitionSize``, ``minAvailable =
minPartitions x partitionSize`` when both are set, ``highestTierAllowed`` and
``highestTierName`` not both, the job name and ``<job>-<task>-<index>`` qualified names,
and the job's and tasks' lifecycle ``policies`` (``validate/util.go``: events or an exit
code, not both; known events and actions; no event or exit code twice; ``*`` alone).
Fields that change what the scheduler sees but that gangsched does not model are warned
about: ``dependsOn`` (the controller creates a task's pods only once the tasks it depends
on run; gangsched creates them all at once) and a NUMA ``topologyPolicy``. Lifecycle
``policies`` (once checked), ``plugins``, ``volumes``, ``maxRetry``, ``minSuccess``,
``ttlSecondsAfterFinished`` and ``runningEstimate`` act after scheduling and are ignored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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
    as_str_map,
    check_name,
    mappings,
    object_name,
    parse_pod_template,
)
from gangsched.api.quantity import format_quantity
from gangsched.api.types import Pod
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
    INT32_MAX,
    TASK_SPEC_KEY,
    PodGroup,
    add_gangs,
    group_of,
    int32_count,
    parse_podgroup,
    podgroups,
    task_minimums,
    tiers_of,
)

API_VERSION = "batch.volcano.sh/v1alpha1"
GROUP = "batch.volcano.sh"
KIND = "Job"
TASK_INDEX_KEY = "volcano.sh/task-index"
JOB_NAME_KEY = "volcano.sh/job-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
PARTITION_ID_KEY = "volcano.sh/partition-id"
DEFAULT_TASK = "default"
DEFAULT_SCHEDULER = "volcano"
MAX_PODS = MAX_OBJECT_PODS  # pods one Job may generate here
"""Most pods one Job may create (the sum of its tasks' replicas), as for Kthena."""

# -- typed objects -----------------------------------------------------------------------


@dataclass(frozen=True)
class Partitions:
    """A task's ``partitionPolicy``."""

    total: int
    size: int
    minimum: int  # minPartitions
    network_topology: NetworkTopology | None = None


@dataclass(frozen=True)
class Task:
    """One ``spec.tasks[]`` entry, defaulted as Volcano's webhook does."""

    name: str
    replicas: int
    min_available: int
    template: PodTemplate
    own_scheduler: bool  # the template sets schedulerName
    partitions: Partitions | None = None


@dataclass(frozen=True)
class VolcanoJob:
    name: str
    namespace: str
    tasks: tuple[Task, ...]
    min_available: int
    queue: str = DEFAULT_QUEUE
    scheduler_name: str = DEFAULT_SCHEDULER
    priority_class_name: str | None = None
    network_topology: NetworkTopology | None = None
    uid: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    origin: Origin = field(default_factory=Origin)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def podgroup_name(self) -> str:
        return f"{self.name}-{self.uid}" if self.uid else self.name


# -- parsing and validation --------------------------------------------------------------


def _partitions(value: object, path: str, replicas: int) -> Partitions | None:
    if value is None:
        return None
    spec = as_mapping(value, path)
    for key in ("totalPartitions", "partitionSize"):
        if spec.get(key) is None:
            raise InputError("is required", field=f"{path}.{key}")
    total = int32_count(spec, "totalPartitions", path, minimum=1)
    size = int32_count(spec, "partitionSize", path, minimum=1)
    if replicas != total * size:
        raise InputError(f"replicas ({replicas}) must equal totalPartitions x partitionSize "
                         f"({total * size})", field=path)
    minimum = int32_count(spec, "minPartitions", path)
    if minimum > total:
        raise InputError(f"minPartitions ({minimum}) is greater than totalPartitions "
                         f"({total})", field=f"{path}.minPartitions")
    return Partitions(total, size, minimum,
                      parse_network_topology(spec.get("networkTopology"),
                                             f"{path}.networkTopology"))


# Lifecycle policy events and actions a user may write (volcano-sh/apis bus/v1alpha1;
# the webhook's policyEventMap and policyActionMap: the others are internal).
POLICY_EVENTS = ("*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted",
                 "TaskFailed", "JobUpdated")
POLICY_ACTIONS = ("AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition",
                  "TerminateJob", "CompleteJob", "ResumeJob")


def _check_policies(value: object, path: str) -> None:
    """``policies`` as the webhook's ``validatePolicies`` checks them (util.go): each names
    events or an exit code, not both; events and actions a user may write; no event and no
    exit code in two policies; ``*`` alone. They act after scheduling: nothing is kept."""
    events: set[str] = set()
    codes: set[int] = set()
    for policy, at in mappings(value, path):
        event = as_str(policy.get("event"), f"{at}.event")
        listed = [as_str(e, f"{at}.events[{i}]")
                  for i, e in enumerate(as_list(policy.get("events"), f"{at}.events"))]
        action = as_str(policy.get("action"), f"{at}.action")
        code = policy.get("exitCode")
        if (event or listed) and code is not None:
            raise InputError("must not specify event and exitCode simultaneously", field=at)
        if not event and not listed and code is None:
            raise InputError("either event and exitCode should be specified", field=at)
        if event or listed:
            for name in dict.fromkeys([*listed, *([event] if event else [])]):
                if name not in POLICY_EVENTS:
                    raise InputError(f"invalid policy event {name!r}",
                                     field=f"{at}.event" if name == event else f"{at}.events")
                if action not in POLICY_ACTIONS:
                    raise InputError(f"invalid policy action {action!r}", field=f"{at}.action")
                if name in events:
                    raise InputError(f"duplicate event {name} across different policy",
                                     field=at)
                events.add(name)
            continue
        number = as_int(code, f"{at}.exitCode")
        if not -INT32_MAX - 1 <= number <= INT32_MAX:
            raise InputError(f"must fit in 32 bits, not {number}", field=f"{at}.exitCode")
        if number == 0:
            raise InputError("0 is not a valid error code", field=f"{at}.exitCode")
        if number in codes:
            raise InputError(f"duplicate exitCode {number}", field=f"{at}.exitCode")
        codes.add(number)
    if "*" in events and len(events) > 1:
        raise InputError("if there's * here, no other policy should be here", field=path)


def _task_minimum(item: Mapping[str, Any], path: str, replicas: int,
                  parts: Partitions | None) -> int:
    """The task's minAvailable, defaulted (mutate_job.go) and checked (admit_job.go)."""
    from_parts = parts.minimum * parts.size if parts and parts.minimum > 0 else None
    if item.get("minAvailable") is None:
        minimum = replicas if from_parts is None else from_parts
    else:
        minimum = int32_count(item, "minAvailable", path)
        if from_parts is not None and minimum != from_parts:
            raise InputError(f"must equal minPartitions x partitionSize ({from_parts}), not "
                             f"{minimum}", field=f"{path}.minAvailable")
    if minimum > replicas:
        raise InputError(f"minAvailable ({minimum}) is greater than replicas ({replicas})",
                         field=f"{path}.minAvailable")
    return minimum


def _parse_task(item: Mapping[str, Any], path: str, index: int,
                warnings: list[str]) -> Task:
    name = as_str(item.get("name"), f"{path}.name") or f"{DEFAULT_TASK}{index}"
    check_name(name, f"{path}.name", names.dns1123_label, "task name")
    replicas = int32_count(item, "replicas", path)
    parts = _partitions(item.get("partitionPolicy"), f"{path}.partitionPolicy", replicas)
    if item.get("template") is None:
        raise InputError("is required", field=f"{path}.template")
    template = parse_pod_template(item.get("template"), f"{path}.template")
    spec = as_mapping(as_mapping(item.get("template"), f"{path}.template").get("spec"),
                      f"{path}.template.spec")
    _check_policies(item.get("policies"), f"{path}.policies")
    if item.get("dependsOn") is not None:
        warnings.append(f"{path}.dependsOn: not modelled: Volcano creates this task's pods "
                        "once the tasks it depends on run; gangsched places them together")
    policy = as_str(item.get("topologyPolicy"), f"{path}.topologyPolicy")
    if policy and policy != "none":
        warnings.append(f"{path}.topologyPolicy: NUMA policy {policy!r} is not modelled")
    return Task(name, replicas, _task_minimum(item, path, replicas, parts), template,
                bool(spec.get("schedulerName")), parts)


def _parse_tasks(value: object, job: str, warnings: list[str]) -> tuple[Task, ...]:
    tasks: list[Task] = []
    for i, (item, path) in enumerate(mappings(value, "spec.tasks")):
        task = _parse_task(item, path, i, warnings)
        if any(t.name == task.name for t in tasks):
            raise InputError(f"duplicate task name {task.name!r}", field=f"{path}.name")
        # the webhook's check (validateK8sPodNameLength), on the longest name it creates
        pod = f"{job}-{task.name}-{max(task.replicas - 1, 0)}"
        check_name(pod, f"{path}.name", names.qualified_name, "pod name")
        tasks.append(task)
    if not tasks:
        raise InputError("must list at least one task", field="spec.tasks")
    return tuple(tasks)


def _job_minimum(spec: Mapping[str, Any], tasks: Sequence[Task]) -> int:
    total = sum(t.replicas for t in tasks)
    if total > MAX_PODS:
        raise InputError(f"would create {total:,} pods; gangsched reads at most "
                         f"{MAX_PODS:,} per Job", field="spec.tasks")
    minimum = int32_count(spec, "minAvailable", "spec") or sum(t.min_available for t in tasks)
    if minimum > total:
        raise InputError(f"minAvailable ({minimum}) is greater than the tasks' {total} "
                         "replicas", field="spec.minAvailable")
    return minimum


def parse_job(obj: Mapping[str, Any], origin: Origin | None = None) -> VolcanoJob:
    """A vcjob, defaulted and validated as Volcano's webhooks do."""
    name = object_name(obj, KIND)
    origin = origin or Origin(obj=f"{KIND}/{name}")
    with about(f"{KIND}/{name}"):
        check_name(name, "metadata.name", names.qualified_name, "job name")
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        notes: list[str] = []
        tasks = _parse_tasks(spec.get("tasks"), name, notes)
        _check_policies(spec.get("policies"), "spec.policies")
        queue = as_str(spec.get("queue"), "spec.queue") or DEFAULT_QUEUE
        check_name(queue, "spec.queue", names.dns1123_subdomain, "queue name")
        scheduler = as_str(spec.get("schedulerName"), "spec.schedulerName")
        if scheduler:  # the pods' schedulerName (ValidatePodSpec: a DNS subdomain)
            check_name(scheduler, "spec.schedulerName", names.dns1123_subdomain,
                       "scheduler name")
        priority_class = as_str(spec.get("priorityClassName"), "spec.priorityClassName")
        if priority_class:
            check_name(priority_class, "spec.priorityClassName", names.dns1123_subdomain,
                       "priority class name")
        return VolcanoJob(
            name=name,
            namespace=as_str(meta.get("namespace"), "metadata.namespace") or "default",
            tasks=tasks,
            min_available=_job_minimum(spec, tasks),
            queue=queue,
            scheduler_name=scheduler or DEFAULT_SCHEDULER,
            priority_class_name=priority_class or None,
            network_topology=parse_network_topology(spec.get("networkTopology"),
                                                    "spec.networkTopology"),
            uid=as_str(meta.get("uid"), "metadata.uid") or None,
            labels=as_str_map(meta.get("labels"), "metadata.labels"),
            annotations=as_str_map(meta.get("annotations"), "metadata.annotations"),
            warnings=tuple(str(origin.error(note)) for note in notes),
            origin=origin,
        )


def _handle(doc: Document, inputs: Inputs) -> None:
    job = parse_job(with_generated_name(doc), Origin.of(doc))
    inputs.claim(doc, f"{job.key} ({GROUP})")  # batch/v1 has a Job kind too
    inputs.add_object(doc, job)


# Known fields of the Job CRD (volcano-sh/volcano at ed72c7c, config/crd/volcano/bases/
# batch.volcano.sh_jobs.yaml); what acts after scheduling is kept open ("any").
schema.define({
    "volcano.Job": {"apiVersion": "string", "kind": "string",
                    "metadata": "meta.v1.ObjectMeta", "spec": "volcano.JobSpec",
                    "status": "any"},
    "volcano.JobSpec": {"schedulerName": "string", "minAvailable": "int32",
                        "volumes": {"list": "any"}, "tasks": {"list": "volcano.TaskSpec"},
                        "policies": {"list": "any"},
                        "plugins": {"map": {"list": "string"}},  # map[string][]string
                        "runningEstimate": "string", "queue": "string", "maxRetry": "int32",
                        "ttlSecondsAfterFinished": "int32", "priorityClassName": "string",
                        "minSuccess": "int32",
                        "networkTopology": "volcano.NetworkTopologySpec"},
    "volcano.TaskSpec": {"name": "string", "replicas": "int32", "minAvailable": "int32",
                         "template": "core.v1.PodTemplateSpec", "policies": {"list": "any"},
                         "topologyPolicy": "string", "maxRetry": "int32", "dependsOn": "any",
                         "partitionPolicy": "volcano.PartitionPolicySpec"},
    "volcano.PartitionPolicySpec": {"totalPartitions": "int32", "partitionSize": "int32",
                                    "minPartitions": "int32",
                                    "networkTopology": "volcano.NetworkTopologySpec"},
})


# -- what the job controller creates -----------------------------------------------------


def _min_resources(job: VolcanoJob) -> dict[str, str]:
    """``calcPGMinResources``: the tasks' minimums, then more replicas up to minMember
    (``CalcFirstCountResources`` when minMember is below the tasks' minimums)."""
    counts = [0] * len(job.tasks)
    left = job.min_available
    for i, t in enumerate(job.tasks):
        counts[i] = min(t.min_available, left)
        left -= counts[i]
    for i, t in enumerate(job.tasks):
        more = min(t.replicas - counts[i], left)
        counts[i] += more
        left -= more
    total: dict[str, int] = {}
    for t, n in zip(job.tasks, counts, strict=True):
        for resource, value in t.template.requests.items():
            if resource != "pods":
                total[resource] = total.get(resource, 0) + value * n
    return {r: format_quantity(total[r], r) for r in sorted(total) if total[r]}


def podgroup_dict(job: VolcanoJob) -> dict[str, Any]:
    """The PodGroup the controller creates for ``job``."""
    spec: dict[str, Any] = {
        "minMember": job.min_available,
        "minTaskMember": {t.name: t.min_available for t in job.tasks},
        "minResources": _min_resources(job),
        "queue": job.queue,
    }
    if job.priority_class_name:
        spec["priorityClassName"] = job.priority_class_name
    if job.network_topology is not None:
        spec["networkTopology"] = job.network_topology.as_dict()
    policies = []
    for t in job.tasks:
        if t.partitions is not None:
            policy: dict[str, Any] = {
                "name": t.name, "subGroupSize": t.partitions.size,
                "minSubGroups": t.partitions.minimum,
                "labelSelector": {"matchLabels": {TASK_SPEC_KEY: t.name}},
                "matchLabelKeys": [PARTITION_ID_KEY]}
            if t.partitions.network_topology is not None:
                policy["networkTopology"] = t.partitions.network_topology.as_dict()
            policies.append(policy)
    if policies:
        spec["subGroupPolicy"] = policies
    return {"apiVersion": PODGROUP_API_VERSION, "kind": "PodGroup",
            "metadata": {"name": job.podgroup_name, "namespace": job.namespace,
                         "labels": dict(job.labels), "annotations": dict(job.annotations)},
            "spec": spec}


def _pod(job: VolcanoJob, task: Task, index: int) -> Pod:
    marks = {TASK_INDEX_KEY: str(index), JOB_NAME_KEY: job.name, TASK_SPEC_KEY: task.name,
             QUEUE_NAME_KEY: job.queue}
    labels = {**task.template.labels, **marks, JOB_NAMESPACE_KEY: job.namespace}
    if task.partitions is not None:
        labels[PARTITION_ID_KEY] = str(index // task.partitions.size)
    annotations = {**task.template.annotations, **marks,
                   GROUP_NAME_ANNOTATION: job.podgroup_name}
    overrides: dict[str, Any] = {"labels": labels, "annotations": annotations}
    if not task.own_scheduler:
        overrides["scheduler_name"] = job.scheduler_name
    if task.template.priority_class_name is None and job.priority_class_name:
        overrides["priority_class_name"] = job.priority_class_name
    return task.template.make_pod(f"{job.name}-{task.name}-{index}", job.namespace, **overrides)


def job_pods(job: VolcanoJob, existing: set[str]) -> list[Pod]:
    """The pods the controller creates, except those whose key is in ``existing``."""
    return [pod for t in job.tasks for i in range(t.replicas)
            if (pod := _pod(job, t, i)).key not in existing]


def _typed_podgroup(job: VolcanoJob) -> PodGroup:
    """The controller's PodGroup parsed as any other, its topology specs pointing back at
    the Job's fields; a task minimum its partitions already ask for is left to them."""
    pg = parse_podgroup(podgroup_dict(job), job.origin)
    topology = {t.name: t.partitions.network_topology for t in job.tasks if t.partitions}
    policies = tuple(dataclasses.replace(p, network_topology=topology.get(p.name))
                     for p in pg.policies)
    implied = {t.name for t in job.tasks
               if t.partitions and t.min_available <= t.partitions.minimum * t.partitions.size}
    minimums = tuple((t, n) for t, n in task_minimums(pg).items() if t not in implied)
    return dataclasses.replace(pg, network_topology=job.network_topology, policies=policies,
                               min_task_member=minimums)


# -- the builder -------------------------------------------------------------------------


def volcano_jobs(inputs: Inputs) -> list[VolcanoJob]:
    return [o for o in inputs.objects.get(KIND, []) if isinstance(o, VolcanoJob)]


def demands(inputs: Inputs) -> Iterable[Demand]:
    """The pods every Job asks for, task by task."""
    for job in volcano_jobs(inputs):
        for i, task in enumerate(job.tasks):
            yield Demand(job.origin, f"spec.tasks[{i}].replicas", task.replicas)


def build(inputs: Inputs) -> Contribution:
    found = volcano_jobs(inputs)
    out = Contribution()
    if not found:
        return out
    tiers = tiers_of(inputs)
    existing = {p.key for p in inputs.pods}
    made = {pg.key for pg in podgroups(inputs)}  # PodGroups the controller created already
    groups: list[PodGroup] = []
    for job in found:
        try:
            pg = _typed_podgroup(job)
        except InputError as err:
            raise job.origin.locate(err) from None
        out.pods.extend(job_pods(job, existing))
        out.warnings.extend(job.warnings)
        if pg.key not in made:  # else that PodGroup, as it is, gangs the pods
            groups.append(pg)
    keys = {g.key for g in groups}  # pods naming them, created here or in the inputs
    members = [p for p in (*inputs.pods, *out.pods) if group_of(p) in keys]
    add_gangs(out, groups, members, tiers, VolcanoQueues(inputs),
              priority_classes.classes(inputs), kind=KIND)
    out.warnings.extend(tiers.warnings)
    return out


FRONT_END = FrontEnd(
    "volcano-job", (Kind(KIND, (API_VERSION,), _handle, schema="volcano.Job"),), build,
    demands)

__all__ = [
    "API_VERSION",
    "FRONT_END",
    "Task",
    "VolcanoJob",
    "build",
    "job_pods",
    "parse_job",
    "podgroup_dict",
    "volcano_jobs",
]
