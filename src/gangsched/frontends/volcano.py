"""Volcano front-end: ``PodGroup`` (``scheduling.volcano.sh/v1beta1``) and ``HyperNode``
(``topology.volcano.sh/v1alpha1``) into gang trees.

Membership, as the Volcano scheduler decides it:

* A pod belongs to the PodGroup named by its ``scheduling.k8s.io/group-name`` annotation,
  in the pod's namespace. (``scheduling.volcano.sh/group-name`` is *not* read: Volcano's
  scheduler keys jobs on ``scheduling.k8s.io/group-name`` only, ``getJobID`` in
  ``pkg/scheduler/api/job_info.go``; the other key is an input of its PodGroup controller.)
* A pod joins the first ``subGroupPolicy`` whose ``labelSelector`` matches it and for which
  it has a non-empty value of every ``matchLabelKeys`` key; pods with equal values form one
  subgroup. A policy without ``matchLabelKeys`` takes no pod (Volcano's
  ``getOrCreateSubJob`` uses a policy only when ``getSubJobMatchValues`` returns values):
  its pods go on to the next policy or stay with the job's own pods, and a ``minSubGroups``
  of it can never be met (a warning says so).
* The task of a pod (for ``minTaskMember``) is its ``volcano.sh/task-spec`` annotation,
  else label.

The tree of one PodGroup (DESIGN.md section 1):

* root Group: ``min_pods = minMember - bound``, topology from ``networkTopology``; every
  child is required (children whose minimum is zero are trivially satisfied).
* per policy a Group named after it with ``min_groups = minSubGroups`` over its complete
  subgroups (subgroups with at least ``subGroupSize`` pods; incomplete ones can never run,
  so their pods wait outside the tree), each subgroup a Group (named by its label values,
  ``-``-joined) with ``min_pods = subGroupSize`` and the policy's topology, holding PodSets
  of identical pods; when every pod of the subgroup is needed the minimum sits on the
  PodSets (all required).
* per task of ``minTaskMember`` whose pods are all outside the policies, a Group named
  after the task with ``min_pods`` the task's minimum; a task with pods inside a policy is
  checked for its count but not represented (a warning says so). As in Volcano's
  scheduler, ``minTaskMember`` is enforced only when ``minMember`` is at least the sum of
  its entries (``JobInfo.CheckTaskValid``); below it, no task minimum is.
* every other pending pod in PodSets of identical pods directly under the root (min 0).

Pods already bound (``nodeName`` set) are not in the tree: they count toward ``minMember``,
``minTaskMember`` and their subgroup's size, and lower those minima in the tree. Too few
pods is not an error: the Workload has no tree and says what it is waiting for. Every
member pod is claimed, in the tree or not (Volcano never schedules them on their own).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gangsched.api import names, schema
from gangsched.api.errors import InputError
from gangsched.api.loader import Document, Inputs, Kind, with_generated_name
from gangsched.api.objects import (
    about,
    as_int,
    as_list,
    as_mapping,
    as_str,
    check_label_key,
    check_name,
    mappings,
    object_name,
    parse_label_selector,
    required_str,
)
from gangsched.api.quantity import parse_resources
from gangsched.api.types import LabelSelector, Pod
from gangsched.cluster.topology import infer_levels
from gangsched.frontends import priority_classes
from gangsched.frontends.base import Contribution, FrontEnd, add_groups
from gangsched.frontends.networktopology import (
    HyperNode,
    NetworkTopology,
    Origin,
    Tiers,
    parse_hypernode,
    parse_network_topology,
    resolve_tiers,
)
from gangsched.frontends.pods import identical, natural_key, podset
from gangsched.frontends.sched_queues import ENQUEUED, VolcanoQueues
from gangsched.frontends.sched_queues import VOLCANO_KIND as VOLCANO_QUEUE_KIND
from gangsched.gang import Constraint, Group, PodSet, minimum_pods
from gangsched.model import Workload

GROUP = "scheduling.volcano.sh"
API_VERSION = f"{GROUP}/v1beta1"
HYPERNODE_API_VERSION = "topology.volcano.sh/v1alpha1"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_KEY = "volcano.sh/task-spec"
DEFAULT_QUEUE = "default"

# -- typed objects -----------------------------------------------------------------------


@dataclass(frozen=True)
class SubGroupPolicy:
    """One ``spec.subGroupPolicy[]`` entry."""

    name: str
    sub_group_size: int | None = None  # pods per subgroup; Volcano's default is 1
    min_sub_groups: int = 0
    selector: LabelSelector | None = None  # None: every pod
    match_label_keys: tuple[str, ...] = ()
    network_topology: NetworkTopology | None = None

    @property
    def size(self) -> int:
        return 1 if self.sub_group_size is None else self.sub_group_size

    def match(self, pod: Pod) -> tuple[str, ...] | None:
        """The pod's subgroup (its matchLabelKeys values), or None when it is not in
        this policy (Volcano's ``getSubJobMatchValues`` plus its non-empty rule)."""
        if self.selector is not None and not self.selector.matches(pod.labels):
            return None
        values = tuple(pod.labels.get(k, "") for k in self.match_label_keys)
        return values if values and all(values) else None  # no keys: no subgroup


@dataclass(frozen=True)
class PodGroup:
    """A ``scheduling.volcano.sh/v1beta1`` PodGroup."""

    name: str
    namespace: str = "default"
    min_member: int = 0
    min_task_member: tuple[tuple[str, int], ...] = ()
    min_resources: tuple[tuple[str, int], ...] = ()
    queue: str = DEFAULT_QUEUE
    # status.phase: Pending, Inqueue, Running... It decides only whether Volcano's enqueue
    # gate would still hold a group of minResources back (a warning), so two parses are
    # equal when that is the same: a status update (serve's own, each cycle) rebuilds no
    # gang tree
    phase: str = field(default="", compare=False)
    priority_class_name: str | None = None
    network_topology: NetworkTopology | None = None
    policies: tuple[SubGroupPolicy, ...] = ()
    origin: Origin = field(default_factory=Origin)
    gated: bool = field(default=False, init=False)  # held at the enqueue gate, by phase

    def __post_init__(self) -> None:
        object.__setattr__(self, "gated",
                           bool(self.min_resources) and self.phase not in ENQUEUED)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


# -- parsing -----------------------------------------------------------------------------


INT32_MAX = 2**31 - 1


def int32_count(obj: Mapping[str, Any], key: str, field: str, default: int = 0,
                minimum: int = 0) -> int:
    """A non-negative (or at least ``minimum``) int32 field, as the CRD declares it."""
    path = f"{field}.{key}"
    value = as_int(obj.get(key), path, default)
    if value < minimum:
        raise InputError(f"must be >= {minimum}, not {value}", field=path)
    if value > INT32_MAX:
        raise InputError(f"must fit in 32 bits (at most {INT32_MAX}), not {value}", field=path)
    return value


def _task_minimums(value: object, field: str) -> tuple[tuple[str, int], ...]:
    out: list[tuple[str, int]] = []
    for task, raw in as_mapping(value, field).items():
        if not isinstance(task, str) or not task:
            raise InputError(f"invalid task name {task!r}", field=field)
        out.append((task, int32_count({task: raw}, task, field)))
    return tuple(out)


def _label_keys(value: object, field: str) -> tuple[str, ...]:
    keys: list[str] = []
    for i, raw in enumerate(as_list(value, field)):
        key = as_str(raw, f"{field}[{i}]")
        if not key:
            raise InputError("must be a non-empty label key", field=f"{field}[{i}]")
        check_label_key(key, f"{field}[{i}]")
        if key in keys:
            raise InputError(f"duplicate key {key!r}", field=f"{field}[{i}]")
        keys.append(key)
    return tuple(keys)


def _parse_policy(item: Mapping[str, Any], path: str) -> SubGroupPolicy:
    size = None
    if item.get("subGroupSize") is not None:
        size = int32_count(item, "subGroupSize", path, minimum=1)  # the CRD's minimum
    selector_field = f"{path}.labelSelector"
    selector = item.get("labelSelector")
    return SubGroupPolicy(
        name=required_str(item, "name", path),
        sub_group_size=size,
        min_sub_groups=int32_count(item, "minSubGroups", path),
        selector=None if selector is None else parse_label_selector(selector, selector_field),
        match_label_keys=_label_keys(item.get("matchLabelKeys"), f"{path}.matchLabelKeys"),
        network_topology=parse_network_topology(item.get("networkTopology"),
                                                f"{path}.networkTopology"),
    )


def _parse_policies(value: object, field: str) -> tuple[SubGroupPolicy, ...]:
    policies: list[SubGroupPolicy] = []
    for item, path in mappings(value, field):
        policy = _parse_policy(item, path)
        if any(p.name == policy.name for p in policies):
            raise InputError(f"duplicate subGroupPolicy name {policy.name!r}",
                             field=f"{path}.name")
        policies.append(policy)
    return tuple(policies)


def parse_podgroup(obj: Mapping[str, Any], origin: Origin | None = None) -> PodGroup:
    """A Volcano PodGroup object; errors name the field inside it."""
    name = object_name(obj, "PodGroup")
    with about(f"PodGroup/{name}"):
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        resources = parse_resources(spec.get("minResources"), "spec.minResources")
        queue = as_str(spec.get("queue"), "spec.queue") or DEFAULT_QUEUE
        check_name(queue, "spec.queue", names.dns1123_subdomain, "queue name")
        return PodGroup(
            name=name,
            namespace=as_str(meta.get("namespace"), "metadata.namespace") or "default",
            min_member=int32_count(spec, "minMember", "spec"),
            min_task_member=_task_minimums(spec.get("minTaskMember"), "spec.minTaskMember"),
            min_resources=tuple(sorted(resources.items())),
            queue=queue,
            priority_class_name=as_str(spec.get("priorityClassName"),
                                       "spec.priorityClassName") or None,
            network_topology=parse_network_topology(spec.get("networkTopology"),
                                                    "spec.networkTopology"),
            policies=_parse_policies(spec.get("subGroupPolicy"), "spec.subGroupPolicy"),
            phase=as_str(as_mapping(obj.get("status"), "status").get("phase"),
                         "status.phase"),
            origin=origin or Origin(obj=f"PodGroup/{name}"),
        )


def _handle_podgroup(doc: Document, inputs: Inputs) -> None:
    pg = parse_podgroup(with_generated_name(doc), Origin.of(doc))
    inputs.claim(doc, f"{pg.key} ({GROUP})")  # the Workload API has a PodGroup kind too
    inputs.add_object(doc, pg)


def _handle_hypernode(doc: Document, inputs: Inputs) -> None:
    hn = parse_hypernode(with_generated_name(doc), Origin.of(doc))
    inputs.claim(doc)
    inputs.add_object(doc, hn)


# Known fields of the PodGroup CRD (volcano-sh/volcano at ed72c7c, config/crd/volcano/bases/
# scheduling.volcano.sh_podgroups.yaml); minResources values must match the CRD's
# quantity pattern as well as decode as quantities.
schema.define({
    "volcano.PodGroup": {"apiVersion": "string", "kind": "string",
                         "metadata": "meta.v1.ObjectMeta", "spec": "volcano.PodGroupSpec",
                         "status": "volcano.PodGroupStatus"},
    "volcano.PodGroupSpec": {"minMember": "int32", "minResources": {"map": "crd-quantity"},
                             "minTaskMember": {"map": "int32"},
                             "networkTopology": "volcano.NetworkTopologySpec",
                             "priorityClassName": "string", "queue": "string",
                             "subGroupPolicy": {"list": "volcano.SubGroupPolicySpec"}},
    "volcano.SubGroupPolicySpec": {"name": "string", "subGroupSize": "int32",
                                   "minSubGroups": "int32",
                                   "labelSelector": "meta.v1.LabelSelector",
                                   "matchLabelKeys": {"list": "string"},
                                   "networkTopology": "volcano.NetworkTopologySpec"},
    "volcano.PodGroupStatus": {"conditions": {"list": "volcano.PodGroupCondition"},
                               "failed": "int32", "phase": "string", "running": "int32",
                               "succeeded": "int32"},
    "volcano.PodGroupCondition": {"lastTransitionTime": "date-time", "message": "string",
                                  "reason": "string", "status": "string",
                                  "transitionID": "string", "type": "string"},
})


# -- membership --------------------------------------------------------------------------

def group_of(pod: Pod) -> str | None:
    """``namespace/name`` of the PodGroup a pod names, if any."""
    name = pod.annotations.get(GROUP_NAME_ANNOTATION)
    return f"{pod.namespace}/{name}" if name else None


def task_of(pod: Pod) -> str | None:
    return pod.annotations.get(TASK_SPEC_KEY) or pod.labels.get(TASK_SPEC_KEY) or None


def members_by_group(pods: Iterable[Pod]) -> dict[str, list[Pod]]:
    out: dict[str, list[Pod]] = {}
    for pod in pods:
        key = group_of(pod)
        if key is not None:
            out.setdefault(key, []).append(pod)
    return out


@dataclass
class _Subgroup:
    name: str  # the matchLabelKeys values, "-"-joined (Volcano's SubJob id suffix)
    pending: list[Pod] = field(default_factory=list)
    bound: int = 0

    @property
    def total(self) -> int:
        return len(self.pending) + self.bound


@dataclass
class _Split:
    """A PodGroup's pods sorted into policies' subgroups, task groups and the rest."""

    subgroups: list[list[_Subgroup]]  # per policy, in label-value order
    tasks: dict[str, list[Pod]]  # minTaskMember tasks represented in the tree: all pods
    task_counts: dict[str, int]  # every minTaskMember task: its pods, bound or not
    loose: list[Pod]  # pending pods in no subgroup and no task group
    total: int
    bound: int
    warnings: list[str]


def _assign(pg: PodGroup, pods: Sequence[Pod]) -> tuple[list[list[_Subgroup]], list[Pod]]:
    """Pods into the first policy that takes them; returns subgroups and the others."""
    found: list[dict[tuple[str, ...], _Subgroup]] = [{} for _ in pg.policies]
    outside: list[Pod] = []
    for pod in pods:
        for i, policy in enumerate(pg.policies):
            values = policy.match(pod)
            if values is not None:
                sub = found[i].setdefault(values, _Subgroup("-".join(values)))
                if pod.node_name:
                    sub.bound += 1
                else:
                    sub.pending.append(pod)
                break
        else:
            outside.append(pod)
    ordered = [[groups[v] for v in sorted(groups, key=lambda v: tuple(map(natural_key, v)))]
               for groups in found]
    return ordered, outside


def task_minimums(pg: PodGroup) -> dict[str, int]:
    """The ``minTaskMember`` entries Volcano's scheduler enforces: none when ``minMember``
    is below their sum (``JobInfo.CheckTaskValid``, ``CheckTaskReady``: "if job
    minAvailable is less than sum of(task minAvailable), skip this check"), else all."""
    minimums = dict(pg.min_task_member)
    return minimums if pg.min_member >= sum(minimums.values()) else {}


def _split(pg: PodGroup, pods: Sequence[Pod]) -> _Split:
    subgroups, outside = _assign(pg, pods)
    where = f"{pg.origin.where} {pg.origin.obj or f'PodGroup/{pg.name}'}".strip()
    warnings = [f"{where}: subGroupPolicy {p.name} has no matchLabelKeys: Volcano forms no "
                "subgroup from it" + (f", so its minSubGroups {p.min_sub_groups} is never met"
                                      if p.min_sub_groups else "; its pods stay the job's")
                for p in pg.policies if not p.match_label_keys]
    minimums = task_minimums(pg)
    counts = {t: sum(1 for p in pods if task_of(p) == t) for t in minimums}
    inside = {task_of(p) for sub in subgroups for s in sub for p in s.pending}
    tasks: dict[str, list[Pod]] = {}
    for task in minimums:
        if task in inside:
            warnings.append(f"{where}: minTaskMember of task {task!r} is not enforced inside "
                            "subGroupPolicy subgroups")
        else:
            tasks[task] = [p for p in outside if task_of(p) == task]
    in_tasks = {p.key for ps in tasks.values() for p in ps}
    loose = [p for p in outside if not p.node_name and p.key not in in_tasks]
    bound = sum(1 for p in pods if p.node_name)
    return _Split(subgroups, tasks, counts, loose, len(pods), bound, warnings)


# -- waiting -----------------------------------------------------------------------------


def _runnable(pg: PodGroup, split: _Split) -> int:
    """Pods that can run: bound ones and pending ones outside incomplete subgroups."""
    in_subgroups = sum(len(s.pending) for policy, subs in zip(pg.policies, split.subgroups,
                                                              strict=True)
                       for s in subs if s.total >= policy.size)
    in_tasks = sum(1 for ps in split.tasks.values() for p in ps if not p.node_name)
    return split.bound + in_subgroups + in_tasks + len(split.loose)


def _waiting(pg: PodGroup, split: _Split) -> list[str]:
    reasons: list[str] = []
    if split.total < pg.min_member:
        reasons.append(f"has {split.total} of minMember {pg.min_member}")
    for task, minimum in task_minimums(pg).items():
        if split.task_counts[task] < minimum:
            reasons.append(f"task {task} has {split.task_counts[task]} of minTaskMember "
                           f"{minimum}")
    for policy, subs in zip(pg.policies, split.subgroups, strict=True):
        complete = sum(1 for s in subs if s.total >= policy.size)
        if complete < policy.min_sub_groups:
            reasons.append(f"subGroupPolicy {policy.name} has {complete} complete "
                           f"subgroups (of {policy.size} pods) of minSubGroups "
                           f"{policy.min_sub_groups}")
    runnable = _runnable(pg, split)
    if not reasons and runnable < pg.min_member:
        reasons.append(f"only {runnable} of minMember {pg.min_member} pods are outside "
                       "incomplete subgroups")
    return reasons


# -- the tree ----------------------------------------------------------------------------


class _Names:
    """Child names unique among siblings (paths must be unique)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def __call__(self, name: str) -> str:
        out, n = name, 1
        while out in self.taken:
            n += 1
            out = f"{name}#{n}"
        self.taken.add(out)
        return out


def _podsets(path: str, pods: Sequence[Pod], names: _Names, required: bool) -> list[PodSet]:
    """Pods split into sets of identical pods; all of a set needed when ``required``."""
    sets = identical(pods)
    return [
        podset(names("pods" if len(sets) == 1 else f"pods-{i}"), path, members,
               len(members) if required else 0)
        for i, members in enumerate(sets)
    ]


def _gang(name: str, path: str, pending: Sequence[Pod], needed: int,
          topology: tuple[Constraint, ...] = ()) -> Group:
    """A group of which ``needed`` pods must run; all-required sets carry the minimum."""
    sets = _podsets(path, pending, _Names(), required=needed >= len(pending))
    return Group(name=name, path=path, children=list(sets), min_groups=len(sets),
                 min_pods=needed, topology=topology)


def _inside(child: tuple[Constraint, ...], parent: tuple[Constraint, ...],
            tiers: Tiers) -> tuple[Constraint, ...]:
    """Drop a child's required constraint wider than its parent's: the parent implies it."""
    mine, theirs = required_key_of(child), required_key_of(parent)
    if mine and theirs and tiers.rank(mine) > tiers.rank(theirs):
        return tuple(c for c in child if c.mode != "required")
    return child


def required_key_of(constraints: tuple[Constraint, ...]) -> str | None:
    return next((c.key for c in constraints if c.mode == "required"), None)


def _policy_group(pg: PodGroup, policy: SubGroupPolicy, subs: Sequence[_Subgroup],
                  name: str, path: str, top: tuple[Constraint, ...],
                  tiers: Tiers) -> Group | None:
    complete = [s for s in subs if s.total >= policy.size]
    done = sum(1 for s in complete if not s.pending)  # already running in full
    live = [s for s in complete if s.pending]
    if not live:
        return None
    inner = _inside(tiers.constraint(policy.network_topology, pg.origin), top, tiers)
    names = _Names()
    kids: list[Group | PodSet] = []
    for s in live:
        sub = names(s.name)
        kids.append(_gang(sub, f"{path}/{sub}", s.pending, max(0, policy.size - s.bound),
                          inner))
    return Group(name=name, path=path, children=kids,
                 min_groups=max(0, policy.min_sub_groups - done))


def _tree(pg: PodGroup, split: _Split, tiers: Tiers, kind: str, priority: int) -> Group:
    root = pg.key
    top = tiers.constraint(pg.network_topology, pg.origin)
    names = _Names()
    kids: list[Group | PodSet] = []
    for policy, subs in zip(pg.policies, split.subgroups, strict=True):
        name = names(policy.name)
        group = _policy_group(pg, policy, subs, name, f"{root}/{name}", top, tiers)
        if group is not None:
            kids.append(group)
    minimums = task_minimums(pg)
    for task, pods in split.tasks.items():
        pending = [p for p in pods if not p.node_name]
        if pending:
            name = names(task)
            bound = len(pods) - len(pending)
            kids.append(_gang(name, f"{root}/{name}", pending,
                              max(0, minimums[task] - bound)))
    kids.extend(_podsets(root, split.loose, names, required=False))
    min_pods = max(0, pg.min_member - split.bound)
    gang = min_pods > 0 or any(minimum_pods(k) > 0 for k in kids)
    return Group(name=pg.name, path=root, children=kids,
                 min_groups=len(kids) if gang else 0, min_pods=min_pods, topology=top,
                 priority=priority, kind=kind, source=pg.key)


def build_workload(pg: PodGroup, pods: Sequence[Pod], tiers: Tiers,
                   classes: Mapping[str, int], kind: str = "PodGroup"
                   ) -> tuple[Workload, list[str]]:
    """The Workload of one PodGroup and its member pods, and warnings about it. Its
    priority is its ``priorityClassName``'s value (``classes``: each PriorityClass's), as
    Volcano ranks a job, else its pods' highest."""
    ordered = sorted(pods, key=lambda p: natural_key(p.name))
    split = _split(pg, ordered)
    own = classes.get(pg.priority_class_name) if pg.priority_class_name else None
    priority = own if own is not None else max((p.priority for p in ordered), default=0)
    workload = Workload(name=pg.key, kind=kind, tree=None, priority=priority,
                        source=pg.origin.where)
    reasons = _waiting(pg, split)
    if reasons:  # its pending pods wait with it, and it says how many it needs
        workload.waiting = "waiting for pods: " + "; ".join(reasons)
        workload.pods = {p.key: p for p in ordered if not p.node_name}
        workload.waiting_minimum = pg.min_member
        return workload, split.warnings
    tree = _tree(pg, split, tiers, kind, priority)
    in_tree = {key for ps in _leaves(tree) for key in ps.pods}
    workload.tree = tree
    workload.pods = {p.key: p for p in ordered if p.key in in_tree}
    return workload, split.warnings


