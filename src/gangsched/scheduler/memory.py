"""An in-memory cluster: nodes, pods and workloads in dicts, events sent synchronously.

It plays the API server and the workload controllers: a submitted workload's pods become
pending pods; an evicted or lost pod is deleted and, while its workload still names it,
re-created unbound (as a Job or LeaderWorkerSet controller would).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from gangsched.api.types import Node, Pod
from gangsched.gang import Group, PodSet, podsets
from gangsched.model import Workload
from gangsched.scheduler.backend import BindError, ClusterEvent
from gangsched.scheduler.clock import Clock


def make_workload(
    tree: Group | PodSet, *, name: str | None = None, kind: str = "Workload", priority: int = 0
) -> Workload:
    """A ready workload for ``tree`` with one pending Pod per pod key of the tree
    (requests and node requirements from its PodSet); ``name`` defaults to the root path."""
    pods: dict[str, Pod] = {}
    for ps in podsets(tree):
        for key in ps.pods:
            pods[key] = _pod_for(key, ps, priority)
    return Workload(name or tree.path, kind, tree, pods, priority=priority)


def _pod_for(key: str, ps: PodSet, priority: int) -> Pod:
    ns, _, name = key.rpartition("/")
    return Pod(name=name, namespace=ns or "default", requests=dict(ps.requests),
               requirements=ps.requirements, priority=priority, scheduler_name="gangsched")


class InMemoryBackend:
    """A :class:`~gangsched.scheduler.backend.ClusterBackend` kept in memory."""

    def __init__(self, nodes: Sequence[Node], clock: Clock) -> None:
        self.clock = clock
        self._nodes: dict[str, Node] = {}
        for n in nodes:
            if n.name in self._nodes:
                raise ValueError(f"duplicate node {n.name}")
            self._nodes[n.name] = n
        self._pods: dict[str, Pod] = {}
        self._on_node: dict[str, set[str]] = {n: set() for n in self._nodes}
        self._workloads: dict[str, Workload] = {}
        self._owner: dict[str, str] = {}  # pod key -> workload name
        self._owned: dict[str, dict[str, None]] = {}  # workload -> its pod keys, in order
        self._subscribers: list[Callable[[ClusterEvent], None]] = []
        self.fail_binds: Callable[[str, str], bool] | None = None
        self.bind_count = 0
        self.evictions: list[tuple[float, str, str]] = []  # (time, pod key, reason)

    # -- the protocol ---------------------------------------------------------------------

    def nodes(self) -> list[Node]:
        return list(self._nodes.values())

    def pods(self) -> list[Pod]:
        return list(self._pods.values())

    def workloads(self) -> list[Workload]:
        return list(self._workloads.values())

    def subscribe(self, callback: Callable[[ClusterEvent], None]) -> None:
        self._subscribers.append(callback)

    def bind(self, pod_key: str, node_name: str) -> None:
        pod = self._pods.get(pod_key)
        if pod is None:
            raise BindError(f"pod {pod_key} not found")
        if pod.node_name is not None:
            raise BindError(f"pod {pod_key} is already bound to {pod.node_name}")
        node = self._nodes.get(node_name)
        if node is None:
            raise BindError(f"node {node_name} not found")
        if not node.schedulable:
            raise BindError(f"node {node_name} is not schedulable")
        if self.fail_binds is not None and self.fail_binds(pod_key, node_name):
            raise BindError(f"bind of {pod_key} to {node_name} failed (injected)")
        self._pods[pod_key] = pod.on_node(node_name)
        self._on_node[node_name].add(pod_key)
        self.bind_count += 1
        self._emit("PodBound", pod_key)

    def evict(self, pod_key: str, reason: str) -> None:
        if pod_key not in self._pods:
            return  # already gone: eviction is idempotent
        self.evictions.append((self.clock.now(), pod_key, reason))
        self._delete(pod_key, recreate=True)

    # -- driving the cluster --------------------------------------------------------------

    def submit(self, workload: Workload) -> None:
        """Add a workload (its pods become pending pods) or replace one of the same name
        (scaling: pods it still names are kept, bound or not; new ones are added pending;
        pending pods it no longer names are deleted; bound ones stay until evicted)."""
        wanted = dict(workload.pods)
        if workload.tree is not None:
            for ps in podsets(workload.tree):
                for key in ps.pods:
                    if key not in wanted:
                        wanted[key] = _pod_for(key, ps, workload.priority)
        workload = replace(workload, pods=wanted)
        old = self._workloads.get(workload.name)
        self._workloads[workload.name] = workload
        owned = self._owned.setdefault(workload.name, {})
        if old is not None:
            for key in [k for k in owned if k not in wanted]:
                if self._pods[key].node_name is None:
                    self._delete(key, recreate=False)
        added = []
        for key, pod in wanted.items():
            if key in self._pods:
                if self._owner.get(key, workload.name) != workload.name:
                    raise ValueError(f"pod {key} already belongs to {self._owner[key]}")
                continue
            self._pods[key] = pod.on_node(None)
            self._owner[key] = workload.name
            owned[key] = None
            added.append(key)
        self._emit("WorkloadAdded", workload.name)
        for key in added:
            self._emit("PodAdded", key)

    def remove_workload(self, name: str) -> None:
        """The workload finished or was deleted: delete all its pods."""
        if self._workloads.pop(name, None) is None:
            raise KeyError(f"no workload {name}")
        for key in list(self._owned.get(name, ())):
            self._delete(key, recreate=False)
        self._owned.pop(name, None)
        self._emit("WorkloadRemoved", name)

    def add_node(self, node: Node) -> None:
        if node.name in self._nodes:
            raise ValueError(f"node {node.name} already exists")
        self._nodes[node.name] = node
        self._on_node[node.name] = set()
        self._emit("NodeAdded", node.name)

    def remove_node(self, name: str) -> None:
        """The node disappears; its pods are lost (deleted, re-created unbound)."""
        if name not in self._nodes:
            raise KeyError(f"no node {name}")
        self._lose_pods(name)
        del self._nodes[name]
        del self._on_node[name]
        self._emit("NodeRemoved", name)

    def set_node_ready(self, name: str, ready: bool) -> None:
        """A node that becomes NotReady loses its pods (as after the eviction timeout)."""
        node = self._nodes[name]
        if node.ready == ready:
            return
        self._nodes[name] = replace(node, ready=ready)
        if not ready:
            self._lose_pods(name)
        self._emit("NodeChanged", name)

    def set_node_unschedulable(self, name: str, unschedulable: bool) -> None:
        """Cordon or uncordon a node (its pods keep running)."""
        self._nodes[name] = replace(self._nodes[name], unschedulable=unschedulable)
        self._emit("NodeChanged", name)

    # -- inspection (tests, simulator) ----------------------------------------------------

    def pod(self, key: str) -> Pod | None:
        return self._pods.get(key)

    def bound(self, workload: str | None = None) -> dict[str, str]:
        """Bound pods (key -> node), optionally of one workload."""
        keys = self._pods if workload is None else self._owned.get(workload, {})
        return {k: n for k in keys if (n := self._pods[k].node_name) is not None}

    def pods_on(self, node: str) -> set[str]:
        return set(self._on_node.get(node, ()))

    # -- internals ------------------------------------------------------------------------

    def _lose_pods(self, node: str) -> None:
        for key in sorted(self._on_node.get(node, ())):
            self._delete(key, recreate=True)

    def _delete(self, key: str, *, recreate: bool) -> None:
        pod = self._pods.pop(key)
        if pod.node_name is not None:
            self._on_node.get(pod.node_name, set()).discard(key)
        owner = self._owner.get(key)
        self._emit("PodDeleted", key)
        wl = self._workloads.get(owner) if owner is not None else None
        if recreate and wl is not None and key in wl.pods:
            self._pods[key] = pod.on_node(None)
            self._emit("PodAdded", key)
        else:
            self._owner.pop(key, None)
            if owner is not None:
                self._owned.get(owner, {}).pop(key, None)

    def _emit(self, kind: str, name: str) -> None:
        ev = ClusterEvent(kind, name, self.clock.now())
        for cb in self._subscribers:
            cb(ev)
