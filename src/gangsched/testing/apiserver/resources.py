"""The resources the test API server serves, as one table, and the discovery documents
built from it.

Adding a kind is one line in :data:`RESOURCES`. A kind offered in two versions of its
group (``scheduling.k8s.io`` Workloads and PodGroups in ``v1beta1`` and ``v1alpha3``, as
Kubernetes 1.37 serves them; CompositePodGroup only in ``v1alpha3``) has one storage, in
the first version listed: an object written in one version is read in the other
(:meth:`~gangsched.testing.apiserver.store.Store.view` converts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gangsched.testing.apiserver.errors import ApiError

OBJECT_FIELDS = ("metadata.name", "metadata.namespace")
"""Field selectors every resource accepts."""

POD_FIELDS = ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
              "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
              "status.nominatedNodeName")
NODE_FIELDS = ("spec.unschedulable",)
NAMESPACE_FIELDS = ("status.phase",)
EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                "involvedObject.uid", "involvedObject.apiVersion",
                "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                "reportingComponent", "source", "type")

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True)
class Resource:
    """One served resource (``group``/``version``/``plural``) and how it behaves.

    ``builtin`` resources behave like the API server's own kinds (status kept on create
    except for pods, updates without a resourceVersion allowed, strategic merge patch);
    the others behave like custom resources (status dropped on create when there is a
    status subresource, updates need a resourceVersion, strategic merge patch refused).
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # "status", "binding"
    fields: tuple[str, ...] = ()  # field selectors beyond metadata.name/namespace
    builtin: bool = False
    create_on_update: bool = False  # PUT to a missing name creates it
    delete_returns_object: bool = True  # else a Status with details
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """``pods`` or ``podgroups.scheduling.volcano.sh``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def field_selectors(self) -> tuple[str, ...]:
        return OBJECT_FIELDS + self.fields if self.namespaced else ("metadata.name",
                                                                     *self.fields)

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def __str__(self) -> str:
        return f"{self.qualified} ({self.api_version} {self.kind})"


R = Resource
CORE = ("", "v1")
RESOURCES: list[Resource] = [
    R(*CORE, "namespaces", "Namespace", False, ("ns",), ("status",), ("status.phase",),
      builtin=True),
    R(*CORE, "nodes", "Node", False, ("no",), ("status",), NODE_FIELDS, builtin=True,
      delete_returns_object=False),
    R(*CORE, "pods", "Pod", True, ("po",), ("status", "binding"), POD_FIELDS, builtin=True,
      categories=("all",)),
    R(*CORE, "events", "Event", True, ("ev",), (), EVENT_FIELDS, builtin=True,
      create_on_update=True, delete_returns_object=False),
    R("coordination.k8s.io", "v1", "leases", "Lease", True, (), (), builtin=True,
      create_on_update=True, delete_returns_object=False),
    R("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",),
      builtin=True, delete_returns_object=False),
    R("scheduling.k8s.io", "v1beta1", "workloads", "Workload", True, (), ("status",)),
    R("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", True, (), ("status",)),
    R("scheduling.k8s.io", "v1alpha3", "workloads", "Workload", True, (), ("status",)),
    R("scheduling.k8s.io", "v1alpha3", "podgroups", "PodGroup", True, (), ("status",)),
    R("scheduling.k8s.io", "v1alpha3", "compositepodgroups", "CompositePodGroup", True, (),
      ("status",)),
    R("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True,
      ("pg", "podgroup-v1beta1"), ("status",)),
    R("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, ("q", "queue-v1beta1"),
      ("status",)),
    R("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, ("hn",),
      ("status",)),
    R("workload.serving.volcano.sh", "v1alpha1", "modelservings", "ModelServing", True,
      ("ms",), ("status",)),
    R("kueue.x-k8s.io", "v1beta1", "topologies", "Topology", False),
    R("kueue.x-k8s.io", "v1beta1", "resourceflavors", "ResourceFlavor", False),
    R("kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", False, (), ("status",)),
    R("kueue.x-k8s.io", "v1beta1", "localqueues", "LocalQueue", True, (), ("status",)),
    R("kueue.x-k8s.io", "v1beta1", "workloadpriorityclasses", "WorkloadPriorityClass", False,
      ("wpc",)),
]
"""Everything the server serves. Groups are listed in discovery in this order."""

SERVER_VERSION = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-gangsched-testing",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.24.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclass
class ResourceTable:
    """Lookups over a list of resources (by URL, by apiVersion/kind, by a user's name)."""

    resources: list[Resource] = field(default_factory=lambda: list(RESOURCES))

    def __post_init__(self) -> None:
        self._by_path: dict[tuple[str, str, str], Resource] = {}
        self._by_kind: dict[tuple[str, str], Resource] = {}
        for r in self.resources:
            key = (r.group, r.version, r.plural)
            if key in self._by_path:
                raise ValueError(f"resource {r} listed twice")
            self._by_path[key] = r
            self._by_kind[(r.api_version, r.kind)] = r

    def __iter__(self) -> Any:
        return iter(self.resources)

    def at(self, group: str, version: str, plural: str) -> Resource | None:
        return self._by_path.get((group, version, plural))

    def for_object(self, api_version: str, kind: str) -> Resource | None:
        return self._by_kind.get((api_version, kind))

    def group_versions(self) -> dict[str, list[str]]:
        """Each group's versions, in table order (the first is the preferred one)."""
        out: dict[str, list[str]] = {}
        for r in self.resources:
            versions = out.setdefault(r.group, [])
            if r.version not in versions:
                versions.append(r.version)
        return out

    def resolve(self, ref: str | Resource) -> Resource:
        """A resource named the way a user would: ``pods``, ``Pod``, ``po``,
        ``podgroups.scheduling.volcano.sh``, ``PodGroup.scheduling.k8s.io``,
        ``podgroups.v1alpha3.scheduling.k8s.io`` or ``scheduling.k8s.io/v1alpha3/podgroups``.

        Raises ``KeyError`` for an unknown or ambiguous name (listing the candidates).
        """
        if isinstance(ref, Resource):
            return ref
        if ref.count("/") == 2 or (ref.count("/") == 1 and ref.startswith("v1/")):
            *gv, plural = ref.split("/")
            group, version = (gv[0], gv[1]) if len(gv) == 2 else ("", gv[0])
            found = self.at(group, version, plural)
            if found is None:
                raise KeyError(f"no resource {ref!r}")
            return found
        name, _, rest = ref.partition(".")
        matches = [r for r in self.resources if _names(r, name) and _qualifies(r, rest)]
        if not matches:
            raise KeyError(f"no resource {ref!r}")
        if len(matches) > 1:
            # Prefer core, then the first version of a group (its preferred one).
            groups = {m.group for m in matches}
            if len(groups) == 1:
                return matches[0]
            shown = ", ".join(f"{m.plural}.{m.version}.{m.group}" for m in matches)
            raise KeyError(f"{ref!r} is ambiguous: {shown}")
        return matches[0]


def _names(r: Resource, name: str) -> bool:
    lowered = name.lower()
    return lowered in (r.plural, r.singular, *r.short_names) or name == r.kind


def _qualifies(r: Resource, rest: str) -> bool:
    """``rest`` is empty, the group, or version.group."""
    return rest in ("", r.group, f"{r.version}.{r.group}") or (
        not r.group and rest == r.version)


def object_resource(table: ResourceTable, obj: Mapping[str, Any]) -> Resource:
    """The resource of an object by its apiVersion and kind (400 when not served)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise ApiError(400, "BadRequest", "Object 'Kind' or 'apiVersion' is missing")
    found = table.for_object(api_version, kind)
    if found is None:
        raise ApiError(400, "BadRequest", f"no kind {kind!r} is registered for version "
                       f"{api_version!r} in the test API server")
    return found


# -- discovery -----------------------------------------------------------------------------


def api_versions(host: str) -> dict[str, Any]:
    """``GET /api``."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]}


def _group_document(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(table: ResourceTable) -> dict[str, Any]:
    """``GET /apis``."""
    groups = [_group_document(g, vs) for g, vs in table.group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(table: ResourceTable, group: str) -> dict[str, Any] | None:
    """``GET /apis/<group>``."""
    versions = table.group_versions().get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_document(group, versions)}


def _verbs(r: Resource) -> list[str]:
    return ["create", "delete", "deletecollection", "get", "list", "patch", "update",
            "watch"]


def api_resource_list(table: ResourceTable, group: str, version: str) -> dict[str, Any] | None:
    """``GET /api/v1`` or ``GET /apis/<group>/<version>``."""
    chosen = [r for r in table if r.group == group and r.version == version]
    if not chosen:
        return None
    entries: list[dict[str, Any]] = []
    for r in chosen:
        entry: dict[str, Any] = {"name": r.plural, "singularName": r.singular,
                                 "namespaced": r.namespaced, "kind": r.kind,
                                 "verbs": _verbs(r)}
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        entries.append(entry)
        for sub in r.subresources:
            if sub == "binding":
                entries.append({"name": f"{r.plural}/binding", "singularName": "",
                                "namespaced": r.namespaced, "kind": "Binding",
                                "verbs": ["create"]})
            else:
                entries.append({"name": f"{r.plural}/{sub}", "singularName": "",
                                "namespaced": r.namespaced, "kind": r.kind,
                                "verbs": ["get", "patch", "update"]})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": entries}


def all_resources(items: Iterable[Resource]) -> list[str]:
    """``plural.group`` of each resource, for messages."""
    return [r.qualified for r in items]