def _leaves(node: Group | PodSet) -> Iterable[PodSet]:
    if isinstance(node, PodSet):
        yield node
        return
    for child in node.children:
        yield from _leaves(child)


def add_gangs(out: Contribution, groups: Sequence[PodGroup], pods: Sequence[Pod],
              tiers: Tiers, queues: VolcanoQueues, classes: Mapping[str, int],
              kind: str = "PodGroup") -> None:
    """Workloads for ``groups`` with their member pods among ``pods``; pods naming a
    PodGroup that is not there wait for it, and so does a PodGroup whose queue does not
    admit it. Every member pod is claimed."""

    def one(pg: PodGroup, mine: list[Pod]) -> tuple[Workload, list[str]]:
        workload, warnings = build_workload(pg, mine, tiers, classes, kind)
        over = queues.overused(pg.min_resources, pg.phase)
        if over:
            where = f"{pg.origin.where} {pg.origin.obj or f'PodGroup/{pg.name}'}".strip()
            warnings = [*warnings, f"{where}: {over}"]
        blocked = queues.problem(pg.queue)
        if blocked and not workload.invalid:
            workload.tree, workload.waiting = None, blocked
            workload.pods = {p.key: p for p in mine if not p.node_name}
        return workload, warnings

    add_groups(out, groups, members_by_group(pods), one, kind)


