"""The cluster as the scheduler sees it in serve mode: a
:class:`~gangsched.scheduler.backend.ClusterBackend` over the watch caches.

:class:`ClusterView` holds the watched objects, each parsed once per resourceVersion by
the loader's own handlers (the kind registry that ``gangsched place`` uses), and
assembles them with the front-ends into gang trees: Volcano PodGroups (what Kthena
creates for a ModelServing), HyperNodes, the Workload API's objects, and single pods.
Only pods whose ``spec.schedulerName`` is ours are in trees; every bound pod, whoever
placed it, consumes capacity. Pods that finished (``Succeeded``/``Failed``) or are being
deleted count as gone.

Trees are built from the pods' specs *without* their ``nodeName``: the tree of a gang
is the same before and after its pods are bound, as with the in-memory backend, and
the scheduler learns what is bound from :meth:`KubeBackend.pods` and ``PodBound``
events. A workload whose assembled value is unchanged keeps its identity, so the
scheduler does not re-submit it.

:class:`KubeBackend` applies the deltas (main thread only, between cycles) and turns
them into :class:`~gangsched.scheduler.backend.ClusterEvent` values, like
:class:`~gangsched.scheduler.memory.InMemoryBackend`. ``bind`` goes through the
``pods/binding`` subresource and is reflected at once (the watch confirms it later);
``evict`` deletes the pod (its controller recreates it) and the pod counts as gone at
once. Only the leader binds or deletes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from gangsched.api.errors import InputError
from gangsched.api.loader import Inputs, takes_chain
from gangsched.api.objects import pod_gone
from gangsched.api.types import Node, Pod
from gangsched.frontends import assemble, load_object
from gangsched.k8s.api import NODES, PODS, Kind, Obj
from gangsched.k8s.binder import BindPool
from gangsched.k8s.cache import Delta
from gangsched.model import Workload
from gangsched.scheduler.backend import BindError, ClusterEvent
from gangsched.scheduler.clock import Clock

log = logging.getLogger("gangsched.k8s.backend")

def parse_object(obj: Mapping[str, Any], source: str = "api") -> Inputs:
    """What the loader's handler for ``obj``'s kind makes of it, on its own; raises
    :class:`InputError` when the object is invalid or its kind is unknown."""
    return load_object(obj, source)


def _mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    # decoded JSON holds dicts: the exact type test first (isinstance against the
    # Mapping ABC costs ~10x more, and this runs several times per watch event)
    return type(value) is dict or isinstance(value, Mapping)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if _mapping(meta) else {}


@dataclass
class _Parsed:
    rv: str
    inputs: Inputs | None  # None: invalid


@dataclass
class _ParsedPod:
    rv: str
    shape: tuple[Any, ...]  # what the parse depends on, besides nodeName
    pod: Pod | None  # None: invalid


def _pod_shape(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = _meta(obj)
    spec = obj.get("spec")
    if _mapping(spec) and "nodeName" in spec:
        spec = {k: v for k, v in spec.items() if k != "nodeName"}
    return (meta.get("name"), meta.get("namespace"), meta.get("uid"), meta.get("labels"),
            meta.get("annotations"), spec, obj.get("apiVersion"), obj.get("kind"))


@dataclass
class ViewChanges:
    """What applying deltas changed, in the order the scheduler should hear it."""

    events: list[tuple[str, str]] = field(default_factory=list)  # (kind, name)
    stray: list[Pod] = field(default_factory=list)  # bound behind our back: delete them


@dataclass(frozen=True)
class _Assumed:
    uid: str | None
    node: str


class ClusterView:
    """Watched objects, parsed, and the plan the front-ends make of them."""

    def __init__(self, scheduler_name: str = "gangsched",
                 levels: Sequence[str] | None = None) -> None:
        self.scheduler_name = scheduler_name
        self.levels = list(levels) if levels else None
        self.raw_nodes: dict[str, Node] = {}  # as parsed (no HyperNode labels)
        self.nodes: dict[str, Node] = {}  # with the labels front-ends add
        self.pods: dict[str, Pod] = {}  # live pods, bound or not, any scheduler
        self.raw_pods: dict[str, Obj] = {}
        self.workloads: dict[str, Workload] = {}
        self.plan_levels: list[str] | None = None  # levels the objects define, if any
        self.objects: dict[tuple[str, str], _Parsed] = {}  # (kind id, key) -> parsed
        self.statuses: dict[tuple[str, str], Obj] = {}  # (kind id, key) -> .status
        self.warnings: list[str] = []
        self._ours: dict[str, Pod] = {}  # our pods without nodeName: the trees' input
        self._parsed_pods: dict[str, _ParsedPod] = {}
        self._assumed: dict[str, _Assumed] = {}  # bound by us, not yet seen bound
        self._tombstones: dict[str, str] = {}  # uid -> key: deleted by us, not yet gone
        self._suspect: dict[str, _Assumed] = {}  # binds that may have applied after failing
        self._dirty = True  # the plan needs assembling
        self._bad: dict[tuple[str, str], str] = {}  # invalid objects -> rv, logged once

    # -- applying deltas ------------------------------------------------------------------

    def apply(self, deltas: Iterable[Delta], assemble: bool = True) -> ViewChanges:
        """Take in watch deltas; ``assemble``: rebuild the gang trees and nodes now if
        anything they are made of changed (else later: while the first lists are still
        coming in, one assembly at the end does what one per list would)."""
        out = ViewChanges()
        pod_events: list[tuple[str, str]] = []
        node_events: list[tuple[str, str]] = []
        for d in deltas:
            if d.kind == PODS:
                self._pod(d, pod_events, out)
            elif d.kind == NODES:
                self._node(d)
            else:
                self._object(d)
        if self._dirty and assemble:
            node_events, wl_events = self._assemble()
            out.events.extend(node_events)
            out.events.extend(wl_events)
        out.events.extend(pod_events)
        return out

    def _parse(self, kind: Kind, key: str, obj: Obj) -> Inputs | None:
        try:
            return parse_object(obj)
        except InputError as err:
            rv = str(_meta(obj).get("resourceVersion") or "")
            if self._bad.get((kind.id, key)) != rv:
                self._bad[(kind.id, key)] = rv
                log.warning("ignoring invalid %s %s: %s", kind.kind, key, err,
                            extra={"resource": kind.id, "object": key})
            return None

    def _node(self, d: Delta) -> None:
        if d.type == "DELETED":
            if self.raw_nodes.pop(d.key, None) is not None:
                self._dirty = True
            return
        parsed = self._parse(NODES, d.key, d.obj)
        node = parsed.nodes[0] if parsed is not None and parsed.nodes else None
        if node is None:
            if self.raw_nodes.pop(d.key, None) is not None:
                self._dirty = True
            return
        if self.raw_nodes.get(d.key) != node:
            self.raw_nodes[d.key] = node
            self._dirty = True

    def _object(self, d: Delta) -> None:
        ident = (d.kind.id, d.key)
        if d.type == "DELETED":
            self.statuses.pop(ident, None)
            if self.objects.pop(ident, None) is not None:
                self._dirty = True
            return
        rv = str(_meta(d.obj).get("resourceVersion") or "")
        old = self.objects.get(ident)
        if old is not None and old.rv == rv and rv:
            return
        status = d.obj.get("status")
        self.statuses[ident] = status if isinstance(status, dict) else {}
        parsed = self._parse(d.kind, d.key, d.obj)
        self.objects[ident] = _Parsed(rv, parsed)
        if old is None or not _same(old.inputs, parsed):  # not just a status update
            self._dirty = True

    def _pod(self, d: Delta, events: list[tuple[str, str]], out: ViewChanges) -> None:
        key, obj = d.key, d.obj
        uid = str(_meta(obj).get("uid") or "") or None
        old = self.pods.get(key)
        if d.type == "DELETED" or pod_gone(obj):
            if uid is not None and self._tombstones.get(uid) == key and d.type == "DELETED":
                del self._tombstones[uid]
            self._assumed.pop(key, None)
            self._suspect.pop(key, None)
            if old is not None and (old.uid is None or uid is None or old.uid == uid):
                self._forget_pod(key)
                events.append(("PodDeleted", key))
            return
        if uid is not None and uid in self._tombstones:
            return  # deleted by us: gone as far as the scheduler knows
        pod, reused = self._parse_pod(key, obj)
        if pod is None:
            if old is not None:
                self._forget_pod(key)
                events.append(("PodDeleted", key))
            return
        if old is not None and old.uid != pod.uid:  # replaced while we were not watching
            self._forget_pod(key)
            events.append(("PodDeleted", key))
            old = None
        assumed = self._assumed.get(key)
        if assumed is not None:
            if assumed.uid not in (None, pod.uid):
                del self._assumed[key]
            elif pod.node_name:
                del self._assumed[key]
                if pod.node_name != assumed.node:
                    log.error("pod %s was bound to %s, not %s as we bound it", key,
                              pod.node_name, assumed.node, extra={"pod": key})
            else:
                pod = pod.on_node(assumed.node)
        suspect = self._suspect.get(key)
        if suspect is not None and pod.node_name and suspect.uid in (None, pod.uid) \
                and key not in self._assumed:
            # a bind we reported failed did apply: the gang around it was rolled back
            del self._suspect[key]
            out.stray.append(pod)
            if pod.uid:
                self._tombstones[pod.uid] = key
            if old is not None:
                self._forget_pod(key)
                events.append(("PodDeleted", key))
            return
        self.pods[key] = pod
        self.raw_pods[key] = obj
        if old is None:
            events.append(("PodAdded", key))
            if pod.node_name:
                events.append(("PodBound", key))
        elif pod.node_name and not old.node_name:
            events.append(("PodBound", key))
        elif old.node_name and pod.node_name != old.node_name:  # cannot happen in Kubernetes
            events.append(("PodDeleted", key))
            events.append(("PodAdded", key))
            if pod.node_name:
                events.append(("PodBound", key))
        if pod.scheduler_name == self.scheduler_name:
            if reused and key in self._ours:
                return  # a bind or a status change: the tree's input is the same
            spec = pod.on_node(None)
            if self._ours.get(key) != spec:
                self._ours[key] = spec
                self._dirty = True
        elif key in self._ours:
            del self._ours[key]
            self._dirty = True

    def _parse_pod(self, key: str, obj: Obj) -> tuple[Pod | None, bool]:
        """The parsed pod, and whether an earlier parse was reused: a new version that
        differs only in ``nodeName`` and status (a bind, the kubelet's updates) reuses
        the previous parse."""
        rv = str(_meta(obj).get("resourceVersion") or "")
        cached = self._parsed_pods.get(key)
        if cached is not None and cached.rv == rv and rv:
            return cached.pod, True
        shape = _pod_shape(obj)
        reused = cached is not None and cached.shape == shape and cached.pod is not None
        if reused:
            assert cached is not None and cached.pod is not None
            spec = obj.get("spec")
            node = spec.get("nodeName") if _mapping(spec) else None
            pod: Pod | None = cached.pod if cached.pod.node_name == (node or None) \
                else cached.pod.on_node(node or None)
        else:
            inputs = self._parse(PODS, key, obj)
            pod = inputs.pods[0] if inputs is not None and inputs.pods else None
        self._parsed_pods[key] = _ParsedPod(rv, shape, pod)
        return pod, reused

    def _forget_pod(self, key: str) -> None:
        self.pods.pop(key, None)
        self.raw_pods.pop(key, None)
        self._parsed_pods.pop(key, None)
        if self._ours.pop(key, None) is not None:
            self._dirty = True

    # -- our own writes -------------------------------------------------------------------

    def assume_bound(self, key: str, node: str) -> None:
        """We bound ``key`` to ``node``: it is bound from now on."""
        pod = self.pods[key]
        self._assumed[key] = _Assumed(pod.uid, node)
        self._suspect.pop(key, None)
        self.pods[key] = pod.on_node(node)

    def unassume(self, key: str) -> str | None:
        """A bind we assumed failed: the pod is unbound again, unless the API showed it
        bound meanwhile. Returns where the API shows it bound (None: unbound or gone)."""
        pod = self.pods.get(key)
        if pod is None:
            return None
        if self._assumed.pop(key, None) is not None:
            self.pods[key] = pod.on_node(None)
            return None
        return pod.node_name

    def suspect(self, key: str, node: str) -> None:
        """A bind of ``key`` failed in a way that may have applied: if the API later
        shows it bound there, it is a stray (its gang was rolled back)."""
        pod = self.pods.get(key)
        if pod is not None:
            self._suspect[key] = _Assumed(pod.uid, node)

    def assume_deleted(self, key: str) -> Pod | None:
        """We deleted ``key``: it is gone from now on (its watch events are ignored)."""
        pod = self.pods.get(key)
        if pod is None:
            return None
        if pod.uid:
            self._tombstones[pod.uid] = key
        self._assumed.pop(key, None)
        self._forget_pod(key)
        return pod

    def forget_tombstone(self, pod: Pod) -> None:
        """A delete we gave up on: let the pod's watch events count again."""
        if pod.uid:
            self._tombstones.pop(pod.uid, None)

    # -- assembling -----------------------------------------------------------------------

    def inputs(self) -> Inputs:
        """Everything watched, as the loader would have loaded it from files; the
        ``--topology`` levels, when given, win over a Topology object's."""
        inputs = Inputs(nodes=list(self.raw_nodes.values()), pods=list(self._ours.values()),
                        topology_levels=list(self.levels) if self.levels else None,
                        topology_source="--topology" if self.levels else None)
        for ident in sorted(self.objects):
            parsed = self.objects[ident].inputs
            if parsed is None:
                continue
            for kind, values in parsed.objects.items():
                inputs.objects.setdefault(kind, []).extend(values)
            if parsed.topology_levels is not None and not self.levels and takes_chain(
                    inputs.topology_levels, inputs.topology_kai, parsed.topology_levels,
                    parsed.topology_kai):
                inputs.topology_levels = parsed.topology_levels
                inputs.topology_kai = parsed.topology_kai
            inputs.warnings.extend(parsed.warnings)
        return inputs

    def _assemble(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        self._dirty = False
        try:
            plan = assemble(self.inputs())
        except InputError as err:  # objects that disagree (e.g. two topologies)
            log.error("cannot build gang trees: %s; keeping the previous ones", err)
            plan = None
        node_events: list[tuple[str, str]] = []
        nodes = {n.name: n for n in plan.nodes} if plan is not None else dict(self.raw_nodes)
        for name, node in nodes.items():
            old = self.nodes.get(name)
            if old is None:
                node_events.append(("NodeAdded", name))
            elif old != node:
                node_events.append(("NodeChanged", name))
        node_events.extend(("NodeRemoved", name) for name in self.nodes if name not in nodes)
        self.nodes = nodes
        if plan is None:
            return node_events, []
        self.plan_levels = list(plan.levels) if plan.levels else None
        if plan.warnings != self.warnings:
            for text in plan.warnings:
                if text not in self.warnings:
                    log.warning("%s", text)
            self.warnings = list(plan.warnings)
        wl_events: list[tuple[str, str]] = []
        current: dict[str, Workload] = {}
        real = self.pods.keys() | self._ours.keys()
        for w in _one_per_name(plan.workloads):
            if any(key not in real for key in w.pods):
                # pods a front-end made from a controller's object (a ModelServing): in a
                # cluster the controller creates them, and they are scheduled then
                log.debug("not scheduling %s: its pods do not exist (yet)", w.name,
                          extra={"unit": w.name, "kind": w.kind})
                continue
            old_w = self.workloads.get(w.name)
            if old_w is not None and old_w == w:
                current[w.name] = old_w  # unchanged: the same object, no re-submission
            else:
                current[w.name] = w
                wl_events.append(("WorkloadAdded", w.name))
                if w.tree is None and w.waiting and (old_w is None
                                                     or old_w.waiting != w.waiting):
                    _log_waiting(w)
        wl_events.extend(("WorkloadRemoved", name) for name in self.workloads
                         if name not in current)
        self.workloads = current
        return node_events, wl_events


def _one_per_name(workloads: Iterable[Workload]) -> list[Workload]:
    """One workload per name: two front-ends may build one of the same name (a Volcano
    PodGroup and a KAI front-end reading the same pods' annotation); the one holding
    more pods wins, the first on a tie."""
    chosen: dict[str, Workload] = {}
    for w in workloads:
        have = chosen.get(w.name)
        if have is None or len(w.pods) > len(have.pods):
            if have is not None:
                log.debug("two workloads named %s (%s, %s): keeping the %s one", w.name,
                          have.kind, w.kind, w.kind)
            chosen[w.name] = w
    return list(chosen.values())


MISSING_OBJECT = ("waiting for PodGroup", "waiting for parent")


def _log_waiting(w: Workload) -> None:
    """Pods naming a group that does not exist (or a group whose parent does not) are
    worth a warning: nothing schedules them until it appears."""
    pods = sorted(w.pods)
    fields = {"unit": w.name, "kind": w.kind, "reason": w.waiting, "pods": len(pods),
              "first_pod": pods[0] if pods else ""}
    if w.invalid:
        log.warning("%s %s is invalid: %s", w.kind, w.name, w.invalid, extra=fields)
    elif any(w.waiting.startswith(m) for m in MISSING_OBJECT):
        log.warning("%s: %s (%d pods wait for it)", w.name, w.waiting, len(pods),
                    extra=fields)
    else:
        log.debug("%s: %s", w.name, w.waiting, extra=fields)


def _same(a: Inputs | None, b: Inputs | None) -> bool:
    """Whether two parses of one object say the same (a status change does not count)."""
    if a is None or b is None:
        return a is b
    return (a.objects == b.objects and a.nodes == b.nodes and a.pods == b.pods
            and a.topology_levels == b.topology_levels)


BindHook = Callable[[Pod, str], None]


@dataclass
class _Batch:
    """The binds of one workload in flight together: rolled back together."""

    name: str
    nodes: dict[str, str] = field(default_factory=dict)  # pod -> node, every bind issued
    pending: set[str] = field(default_factory=set)  # issued, no outcome yet
    bound: list[str] = field(default_factory=list)  # confirmed
    failed: list[tuple[str, BindError]] = field(default_factory=list)


FAILED_BACKOFF = (0.05, 10.0)  # seconds a pod whose bind failed is not bound again


class KubeBackend:
    """:class:`~gangsched.scheduler.backend.ClusterBackend` over a :class:`ClusterView`.

    ``binder(pod, node)`` binds through the API (raising BindError), ``deleter(pod,
    reason)`` deletes; ``is_leader()`` gates both. Observers (events, metrics) hook in
    through ``on_bound`` and ``on_evicted``.
    """

    def __init__(
        self,
        view: ClusterView,
        clock: Clock,
        *,
        binder: Callable[[Pod, str], None],
        deleter: Callable[[Pod, str], None],
        is_leader: Callable[[], bool] = lambda: True,
        pool: BindPool | None = None,
    ) -> None:
        self.view = view
        self.pool = pool
        self._batches: dict[str, _Batch] = {}  # workload (or pod) -> its binds in flight
        self._batch_of: dict[str, _Batch] = {}  # pod -> its batch
        self._gang_index: tuple[object, dict[str, str]] = (None, {})  # pod -> workload
        self._failed: dict[str, tuple[float, int]] = {}  # pod -> (not before, failures)
        self.clock = clock
        self._binder = binder
        self._deleter = deleter
        self._is_leader = is_leader
        self._subscribers: list[Callable[[ClusterEvent], None]] = []
        self.on_bound: list[BindHook] = []
        self.on_evicted: list[BindHook] = []
        self.on_bind_error: list[Callable[[Pod, str, BindError], None]] = []
        self.on_node_failure: list[Callable[[Pod, str], None]] = []  # (pod, cause)

    # -- the protocol ---------------------------------------------------------------------

    def nodes(self) -> list[Node]:
        return list(self.view.nodes.values())

    def pods(self) -> list[Pod]:
        return list(self.view.pods.values())

    def workloads(self) -> list[Workload]:
        return list(self.view.workloads.values())

    def subscribe(self, callback: Callable[[ClusterEvent], None]) -> None:
        self._subscribers.append(callback)

    def unsubscribe_all(self) -> None:
        self._subscribers.clear()

    def bind(self, pod_key: str, node_name: str) -> None:
        pod = self.view.pods.get(pod_key)
        if pod is None:
            raise BindError(f"pod {pod_key} not found")
        if pod.node_name is not None:
            raise BindError(f"pod {pod_key} is already bound to {pod.node_name}")
        node = self.view.nodes.get(node_name)
        if node is None:
            raise BindError(f"node {node_name} not found")
        if not node.schedulable:
            raise BindError(f"node {node_name} is not schedulable")
        if not self._is_leader():
            raise BindError("not the leader: binding is left to the leader")
        if self.pool is not None:
            self._bind_async(pod, node_name)
            return
        try:
            self._binder(pod, node_name)
        except BindError as err:
            if getattr(err, "uncertain", False):
                self.view.suspect(pod_key, node_name)
            for on_error in self.on_bind_error:
                on_error(pod, node_name, err)
            raise
        self.view.assume_bound(pod_key, node_name)
        for hook in self.on_bound:
            hook(pod, node_name)
        self._emit("PodBound", pod_key)

    # -- concurrent binding ---------------------------------------------------------------
    #
    # With a BindPool, bind() assumes the pod bound (as the scheduler does) and hands the
    # API call to the pool; the scheduler goes on deciding while binds are on the wire
    # (kube-scheduler's binding cycle, split from the scheduling cycle). The binds of one
    # workload issued together form a batch, and a batch is all or nothing: when any of
    # its binds fails, the pods it bound are deleted once its last bind has finished
    # (the scheduler hears them lost and evicts or repairs the gang as it does for any
    # lost pod), the pods that failed are unbound again, and a pod whose bind failed is
    # refused for a short, growing backoff (the scheduler then rolls back a new attempt
    # at once, and backs off itself). Outcomes are handled on the main thread by
    # settle(); observers (the Scheduled event, the binds metric) hear of a bind when
    # the API confirmed it.

    def _gang(self, pod_key: str) -> str:
        workloads = self.view.workloads  # a new dict whenever the trees are assembled
        known, index = self._gang_index
        if known is not workloads:
            index = {p: w.name for w in workloads.values() for p in w.pods}
            self._gang_index = (workloads, index)
        return index.get(pod_key, pod_key)

    def _bind_async(self, pod: Pod, node_name: str) -> None:
        assert self.pool is not None
        key = pod.key
        failed = self._failed.get(key)
        if failed is not None and time.monotonic() < failed[0]:
            raise BindError(f"bind of {key} failed {failed[1]} times; retrying later")
        gang = self._gang(key)
        batch = self._batches.get(gang)
        if batch is None:
            batch = self._batches[gang] = _Batch(gang)
        batch.nodes[key] = node_name
        batch.pending.add(key)
        self._batch_of[key] = batch
        self.view.assume_bound(key, node_name)
        self._emit("PodBound", key)
        self.pool.submit(pod, node_name)

    @property
    def binding(self) -> int:
        """Binds handed to the pool whose outcome is not handled yet."""
        return sum(len(b.pending) for b in self._batches.values())

    def settle(self) -> int:
        """Handle the outcomes of the binds finished since the last call (main thread):
        observers hear of confirmed binds, failed batches are rolled back once none of
        their binds is on the wire. Returns how many outcomes were handled."""
        if self.pool is None:
            return 0
        results = self.pool.results()
        for r in results:
            key = r.pod.key
            batch = self._batch_of.pop(key, None)
            if batch is None:
                continue
            batch.pending.discard(key)
            if r.error is None:
                self._failed.pop(key, None)
                batch.bound.append(key)
                for hook in self.on_bound:
                    hook(r.pod, r.node)
            else:
                before = self._failed.get(key, (0.0, 0))[1]
                delay = min(FAILED_BACKOFF[1], FAILED_BACKOFF[0] * 2 ** before)
                self._failed[key] = (time.monotonic() + delay, before + 1)
                batch.failed.append((key, r.error))
                for on_error in self.on_bind_error:
                    on_error(r.pod, r.node, r.error)
            if not batch.pending:
                del self._batches[batch.name]
                if batch.failed:
                    self._roll_back(batch)
        return len(results)

    def _roll_back(self, batch: _Batch) -> None:
        """Undo a batch in which a bind failed: no partial gang is left bound."""
        first_key, first_err = batch.failed[0]
        log.warning("binding %s failed (%s): rolling back its %d bound pods", batch.name,
                    first_err, len(batch.bound), extra={
                        "unit": batch.name, "pod": first_key, "bound": len(batch.bound),
                        "failed": len(batch.failed)})
        reason = f"rollback: bind of {first_key} failed"
        doomed = list(batch.bound)
        for key, err in batch.failed:
            node = batch.nodes[key]
            shown = self.view.unassume(key)
            if shown is None:  # unbound (or gone): the scheduler hears it is not bound
                if getattr(err, "uncertain", False):
                    self.view.suspect(key, node)
                if key in self.view.pods:
                    self._emit("PodDeleted", key)
                    self._emit("PodAdded", key)
            elif shown == node:  # the write applied although the call failed
                doomed.append(key)
            else:  # someone else bound it: that bind is theirs
                self._emit("PodDeleted", key)
                self._emit("PodAdded", key)
                self._emit("PodBound", key)
        for key in doomed:
            self.evict(key, reason)

    def drain(self, timeout: float) -> bool:
        """Wait for every bind on the wire and handle the outcomes (shutting down);
        whether none is left."""
        if self.pool is None:
            return True
        idle = self.pool.wait_idle(timeout)
        self.settle()
        return idle

    def evict(self, pod_key: str, reason: str) -> None:
        if pod_key not in self.view.pods:
            return  # already gone: eviction is idempotent
        if not self._is_leader():
            log.warning("not evicting %s (%s): not the leader", pod_key, reason,
                        extra={"pod": pod_key})
            return
        pod = self.view.assume_deleted(pod_key)
        if pod is None:
            return
        self._deleter(pod, reason)
        for hook in self.on_evicted:
            hook(pod, reason)
        self._emit("PodDeleted", pod_key)

    # -- driving --------------------------------------------------------------------------

    def apply(self, deltas: Iterable[Delta], assemble: bool = True) -> ViewChanges:
        """Apply watch deltas and tell subscribers what changed. Pods the API shows
        bound after a bind we reported failed (and rolled back) are deleted.
        ``assemble``: as :meth:`ClusterView.apply`."""
        changes = self.view.apply(deltas, assemble)
        for pod in changes.stray:
            log.warning("deleting %s: bound to %s by a bind reported failed (its gang was "
                        "rolled back)", pod.key, pod.node_name, extra={"pod": pod.key})
            if self._is_leader():
                self._deleter(pod, "rollback: a bind reported failed had applied")
            else:  # the leader will see it bound and repair or evict its gang
                self.view.forget_tombstone(pod)
        for kind, name in changes.events:
            self._emit(kind, name)
        failed = {name for kind, name in changes.events
                  if kind in ("NodeRemoved", "NodeChanged")}
        if failed:
            self.check_nodes(failed)
        return changes

    def check_nodes(self, names: Iterable[str] | None = None) -> int:
        """Delete our bound pods on nodes (``names``, or every node) that were deleted,
        are NotReady, or carry a ``NoExecute`` taint the pod does not tolerate: their
        controllers recreate them and the scheduler repairs (or evicts) their gangs,
        instead of waiting for the pod garbage collector or the taint manager. Cordoned
        nodes (``spec.unschedulable``) keep their pods; they only take no new ones.
        Returns how many pods were deleted (the leader only deletes)."""
        if not self._is_leader():
            return 0
        wanted = set(names) if names is not None else None
        lost: list[tuple[str, str, str]] = []
        for key, pod in self.view.pods.items():
            node_name = pod.node_name
            if node_name is None or pod.scheduler_name != self.view.scheduler_name:
                continue
            if wanted is not None and node_name not in wanted:
                continue
            node = self.view.nodes.get(node_name)
            if node is None:
                lost.append((key, "deleted", f"node {node_name} was deleted"))
            elif not node.ready:
                lost.append((key, "not_ready", f"node {node_name} is NotReady"))
            else:
                taint = next((t for t in node.taints if t.effect == "NoExecute" and not any(
                    tol.tolerates(t) for tol in pod.requirements.tolerations)), None)
                if taint is not None:
                    lost.append((key, "no_execute",
                                 f"node {node_name} has taint {taint.key}:NoExecute"))
        for key, cause, text in lost:
            victim = self.view.pods.get(key)
            if victim is None:
                continue
            log.warning("deleting %s: %s; its gang is repaired", key, text,
                        extra={"pod": key, "node": victim.node_name, "cause": cause})
            for hook in self.on_node_failure:
                hook(victim, cause)
            self.evict(key, f"node failure: {text}")
        return len(lost)

    def _emit(self, kind: str, name: str) -> None:
        ev = ClusterEvent(kind, name, self.clock.now())
        for cb in list(self._subscribers):
            cb(ev)
