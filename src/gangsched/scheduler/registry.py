"""Workloads -> units: which units exist, which pods they own.

:meth:`Registry.sync` brings the units in line with the backend's workloads and returns
what the scheduler must then do as a value (:class:`Changes`): pods to evict (surplus
after a scale down, units that went away), pods whose capacity to release (deleted with
their workload), events to log, units to check.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from gangsched.api.types import Pod
from gangsched.gang import Group, TreeNode, walk
from gangsched.model import Workload
from gangsched.scheduler.policy import Policy
from gangsched.scheduler.status import UnitState
from gangsched.scheduler.tree import pod_keys, satisfied, unit_name
from gangsched.scheduler.unit import StateIndex, Unit


@dataclass
class Changes:
    evict: list[tuple[Unit | None, list[str], str]] = field(default_factory=list)
    released: list[str] = field(default_factory=list)  # deleted with their workload
    events: list[tuple[str, Unit, str]] = field(default_factory=list)  # (kind, unit, msg)
    dirty: set[str] = field(default_factory=set)  # running units whose shape changed
    dropped: set[str] = field(default_factory=set)  # unit names that no longer exist
    new_keys: set[str] = field(default_factory=set)  # topology keys not seen before

    @property
    def freed(self) -> bool:
        return bool(self.released) or any(pods for _, pods, _ in self.evict)


class Registry:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.units: dict[str, Unit] = {}
        self.index = StateIndex()  # the units by state
        self.workloads: dict[str, Workload] = {}
        self.by_workload: dict[str, list[str]] = {}
        self.pod_unit: dict[str, Unit] = {}  # pod key -> its unit
        self.keys: set[str] = set()  # topology keys named by any tree
        self._seq = 0

    def sync(self, current: Sequence[Workload], removed: Collection[str],
             now: float) -> Changes:
        """Apply the backend's workloads (``removed``: names removed since, perhaps
        submitted again)."""
        out = Changes()
        byname = {w.name: w for w in current}
        for name in [n for n in self.workloads if n not in byname or n in removed]:
            self._remove(name, out)
        for name, w in byname.items():
            old = self.workloads.get(name)
            if old is None:
                self._add(w, now, out)
            elif (old.tree is not w.tree or old.waiting != w.waiting
                  or old.priority != w.priority):
                self._update(old, w, now, out)
            self.workloads[name] = w
        return out

    def adopt(self, pods: Iterable[Pod], now: float) -> None:
        """Pods already bound when the scheduler starts: their units run (admitted, or
        degraded when below a minimum)."""
        touched: set[str] = set()
        for p in pods:
            u = self.pod_unit.get(p.key)
            if u is not None and p.node_name is not None and u.pods.add(p.key, p.node_name):
                touched.add(u.name)
        for name in sorted(touched):
            u = self.units[name]
            assert u.tree is not None
            if satisfied(u.tree, u.pods.sets):
                u.set_state(UnitState.admitted, "running when the scheduler started", now)
                u.life.admitted_at = now
                u.extras.next = now if u.n_bound < u.desired else None
            else:
                u.set_state(UnitState.running_degraded, "below its minimum at start", now)
                u.repair.since = now

    # -- internals ------------------------------------------------------------------------

    def _trees(self, w: Workload) -> dict[str, TreeNode]:
        if w.tree is None or w.waiting:
            return {}
        nodes = self.policy.units(w)
        root = w.tree.path
        out: dict[str, TreeNode] = {}
        for n in nodes:
            name = unit_name(w.name, root, n, len(nodes) == 1)
            if name in out:  # a policy may cut units that share a path tail
                name = f"{name}#{sum(1 for k in out if k.startswith(name))}"
            out[name] = n
        return out

    @staticmethod
    def _priority(w: Workload, tree: TreeNode | None) -> int:
        if w.priority or not isinstance(tree, Group):
            return w.priority
        return tree.priority

    def _add(self, w: Workload, now: float, out: Changes) -> None:
        trees = self._trees(w)
        names: list[str] = []
        if not trees:
            u = self._new(w.name, w, None, now, out)
            u.set_state(UnitState.waiting, w.waiting or "no gang tree yet", now)
            names.append(u.name)
        for name, tree in trees.items():
            names.append(self._new(name, w, tree, now, out).name)
        self.by_workload[w.name] = names

    def _new(self, name: str, w: Workload, tree: TreeNode | None, now: float,
             out: Changes) -> Unit:
        self._seq += 1
        u = Unit.new(name, w.name, tree, self._priority(w, tree), self._seq, now)
        u.limit = w.limit
        self.units[name] = u
        self.index.add(u)
        for p in u.set_of:
            self.pod_unit[p] = u
        self._note_keys(tree, out)
        return u

    def _note_keys(self, tree: TreeNode | None, out: Changes) -> None:
        for n in walk(tree) if tree is not None else ():
            for c in n.topology:
                if c.key not in self.keys:
                    self.keys.add(c.key)
                    out.new_keys.add(c.key)

    def _forget(self, u: Unit, out: Changes) -> None:
        for p in u.set_of:
            if self.pod_unit.get(p) is u:
                del self.pod_unit[p]
        if self.units.get(u.name) is u:
            del self.units[u.name]
        self.index.remove(u)
        out.dropped.add(u.name)

    def _drop(self, u: Unit, reason: str, out: Changes) -> None:
        """A unit that went away while its workload stays: its bound pods are evicted."""
        pods = list(u.bound())
        if pods:
            out.evict.append((None, pods, reason))
        self._forget(u, out)

    def _remove(self, name: str, out: Changes) -> None:
        """The workload is gone and the backend deleted its pods."""
        for uname in self.by_workload.pop(name, []):
            u = self.units.get(uname)
            if u is not None:
                out.released.extend(u.bound())
                self._forget(u, out)
        self.workloads.pop(name, None)

    def _update(self, old: Workload, w: Workload, now: float, out: Changes) -> None:
        """A re-submitted workload: scale its units, keeping running pods and domains."""
        names = self.by_workload.get(old.name, [])
        if old.tree is None or old.waiting or w.tree is None or w.waiting:
            for n in names:
                if n in self.units:
                    self._drop(self.units[n], "workload changed", out)
            self._add(w, now, out)
            return
        trees = self._trees(w)
        for n in names:
            if n not in trees and n in self.units:
                self._drop(self.units[n], "scale down: unit removed", out)
        kept: list[str] = []
        for name, tree in trees.items():
            u = self.units.get(name)
            if u is None or u.tree is None:
                if u is not None:
                    self._drop(u, "workload changed", out)
                kept.append(self._new(name, w, tree, now, out).name)
                continue
            self._rescale(u, tree, self._priority(w, tree), now, out)
            kept.append(name)
        self.by_workload[w.name] = kept

    def _rescale(self, u: Unit, tree: TreeNode, priority: int, now: float,
                 out: Changes) -> None:
        """New desired pods for a unit: the bound pods the new tree no longer names are
        surplus, evicted highest index first; new pods are extras placed inside its
        pinned domains. Every pod the new tree names keeps running where it is."""
        wanted = set(pod_keys(tree))
        index = {p: i for ps in u.podsets() for i, p in enumerate(ps.pods)}
        surplus = sorted((p for p in u.bound() if p not in wanted),
                         key=lambda p: (u.set_of[p], -index[p]))
        before = u.desired
        for p in u.set_of:
            if p not in wanted and self.pod_unit.get(p) is u:
                del self.pod_unit[p]
        u.set_tree(tree)
        u.priority = priority
        self._note_keys(tree, out)
        for p in u.set_of:
            self.pod_unit[p] = u
        if surplus:
            out.evict.append((u, surplus, "scale down"))
        if u.running:
            u.extras.next = now if u.n_bound < u.desired else None
            out.dirty.add(u.name)
        out.events.append(("Scaled", u, f"desired {before} -> {u.desired} pods"
                           + (f"; evicted {len(surplus)} surplus pods" if surplus else "")))
