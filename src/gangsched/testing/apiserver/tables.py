"""Server-side printing: the ``meta.k8s.io/v1 Table`` that ``kubectl get`` asks for.

Columns mirror the real server's for pods, nodes, events, namespaces and leases, and the
CRD printer columns of Volcano's PodGroup and HyperNode; every other kind gets Name and
Age. Columns with priority 1 show only with ``-o wide``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gangsched.testing.apiserver.resources import Resource

Obj = Mapping[str, Any]
NONE = "<none>"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    cell: Callable[[Obj, float], Any]
    priority: int = 0
    format: str = ""
    description: str = ""


def human_duration(seconds: float) -> str:
    """Kubernetes' ``duration.HumanDuration``."""
    if seconds < -1:
        return "<invalid>"
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    if days < 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def _age_of(value: Any, now: float) -> str:
    if not isinstance(value, str) or not value:
        return "<unknown>"
    try:
        when = datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    return human_duration(now - when.timestamp())


def _get(obj: Obj, path: str) -> Any:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _text(obj: Obj, path: str, default: str = NONE) -> str:
    value = _get(obj, path)
    return default if value is None or value == "" else str(value)


def _name(obj: Obj, now: float) -> str:
    return str(_get(obj, "metadata.name") or "")


def _age(obj: Obj, now: float) -> str:
    return _age_of(_get(obj, "metadata.creationTimestamp"), now)


NAME = Column("Name", "string", _name, format="name",
              description="Name must be unique within a namespace.")
AGE = Column("Age", "string", _age,
             description="CreationTimestamp is a timestamp representing the server time "
                         "when this object was created.")


def path(name: str, field: str, type_: str = "string", priority: int = 0,
         default: str = NONE) -> Column:
    """A column showing one field (a CRD printer column)."""
    return Column(name, type_, lambda o, _: _text(o, field, default), priority)


# -- pods ------------------------------------------------------------------------------------


def _pod_ready(obj: Obj, now: float) -> str:
    containers = _get(obj, "spec.containers") or []
    statuses = _get(obj, "status.containerStatuses") or []
    ready = sum(1 for s in statuses if isinstance(s, Mapping) and s.get("ready"))
    return f"{ready}/{len(containers)}"


def _pod_status(obj: Obj, now: float) -> str:
    if _get(obj, "metadata.deletionTimestamp"):
        return "Terminating"
    for s in _get(obj, "status.containerStatuses") or []:
        waiting = _get(s, "state.waiting.reason") if isinstance(s, Mapping) else None
        if waiting:
            return str(waiting)
    if _get(obj, "spec.schedulingGates"):
        return "SchedulingGated"
    return _text(obj, "status.reason", "") or _text(obj, "status.phase", "Unknown")


def _pod_restarts(obj: Obj, now: float) -> int:
    return sum(int(s.get("restartCount") or 0) for s in _get(obj, "status.containerStatuses")
               or [] if isinstance(s, Mapping))


def _pod_gates(obj: Obj, now: float) -> str:
    gates = _get(obj, "spec.readinessGates") or []
    return f"0/{len(gates)}" if gates else NONE


POD = [
    NAME,
    Column("Ready", "string", _pod_ready,
           description="The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", _pod_status,
           description="The aggregate status of the containers in this pod."),
    Column("Restarts", "string", _pod_restarts,
           description="The number of times the containers in this pod have been restarted."),
    AGE,
    path("IP", "status.podIP", priority=1),
    path("Node", "spec.nodeName", priority=1),
    path("Nominated Node", "status.nominatedNodeName", priority=1),
    Column("Readiness Gates", "string", _pod_gates, 1),
]


# -- nodes -----------------------------------------------------------------------------------


def _node_status(obj: Obj, now: float) -> str:
    state = "Unknown"
    for c in _get(obj, "status.conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            state = "Ready" if c.get("status") == "True" else "NotReady"
    if _get(obj, "spec.unschedulable"):
        state += ",SchedulingDisabled"
    return state


def _node_roles(obj: Obj, now: float) -> str:
    labels = _get(obj, "metadata.labels") or {}
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix):] for k in labels if k.startswith(prefix))
    if labels.get("kubernetes.io/role"):
        roles.append(str(labels["kubernetes.io/role"]))
    return ",".join(r for r in roles if r) or NONE


