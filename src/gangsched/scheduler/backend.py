"""The cluster as the scheduler sees it: a small protocol (DESIGN.md section 5, httpx's
pluggable transport). The in-memory implementation is :mod:`.memory`; the simulator and
the Kubernetes mode plug in the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from gangsched.api.errors import GangschedError
from gangsched.api.types import Node, Pod
from gangsched.model import Workload

EventKind = Literal[
    "NodeAdded",
    "NodeChanged",
    "NodeRemoved",
    "PodAdded",
    "PodBound",
    "PodDeleted",
    "WorkloadAdded",
    "WorkloadRemoved",
]

NODE_EVENTS = frozenset({"NodeAdded", "NodeChanged", "NodeRemoved"})
WORKLOAD_EVENTS = frozenset({"WorkloadAdded", "WorkloadRemoved"})


class BindError(GangschedError):
    """A bind the cluster refused (pod gone, node gone or not ready, API error)."""


@dataclass(frozen=True)
class ClusterEvent:
    """Something changed in the cluster. ``name`` is a node name, a pod key
    (``namespace/name``) or a workload name. ``WorkloadAdded`` is also sent when a
    workload is re-submitted with a changed tree (scaling)."""

    kind: str
    name: str
    time: float


class ClusterBackend(Protocol):
    def nodes(self) -> list[Node]: ...

    def pods(self) -> list[Pod]:
        """Every pod, bound or not."""
        ...

    def workloads(self) -> list[Workload]:
        """The gang trees known to the cluster."""
        ...

    def bind(self, pod_key: str, node_name: str) -> None:
        """Bind a pending pod to a node; raises :class:`BindError`."""
        ...

    def evict(self, pod_key: str, reason: str) -> None:
        """Delete a pod (its controller recreates it unbound when it still wants it)."""
        ...

    def subscribe(self, callback: Callable[[ClusterEvent], None]) -> None: ...