# -- the builder -------------------------------------------------------------------------


def podgroups(inputs: Inputs) -> list[PodGroup]:
    return [o for o in inputs.objects.get("PodGroup", []) if isinstance(o, PodGroup)]


def hypernodes(inputs: Inputs) -> list[HyperNode]:
    return [o for o in inputs.objects.get("HyperNode", []) if isinstance(o, HyperNode)]


def tiers_of(inputs: Inputs) -> Tiers:
    """The tier scheme: HyperNodes if any, else the inputs' (or well-known) levels."""
    levels = inputs.topology_levels
    if levels is None:
        levels = infer_levels(inputs.nodes)
    return resolve_tiers(hypernodes(inputs), inputs.nodes, levels)


def build(inputs: Inputs) -> Contribution:
    tiers = tiers_of(inputs)
    out = Contribution(levels=tiers.levels, node_labels=tiers.node_labels)
    add_gangs(out, podgroups(inputs), inputs.pods, tiers, VolcanoQueues(inputs),
              priority_classes.classes(inputs))
    out.warnings.extend(tiers.warnings)
    return out


FRONT_END = FrontEnd(
    "volcano",
    (Kind("PodGroup", (API_VERSION,), _handle_podgroup, schema="volcano.PodGroup"),
     Kind("HyperNode", (HYPERNODE_API_VERSION,), _handle_hypernode,
          schema="volcano.HyperNode"), VOLCANO_QUEUE_KIND),
    build,
)

__all__ = [
    "API_VERSION",
    "FRONT_END",
    "GROUP_NAME_ANNOTATION",
    "TASK_SPEC_KEY",
    "PodGroup",
    "SubGroupPolicy",
    "add_gangs",
    "build",
    "build_workload",
    "int32_count",
    "members_by_group",
    "parse_podgroup",
    "task_minimums",
    "tiers_of",
]