def _address(kind: str) -> Callable[[Obj, float], str]:
    def cell(obj: Obj, now: float) -> str:
        for a in _get(obj, "status.addresses") or []:
            if isinstance(a, Mapping) and a.get("type") == kind:
                return str(a.get("address"))
        return NONE
    return cell


NODE = [
    NAME,
    Column("Status", "string", _node_status, description="The status of the node"),
    Column("Roles", "string", _node_roles, description="The roles of the node"),
    AGE,
    path("Version", "status.nodeInfo.kubeletVersion", default=""),
    Column("Internal-IP", "string", _address("InternalIP"), 1),
    Column("External-IP", "string", _address("ExternalIP"), 1),
    path("OS-Image", "status.nodeInfo.osImage", priority=1, default="<unknown>"),
    path("Kernel-Version", "status.nodeInfo.kernelVersion", priority=1, default="<unknown>"),
    path("Container-Runtime", "status.nodeInfo.containerRuntimeVersion", priority=1,
         default="<unknown>"),
]


# -- events and the rest -----------------------------------------------------------------------


def _last_seen(obj: Obj, now: float) -> str:
    for field in ("lastTimestamp", "eventTime", "metadata.creationTimestamp"):
        value = _get(obj, field)
        if value:
            return _age_of(value, now)
    return "<unknown>"


def _involved(obj: Obj, now: float) -> str:
    kind = str(_get(obj, "involvedObject.kind") or "").lower()
    return f"{kind}/{_get(obj, 'involvedObject.name') or ''}"


EVENT = [
    Column("Last Seen", "string", _last_seen),
    path("Type", "type", default=""),
    path("Reason", "reason", default=""),
    Column("Object", "string", _involved),
    path("Source", "source.component", priority=1, default=""),
    path("Message", "message", default=""),
    path("Count", "count", priority=1, default=""),
    Column("Name", "string", _name, 1, "name"),
]

TABLES: dict[tuple[str, str], list[Column]] = {
    ("", "Pod"): POD,
    ("", "Node"): NODE,
    ("", "Event"): EVENT,
    ("", "Namespace"): [NAME, path("Status", "status.phase", default=""), AGE],
    ("coordination.k8s.io", "Lease"): [NAME, path("Holder", "spec.holderIdentity",
                                                  default=""), AGE],
    ("scheduling.volcano.sh", "PodGroup"): [
        NAME, path("Status", "status.phase", default=""),
        path("minMember", "spec.minMember", "integer", default=""),
        path("Runnings", "status.running", "integer", default=""), AGE,
        path("Queue", "spec.queue", priority=1, default="")],
    ("topology.volcano.sh", "HyperNode"): [
        NAME, path("Tier", "spec.tier", default=""),
        path("NodeCount", "status.nodeCount", default=""), AGE],
}
"""Columns per (group, kind); the rest get Name and Age."""


def columns_for(r: Resource) -> list[Column]:
    return TABLES.get((r.group, r.kind), [NAME, AGE])


def _definitions(columns: list[Column]) -> list[dict[str, Any]]:
    return [{"name": c.name, "type": c.type, "format": c.format,
             "description": c.description, "priority": c.priority} for c in columns]


def _row_object(obj: Obj, include: str) -> Any:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {})}


def table(r: Resource, objects: list[Obj], resource_version: str, now: float,
          include: str = "Metadata", continue_token: str = "") -> dict[str, Any]:
    """A Table of ``objects``; ``include``: None, Metadata or Object (``includeObject``)."""
    columns = columns_for(r)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [c.cell(obj, now) for c in columns]}
        body = _row_object(obj, include)
        if body is not None:
            row["object"] = body
        rows.append(row)
    meta: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        meta["continue"] = continue_token
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": _definitions(columns), "rows": rows}


def partial_metadata(obj: Obj) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {})}
