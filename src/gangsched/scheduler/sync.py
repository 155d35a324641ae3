"""Phase 1, sync: the backend's events since the last drain, as actions.

The registry has already followed the backend's workloads (:meth:`.Registry.sync`
returns what changed as a value); here those changes and the other events become
actions: evictions and releases for workloads scaled down or gone; pods lost, or bound
by someone else (their units, and rescaled ones, are checked for health next); nodes
added, removed or changed (the only events that rebuild the ClusterState; everything
else updates it incrementally). Events that can help a waiting unit (a node added or
schedulable again, capacity released by others, a workload removed) wake the queue:
backoff reset.
"""

from __future__ import annotations

from collections.abc import Collection, Generator, Iterator, Sequence

import numpy as np

from gangsched.api.types import Node
from gangsched.cluster.topology import HOSTNAME
from gangsched.gang import required_key
from gangsched.scheduler.actions import (
    Action,
    Check,
    Event,
    Evict,
    ExternalBind,
    Forget,
    LevelsStale,
    NodesSeen,
    Outcome,
    PodLost,
    Rebuild,
    Release,
    Seen,
    Steps,
    Wake,
)
from gangsched.scheduler.backend import NODE_EVENTS, ClusterEvent
from gangsched.scheduler.registry import Changes
from gangsched.scheduler.snapshot import Context, Snapshot
from gangsched.scheduler.status import UnitState
from gangsched.scheduler.unit import QUEUED


def start(changes: Changes, ctx: Context) -> Steps:
    """The first sync, when the scheduler starts: its workloads, then its nodes."""
    yield from workload_changes(changes, ctx.snap)
    nodes = ctx.backend.nodes()
    yield NodesSeen({n.name: n.schedulable for n in nodes})
    yield Rebuild(nodes)


def drain(events: Sequence[ClusterEvent], changes: Changes | None, ctx: Context) -> Steps:
    """``changes``: what the registry changed for the workload events among ``events``."""
    m = ctx.snap.mirror
    kinds = {e.kind for e in events}
    helpful = False
    if changes is not None:
        yield from workload_changes(changes, ctx.snap)
        helpful |= changes.freed
    rebuild = bool(kinds & NODE_EVENTS) or m.levels_stale
    nodes: list[Node] | None = None
    if kinds & NODE_EVENTS:
        nodes = ctx.backend.nodes()
        new_ok = {n.name: n.schedulable for n in nodes}
        helpful |= any(ok and not m.node_ok.get(k, False) for k, ok in new_ok.items())
        yield NodesSeen(new_ok)
    external: list[str] = []
    for e in events:
        if e.kind == "PodDeleted":
            freed = yield from _pod_deleted(e.name, ctx)
            helpful |= freed
        elif e.kind == "PodBound":
            if e.name in m.own_binds:
                yield Seen(e.name, bind=True)
            elif e.name not in m.state.bound:
                external.append(e.name)
    if rebuild:
        yield Rebuild(nodes)
    if external:
        yield from _external_binds(set(external), ctx)
    if helpful:
        yield from _wake_queue(ctx)


def workload_changes(ch: Changes, snap: Snapshot) -> Iterator[Action]:
    """What the registry changed, to apply: dropped reservations, released and evicted
    pods, events, units to check, and whether the topology levels are stale."""
    for name in ch.dropped:
        yield Forget(name)
    if ch.released:
        yield Release(ch.released)
    for u, pods, reason in ch.evict:
        yield Evict(u, pods, reason)
    for kind, u, msg in ch.events:
        yield Event(kind, u, msg)
    for name in ch.dirty:
        yield Check(name)
    m = snap.mirror
    if any(k in m.labelled and k not in m.levels and k != HOSTNAME
           for k in ch.new_keys):  # a new key may nest in the chain of levels
        yield LevelsStale()


def _pod_deleted(key: str, ctx: Context) -> Generator[Action, Outcome, bool]:
    """A pod is gone. Returns whether that released capacity others may use."""
    m = ctx.snap.mirror
    if key in m.own_deletes:
        yield Seen(key, bind=False)
        return False
    u = ctx.registry.pod_unit.get(key)
    node = None
    if u is not None:
        node = u.pods.node_of(key)
        if node is not None:
            yield PodLost(u, key, node)
    entry = m.state.bound.get(key)
    if entry is not None:
        node = node or m.state.topology.names[entry[0]]
        yield Release([key])
    return entry is not None and node is not None and m.node_ok.get(node, False)


def _external_binds(keys: Collection[str], ctx: Context) -> Iterator[Action]:
    """Pods bound by someone else: charge them (and track them if they are ours)."""
    for p in ctx.backend.pods():
        if p.key in keys and p.node_name is not None:
            yield ExternalBind(p.key, p.node_name, p.requests, ctx.registry.pod_unit.get(p.key))


def _wake_queue(ctx: Context) -> Iterator[Action]:
    """Capacity appeared: queued units that could now fit (their minimum's resources
    are free inside one domain of their root's required level, or the cluster) and
    degraded units are tried at once, backoff reset."""
    now = ctx.now()
    st = ctx.snap.state
    free = np.where(st.schedulable, np.maximum(st.free, 0), 0)
    per_level: dict[str | None, np.ndarray] = {}  # free per domain of a level
    index = ctx.registry.index
    for u in index.of(UnitState.running_degraded, *QUEUED):
        if u.life.state == UnitState.running_degraded:
            yield Wake(u, now)  # its repair may need only a little
            continue
        if u.tree is None:
            continue
        key = required_key(u.tree)  # the whole unit lies in one domain of it
        sums = per_level.get(key)
        if sums is None:
            level = st.topology.level_for(key) if key is not None else None
            sums = per_level[key] = (
                free.sum(axis=1, keepdims=True) if level is None or not len(level)
                else np.add.reduceat(free, level.starts, axis=1))
        ok = np.ones(sums.shape[1], dtype=bool)
        for r, v in u.need().items():
            j = st.rindex.get(r)
            if j is None:
                ok[:] = False  # no node has it
            else:
                ok &= sums[j] >= v
        if ok.any():
            yield Wake(u, now)
