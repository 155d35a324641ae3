"""Helpers for the tests on the real kube-apiserver: clients for its two kubeconfig
contexts, objects (Node objects without a kubelet, as upstream's scheduler_perf makes
them), a reset between tests, gang accounting and a serve replica on a thread."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gangsched.k8s.api import NODES, PODS, Kind, KubeError
from gangsched.k8s.serve import ServeConfig, Server
from gangsched.scheduler.scheduler import SchedulerConfig

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "realkube.sh"
RACK = "gangsched.io/rack"
BLOCK = "gangsched.io/block"
HOST = "kubernetes.io/hostname"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
Obj = dict[str, Any]

VOLCANO_PODGROUPS = Kind("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
# What the real 1.37 server serves: Workload and PodGroup in v1beta1 and v1alpha3,
# CompositePodGroup in v1alpha3 only.
WORKLOADS = Kind("scheduling.k8s.io", "v1alpha3", "workloads", "Workload")
WL_PODGROUPS = Kind("scheduling.k8s.io", "v1alpha3", "podgroups", "PodGroup")
COMPOSITES = Kind("scheduling.k8s.io", "v1alpha3", "compositepodgroups", "CompositePodGroup")
NAMESPACES = Kind("", "v1", "namespaces", "Namespace", namespaced=False)
GANG_KINDS = (VOLCANO_PODGROUPS, WL_PODGROUPS, COMPOSITES, WORKLOADS)


def kind_of(obj: Obj) -> Kind:
    api_version, kind = obj["apiVersion"], obj["kind"]
    table = {("v1", "Node"): NODES, ("v1", "Pod"): PODS, ("v1", "Namespace"): NAMESPACES}
    if (api_version, kind) in table:
        return table[(api_version, kind)]
    group, _, version = api_version.partition("/")
    plural = {"Workload": "workloads", "PodGroup": "podgroups",
              "CompositePodGroup": "compositepodgroups"}[kind]
    return Kind(group, version, plural, kind)


@dataclass
class RealKube:
    """The running control plane: its kubeconfig (contexts ``admin`` and ``gangsched``)."""

    kubeconfig: Path
    state: Path
    bin_dir: Path
    env: dict[str, str]
    _apis: dict[str, Any] = field(default_factory=dict)
    _core: Any = None

    def api(self, context: str = "admin") -> Any:
        """gangsched's own client (:class:`gangsched.k8s.client.Kube`) for a context."""
        if context not in self._apis:
            from gangsched.k8s.client import connect

            self._apis[context] = connect(str(self.kubeconfig), context=context)
        return self._apis[context]

    @property
    def core(self) -> Any:
        """The official client's CoreV1Api, as the admin."""
        if self._core is None:
            from kubernetes import client

            self._core = client.CoreV1Api(self.api("admin").api_client)
        return self._core

    @property
    def custom(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.api("admin").api_client)

    # -- objects --------------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        kind = kind_of(obj)
        ns = obj["metadata"].get("namespace", "default") if kind.namespaced else None
        if kind == NODES:
            status = obj.pop("status", None)
            created: Obj = self.api().create(kind, None, obj)
            if status:
                created = self.api().merge_patch(NODES, None, obj["metadata"]["name"],
                                                 {"status": status}, subresource="status")
            return created
        result: Obj = self.api().create(kind, ns, obj)
        return result

    def create_all(self, objects: Iterable[Obj]) -> None:
        for obj in objects:
            self.create(obj)

    def ensure_namespace(self, name: str) -> None:
        try:
            self.api().create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": name}})
        except KubeError as err:
            if err.status != 409:
                raise

    def pods(self, namespace: str | None = None) -> list[Obj]:
        items: list[Obj] = self.api().list(PODS).get("items") or []
        return [p for p in items if namespace is None
                or p["metadata"].get("namespace") == namespace]

    def namespaces(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.api().list(NAMESPACES)["items"]]

    def finish_deletions(self) -> int:
        """What a kubelet does for a pod being deleted: confirm it (grace period 0).
        Without a kubelet a bound pod deleted with a grace period stays Terminating."""
        done = 0
        for p in self.pods():
            meta = p["metadata"]
            if meta.get("deletionTimestamp"):
                try:
                    self.core.delete_namespaced_pod(meta["name"], meta["namespace"],
                                                    grace_period_seconds=0)
                    done += 1
                except Exception:  # gone meanwhile
                    pass
        return done

    def reset(self) -> None:
        """Delete every pod (at once), gang object and node, for the next test."""
        for ns in self.namespaces():
            self.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
            for kind in GANG_KINDS:
                try:
                    self.custom.delete_collection_namespaced_custom_object(
                        kind.group, kind.version, ns, kind.plural)
                except Exception as err:  # a kind not served: nothing to do
                    if getattr(err, "status", None) != 404:
                        raise
            self.release_podgroups(ns)
        self.core.delete_collection_node()
        wait_for(lambda: not self.pods() and not self.api().list(NODES)["items"], 30,
                 what="an empty cluster")

    def release_podgroups(self, namespace: str) -> None:
        """Drop the ``scheduling.k8s.io/podgroup-protection`` finalizer from deleted
        Workload API PodGroups: kube-controller-manager's podgroupprotection controller
        does it once no pod refers to the group, and none runs here."""
        items = self.custom.list_namespaced_custom_object(
            WL_PODGROUPS.group, WL_PODGROUPS.version, namespace, WL_PODGROUPS.plural)
        for pg in items.get("items") or []:
            meta = pg["metadata"]
            if meta.get("deletionTimestamp") and meta.get("finalizers"):
                self.api().merge_patch(WL_PODGROUPS, namespace, meta["name"],
                                       {"metadata": {"finalizers": None}})


