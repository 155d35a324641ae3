"""What serve mode needs from the Kubernetes API, without importing ``kubernetes``.

:class:`Kind` names a resource; :class:`KubeAPI` is the handful of calls gangsched makes
(list, watch, bind, delete, events, status patches, leases), always on plain JSON dicts.
:mod:`.client` implements it on the official client; tests may implement it in memory.
Every failure is a :class:`KubeError` with the HTTP status (``None``: no response).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gangsched.api.errors import GangschedError

Obj = dict[str, Any]
Resources = list[Obj]  # discovery entries (``list`` is a method name in KubeAPI)

RETRIABLE = frozenset({429, 500, 502, 503, 504})


class KubeError(GangschedError):
    """An API call that failed: ``status`` is the HTTP code, ``None`` when no response
    came (connection refused or reset, timeout)."""

    def __init__(self, status: int | None, message: str, *, reason: str = "",
                 retry_after: float | None = None) -> None:
        self.status = status
        self.message = message
        self.reason = reason
        self.retry_after = retry_after
        super().__init__(f"{status or 'no response'}: {message}")

    @property
    def retriable(self) -> bool:
        """Worth trying again: no response, throttled, or a server-side error."""
        return self.status is None or self.status in RETRIABLE

    @property
    def ambiguous(self) -> bool:
        """The request may have been applied although it failed (a timeout, a lost
        connection, a server error after the write)."""
        return self.status is None or self.status >= 500


@dataclass(frozen=True)
class Kind:
    """One API resource: ``group``/``version``/``plural``, its ``kind`` and scope."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def id(self) -> str:
        """``pods`` or ``podgroups.scheduling.volcano.sh/v1beta1``."""
        return f"{self.plural}.{self.group}/{self.version}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else "/api/v1"
        if namespace is not None and self.namespaced:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    def __str__(self) -> str:
        return self.id


NODES = Kind("", "v1", "nodes", "Node", namespaced=False)
PODS = Kind("", "v1", "pods", "Pod")
EVENTS = Kind("", "v1", "events", "Event")
LEASES = Kind("coordination.k8s.io", "v1", "leases", "Lease")
VOLCANO_PODGROUPS = Kind("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
HYPERNODES = Kind("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode",
                  namespaced=False)
WORKLOAD_GROUP = "scheduling.k8s.io"
WORKLOAD_API_VERSIONS = ("v1beta1", "v1alpha3")  # preference order
WORKLOAD_API_PLURALS = {"workloads": "Workload", "podgroups": "PodGroup",
                        "compositepodgroups": "CompositePodGroup"}


KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_TOPOLOGY_VERSIONS = ("v1beta2", "v1beta1", "v1alpha1")  # preference order


def kueue_topology(version: str) -> Kind:
    return Kind(KUEUE_GROUP, version, "topologies", "Topology", namespaced=False)


def version_priority(version: str) -> tuple[int, int, int]:
    """Sort key putting the version Kubernetes prefers first: GA before beta before
    alpha, higher numbers first (``v1`` < ``v1beta2`` < ``v1beta1`` < ``v1alpha3``)."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if m is None:
        return (3, 0, 0)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0))


def workload_api_kinds(version: str, served: set[str] | None = None) -> list[Kind]:
    """The Workload API kinds in ``version`` (only those ``served``, when known)."""
    return [Kind(WORKLOAD_GROUP, version, plural, kind)
            for plural, kind in WORKLOAD_API_PLURALS.items()
            if served is None or plural in served]


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` (``name`` for cluster-scoped objects)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    name = meta.get("name") or ""
    return f"{ns}/{name}" if ns else str(name)


def resource_version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class KubeAPI(Protocol):
    """The calls gangsched makes. Every method raises :class:`KubeError`."""

    def list(self, kind: Kind, *, limit: int | None = None, continue_: str | None = None,
             field_selector: str | None = None) -> Obj:
        """One page of a cluster-wide list: ``{"metadata": {...}, "items": [...]}``."""
        ...

    def watch(self, kind: Kind, *, resource_version: str, timeout_seconds: int,
              field_selector: str | None = None) -> WatchStream:
        """A watch from ``resource_version`` with bookmarks."""
        ...

    def resources(self, group: str, version: str) -> Resources | None:
        """Discovery: the top-level resources served in ``group/version`` (the
        ``APIResourceList`` entries: ``name``, ``kind``, ``namespaced``, ...); None when
        the group version is not served."""
        ...

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj: ...

    def create(self, kind: Kind, namespace: str | None, body: Obj) -> Obj: ...

    def replace(self, kind: Kind, namespace: str | None, name: str, body: Obj) -> Obj: ...

    def merge_patch(self, kind: Kind, namespace: str | None, name: str, body: Obj,
                    subresource: str | None = None) -> Obj: ...

    def bind(self, namespace: str, name: str, node: str, uid: str | None) -> None:
        """``POST pods/<name>/binding`` (the reply, a ``Status``, is checked and dropped)."""
        ...

    def delete(self, kind: Kind, namespace: str | None, name: str,
               uid: str | None = None) -> None:
        """Delete, on the precondition that the object still has ``uid``."""
        ...


class WatchStream(Protocol):
    """Watch events (``{"type": ..., "object": ...}``) as they arrive; :meth:`close`
    from another thread ends the iteration."""

    def __iter__(self) -> Iterator[Obj]: ...

    def close(self) -> None: ...
