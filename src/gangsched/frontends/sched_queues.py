"""The queues of Volcano (``scheduling.volcano.sh/v1beta1`` ``Queue``) and KAI
(``scheduling.run.ai/v2`` ``Queue``): read so that the manifests people apply with their
workloads (a KAI quick start creates its queues first) load, and used where they decide
whether a gang may be scheduled at all. Queues decide *when* (quotas, fair share,
reclaim); gangsched decides *where*, so neither queue's resources are enforced.

Both kinds are cluster scoped and checked against their CRDs' schemas.

**Volcano** (volcano-sh/apis ``QueueSpec``; the admission webhooks
``validate_queue.go`` and ``validate_podgroup.go``): ``weight`` 1 to 65535,
``priority`` from 0, ``dequeueStrategy`` ``fifo`` or ``traverse``, a ``status.state`` of
``Open``, ``Closed``, ``Closing`` or ``Unknown`` (none: ``Open``, as the queue
controller sets it), a parent other than itself. Volcano admits a PodGroup only to a
queue that exists and is ``Open``; so with Volcano queues in the inputs, a PodGroup (of
its own, a Volcano Job's or a ModelServing's) whose ``spec.queue`` names one that is not
``Open`` or is not there waits, with the webhook's words. ``default`` and ``root``,
which Volcano creates, count as there unless given.

**KAI** (KAI-Scheduler ``pkg/apis/scheduling/v2``): ``spec.resources`` required (the
webhook's "resources must be specified"), a parent other than itself. KAI's scheduler
skips a PodGroup whose queue does not exist ("Queue '<name>' does not exist"), whose
queue's parent does not exist, or whose queue is not a leaf (another queue names it as
parent); with KAI queues in the inputs such a PodGroup waits, saying which.

Without queues of a kind in the inputs, the queues are taken to be in the cluster: no
workload waits for one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gangsched.api import schema
from gangsched.api.loader import Document, Inputs, Kind
from gangsched.api.objects import as_int, as_mapping, as_str
from gangsched.api.quantity import format_quantity

VOLCANO_API_VERSION = "scheduling.volcano.sh/v1beta1"
KAI_API_VERSION = "scheduling.run.ai/v2"
KIND = "Queue"
VOLCANO_STATES = ("Open", "Closed", "Closing", "Unknown")
VOLCANO_BUILTIN = ("default", "root")
DEQUEUE_STRATEGIES = ("fifo", "traverse")
MAX_WEIGHT = 65535


@dataclass(frozen=True)
class VolcanoQueue:
    name: str
    state: str  # status.state; "Open" when not set


@dataclass(frozen=True)
class KaiQueue:
    name: str
    parent: str  # spec.parentQueue; "" for a top queue


def _claim(doc: Document, inputs: Inputs) -> None:
    """One queue of a name per project (a Volcano and a KAI queue may share one)."""
    inputs.claim(doc, f"{doc.api_version.partition('/')[0]} {doc.name}")


def _handle_volcano(doc: Document, inputs: Inputs) -> None:
    """The schema has checked the types."""
    spec = as_mapping(doc.obj.get("spec"), "spec")
    weight = spec.get("weight")
    if weight is not None and not 1 <= as_int(weight, "spec.weight") <= MAX_WEIGHT:
        raise doc.error(f"must be between 1 and {MAX_WEIGHT}, not {weight}", "spec.weight")
    priority = spec.get("priority")
    if priority is not None and as_int(priority, "spec.priority") < 0:
        raise doc.error(f"must be at least 0, not {priority}", "spec.priority")
    strategy = as_str(spec.get("dequeueStrategy"), "spec.dequeueStrategy")
    if strategy and strategy not in DEQUEUE_STRATEGIES:
        raise doc.error(f"must be one of {', '.join(DEQUEUE_STRATEGIES)}, not {strategy!r}",
                        "spec.dequeueStrategy")
    if as_str(spec.get("parent"), "spec.parent") == doc.name:
        raise doc.error(f"queue {doc.name} cannot use itself as parent", "spec.parent")
    status = as_mapping(doc.obj.get("status"), "status")
    state = as_str(status.get("state"), "status.state")
    if state and state not in VOLCANO_STATES:
        raise doc.error(f"queue state must be in {', '.join(VOLCANO_STATES)}, not {state!r}",
                        "status.state")
    _claim(doc, inputs)
    inputs.add_object(doc, VolcanoQueue(doc.name, state or "Open"))


def _handle_kai(doc: Document, inputs: Inputs) -> None:
    """The schema has checked the types."""
    spec = as_mapping(doc.obj.get("spec"), "spec")
    if spec.get("resources") is None:
        raise doc.error("resources must be specified", "spec.resources")
    parent = as_str(spec.get("parentQueue"), "spec.parentQueue")
    if parent == doc.name:
        raise doc.error(f"queue {doc.name} cannot be its own parent", "spec.parentQueue")
    _claim(doc, inputs)
    inputs.add_object(doc, KaiQueue(doc.name, parent))


_RESOURCES = {"map": "crd-quantity"}
_NODE_GROUPS = {"requiredDuringSchedulingIgnoredDuringExecution": {"list": "string"},
                "preferredDuringSchedulingIgnoredDuringExecution": {"list": "string"}}
schema.define({
    "volcano.Queue": {"apiVersion": "string", "kind": "string",
                      "metadata": "meta.v1.ObjectMeta", "spec": "volcano.QueueSpec",
                      "status": "volcano.QueueStatus"},
    "volcano.QueueSpec": {"weight": "int32", "capability": _RESOURCES, "reclaimable": "boolean",
                          "extendClusters": {"list": "volcano.QueueCluster"},
                          "guarantee": "volcano.QueueGuarantee",
                          "affinity": "volcano.QueueAffinity", "type": "string",
                          "parent": "string", "deserved": _RESOURCES, "priority": "int32",
                          "dequeueStrategy": "string"},
    "volcano.QueueCluster": {"name": "string", "weight": "int32", "capacity": _RESOURCES},
    "volcano.QueueGuarantee": {"resource": _RESOURCES},
    "volcano.QueueAffinity": {"nodeGroupAffinity": "volcano.NodeGroups",
                              "nodeGroupAntiAffinity": "volcano.NodeGroups"},
    "volcano.NodeGroups": _NODE_GROUPS,
    "volcano.QueueStatus": {"state": "string", "unknown": "int32", "pending": "int32",
                            "running": "int32", "inqueue": "int32", "completed": "int32",
                            "reservation": "volcano.QueueReservation",
                            "allocated": _RESOURCES},
    "volcano.QueueReservation": {"nodes": {"list": "string"}, "resource": _RESOURCES},
    "kai.Queue": {"apiVersion": "string", "kind": "string", "metadata": "meta.v1.ObjectMeta",
                  "spec": "kai.QueueSpec", "status": "kai.QueueStatus"},
    "kai.QueueSpec": {"displayName": "string", "parentQueue": "string",
                      "resources": "kai.QueueResources", "priority": "int64",
                      "preemptMinRuntime": "string", "reclaimMinRuntime": "string"},
    "kai.QueueResources": {"gpu": "kai.QueueResource", "cpu": "kai.QueueResource",
                           "memory": "kai.QueueResource"},
    "kai.QueueResource": {"quota": "number", "overQuotaWeight": "number", "limit": "number"},
    "kai.QueueStatus": {"conditions": {"list": "kai.QueueCondition"},
                        "childQueues": {"list": "string"}, "allocated": _RESOURCES,
                        "allocatedNonPreemptible": _RESOURCES, "requested": _RESOURCES},
    "kai.QueueCondition": {"type": "string", "status": "string",
                           "lastProbeTime": "date-time", "lastTransitionTime": "date-time",
                           "reason": "string", "message": "string"},
})

VOLCANO_KIND = Kind(KIND, (VOLCANO_API_VERSION,), _handle_volcano, schema="volcano.Queue")
KAI_KIND = Kind(KIND, (KAI_API_VERSION,), _handle_kai, schema="kai.Queue")


OVERCOMMIT_FACTOR = 1.2  # Volcano's overcommit plugin's default overcommit-factor
ENQUEUED = ("Inqueue", "Running")  # PodGroup phases past the enqueue action


class VolcanoQueues:
    """The Volcano queues of the inputs, by name (none: every queue is taken to exist)."""

    def __init__(self, inputs: Inputs) -> None:
        self.queues: Mapping[str, VolcanoQueue] = {
            q.name: q for q in inputs.objects.get(KIND, []) if isinstance(q, VolcanoQueue)}
        self.inputs = inputs
        self._idle: dict[str, float] | None = None

    def overused(self, min_resources: tuple[tuple[str, int], ...], phase: str) -> str:
        """Why Volcano's enqueue action would keep a PodGroup of ``min_resources``
        Pending, or "": its overcommit plugin (in the default configuration) enqueues a
        job only when its ``minResources`` fit in the ready nodes' allocatable times
        :data:`OVERCOMMIT_FACTOR`, less what the pods on them request (each resource it
        names; a job without ``minResources`` is best effort). A PodGroup already Inqueue
        or Running went through; without nodes in the inputs nothing is said. A warning
        only: gangsched decides by the pods themselves, and in ``serve`` and ``simulate``
        what is idle changes."""
        if not min_resources or phase in ENQUEUED or not self.inputs.nodes:
            return ""
        idle = self._idle if self._idle is not None else self._idle_resources()
        over = [(r, amount, idle.get(r, 0.0)) for r, amount in min_resources
                if r != "pods" and amount > idle.get(r, 0.0)]
        if not over:
            return ""
        shown = ", ".join(f"{r} (minResources {format_quantity(amount, r)}, idle "
                          f"{format_quantity(int(max(free, 0)), r)})" for r, amount, free in over)
        return (f"resource in cluster is overused: {shown}; Volcano's overcommit plugin, "
                f"counting {OVERCOMMIT_FACTOR} x the ready nodes' allocatable, would keep it "
                "Pending (gangsched places it by its pods)")

    def _idle_resources(self) -> dict[str, float]:
        idle: dict[str, float] = {}
        for node in self.inputs.nodes:
            if node.ready:
                for r, amount in node.allocatable.items():
                    idle[r] = idle.get(r, 0.0) + amount * OVERCOMMIT_FACTOR
        for pod in self.inputs.pods:
            if pod.node_name:
                for r, amount in pod.requests.items():
                    idle[r] = idle.get(r, 0.0) - amount
        self._idle = idle
        return idle

    def problem(self, name: str) -> str:
        """Why a PodGroup of queue ``name`` cannot be admitted, or ""."""
        if not self.queues:
            return ""
        queue = self.queues.get(name)
        if queue is None:
            if name in VOLCANO_BUILTIN:
                return ""
            return (f"waiting for queue {name}: not found (Volcano admits PodGroups only to "
                    "a queue that exists)")
        if queue.state != "Open":
            return (f"waiting for queue {name}: can only submit PodGroup to queue with state "
                    f"`Open`, queue `{name}` status is `{queue.state}`")
        return ""


class KaiQueues:
    """The KAI queues of the inputs, by name (none: every queue is taken to exist)."""

    def __init__(self, inputs: Inputs) -> None:
        self.queues: Mapping[str, KaiQueue] = {
            q.name: q for q in inputs.objects.get(KIND, []) if isinstance(q, KaiQueue)}
        self.parents = {q.parent for q in self.queues.values() if q.parent}

    def problem(self, name: str) -> str:
        """Why KAI's scheduler skips a PodGroup of queue ``name``, or ""."""
        if not self.queues or not name:
            return ""
        queue = self.queues.get(name)
        if queue is None:
            return f"waiting for queue {name}: Queue '{name}' does not exist"
        if queue.parent and queue.parent not in self.queues:
            return (f"waiting for queue {name}: its parent queue '{queue.parent}' does not "
                    "exist")
        if name in self.parents:
            return (f"waiting for queue {name}: not a leaf queue (KAI schedules only the "
                    "PodGroups of leaf queues)")
        return ""