# -- builders -------------------------------------------------------------------------------


def node(name: str, cpu: str = "4", memory: str = "32Gi", pods: str = "110",
         labels: dict[str, str] | None = None) -> Obj:
    """A Node as a kubelet would register it (created, then its status written)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {HOST: name, **(labels or {})}},
            "spec": {},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": [{"type": "Ready", "status": "True",
                                       "reason": "KubeletReady", "message": "no kubelet here",
                                       "lastHeartbeatTime": now,
                                       "lastTransitionTime": now}],
                       "phase": "Running"}}


def rack_nodes(racks: int, per_rack: int, cpu: str = "4", blocks: int = 1) -> list[Obj]:
    return [node(f"n-{r}-{h}", cpu,
                 labels={RACK: f"rack-{r}", BLOCK: f"block-{r % blocks}"})
            for r in range(racks) for h in range(per_rack)]


def pod(name: str, cpu: str = "500m", *, namespace: str = "default", group: str | None = None,
        pod_group: str | None = None, scheduler: str = "gangsched",
        labels: dict[str, str] | None = None) -> Obj:
    """A pod: of Volcano PodGroup ``group`` (annotation), or of Workload API PodGroup
    ``pod_group`` (``spec.schedulingGroup.podGroupName``), or alone."""
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    if group is not None:
        meta["annotations"] = {GROUP_ANNOTATION: group}
    spec: Obj = {"schedulerName": scheduler,
                 "containers": [{"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": cpu}}}]}
    if pod_group is not None:
        spec["schedulingGroup"] = {"podGroupName": pod_group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def volcano_gang(name: str, size: int, cpu: str = "500m", *, namespace: str = "default",
                 rack_local: bool = True) -> list[Obj]:
    spec: Obj = {"minMember": size, "queue": "default"}
    if rack_local:
        spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    return [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": namespace}, "spec": spec},
            *(pod(f"{name}-{i}", cpu, namespace=namespace, group=name) for i in range(size))]


def load_yaml(path: Path) -> list[Obj]:
    out: list[Obj] = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        if doc.get("kind", "").endswith("List"):
            for item in doc["items"]:
                item = copy.deepcopy(item)  # YAML anchors share their nodes
                item.setdefault("apiVersion", doc.get("apiVersion", "v1"))
                item.setdefault("kind", doc["kind"][:-len("List")])
                out.append(item)
        else:
            out.append(doc)
    return out


# -- accounting -----------------------------------------------------------------------------


def gang_key(p: Obj) -> str | None:
    meta = p["metadata"]
    group = (meta.get("annotations") or {}).get(GROUP_ANNOTATION)
    if group:
        return f"{meta.get('namespace')}/{group}"
    sg = (p.get("spec") or {}).get("schedulingGroup") or {}
    if sg.get("podGroupName"):
        return f"{meta.get('namespace')}/{sg['podGroupName']}"
    return None


def gang_states(pods: Iterable[Obj]) -> dict[str, tuple[int, int]]:
    """(bound pods, live pods) per gang (Volcano annotation or schedulingGroup)."""
    out: dict[str, tuple[int, int]] = {}
    for p in pods:
        key = gang_key(p)
        if key is None or p["metadata"].get("deletionTimestamp"):
            continue
        bound, total = out.get(key, (0, 0))
        out[key] = (bound + bool(p["spec"].get("nodeName")), total + 1)
    return out


def wait_for(cond: Callable[[], bool], timeout: float, interval: float = 0.1,
             what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


# -- serve ----------------------------------------------------------------------------------


@dataclass
class Replica:
    server: Server
    thread: threading.Thread
    exit_code: list[int]

    def stop(self, timeout: float = 15.0) -> None:
        self.server.stop()
        self.thread.join(timeout)


def serve_config(kubeconfig: Path, **changes: Any) -> ServeConfig:
    """Serve settings scaled down for tests, on the least-privilege ``gangsched`` context
    and its leader-election Lease in kube-system (deploy/rbac.yaml)."""
    sched = changes.pop("scheduler", SchedulerConfig(backoff_initial=0.2, backoff_max=1.0,
                                                     stale_timeout=5.0, extras_interval=1.0))
    base: dict[str, Any] = {
        "kubeconfig": str(kubeconfig), "context": "gangsched", "metrics_port": 0,
        "metrics_host": "127.0.0.1", "lease_namespace": "kube-system",
        "lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.3,
        "topology": [BLOCK, RACK, HOST], "max_wait": 0.2, "watch_timeout": (20, 30),
        "events_qps": 500.0, "events_burst": 500, "scheduler": sched}
    base.update(changes)
    return ServeConfig(**base)


def start_replica(config: ServeConfig, api: Any | None = None) -> Replica:
    if api is None:
        from gangsched.k8s.client import connect

        api = connect(config.kubeconfig, context=config.context)
    server = Server(config, api)
    code: list[int] = []
    thread = threading.Thread(target=lambda: code.append(server.run()), daemon=True,
                              name=f"replica-{server.identity[:12]}")
    thread.start()
    return Replica(server, thread, code)
