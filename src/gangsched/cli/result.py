"""What ``gangsched place`` found, as one value: every workload's status, its groups and
where each pod goes, printed as a table, a wide table, names, or the versioned
``PlacementResult`` document (``apiVersion: gangsched.io/v1``) in JSON or YAML, whose
fields docs/placement-result.md describes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gangsched.cli.select import split_name

if TYPE_CHECKING:  # `gangsched --help` imports this module: the engine stays out
    from gangsched.batch import WorkloadOutcome
    from gangsched.cluster.state import ClusterState
    from gangsched.gang import TreeNode
    from gangsched.model import Workload
    from gangsched.placement.decision import GroupOutcome

API_VERSION = "gangsched.io/v1"
KIND = "PlacementResult"
NONE = "<none>"  # an empty cell, as kubectl prints it

ADMITTED, WAITING, REJECTED, INVALID = "Admitted", "Waiting", "Rejected", "Invalid"
_NODE_ACCOUNT = re.compile(r"\d+/\d+ nodes are available")
_NO_ROOM = re.compile(r"; (room for 0 (pods|replicas)|the best .+ holds 0)$")


@dataclass
class PodResult:
    name: str  # namespace/name
    node: str | None  # None: not placed
    group: str  # path of the pod set it belongs to ("" when not in a tree yet)


@dataclass
class WorkloadResult:
    kind: str
    namespace: str
    name: str
    status: str  # Admitted, Waiting, Rejected or Invalid
    reason: str
    priority: int
    minimum: int  # pods its scheduling units need together
    total: int  # pods it asks for
    groups: list[GroupOutcome] = field(default_factory=list)
    pods: list[PodResult] = field(default_factory=list)
    names: tuple[str, ...] = ()  # names of the tree's nodes, to split the reason

    @property
    def placed(self) -> int:
        return sum(1 for p in self.pods if p.node is not None)

    @property
    def ok(self) -> bool:
        return self.status == ADMITTED

    @property
    def ref(self) -> str:
        """``Kind/name``, as ``-o name`` prints it and ``explain`` reads it."""
        return f"{self.kind.lower()}/{self.name}"

    @property
    def clauses(self) -> list[str]:
        """The reason cut into its clauses: one per group named (``decode: needs ...;
        the best rack ... holds 1``), and kube-scheduler's account of the nodes."""
        if not self.reason:
            return []
        starts = tuple(f"{n}: " for n in self.names)
        pieces = self.reason.split("; ")
        out = pieces[:1]
        for piece in pieces[1:]:  # a "; " inside a clause joins its pieces again
            if piece.startswith(starts) or _NODE_ACCOUNT.match(piece):
                out.append(piece)
            else:
                out[-1] += "; " + piece
        return out

    @property
    def short_reason(self) -> str:
        """The clause of the innermost group that blocks (the last naming a group), or the
        whole reason when it names none; with kube-scheduler's account of the nodes when
        that clause finds room for nothing (a selector, taint or cordon that leaves every
        node out would read as a shortage)."""
        clauses = self.clauses
        named = [c for c in clauses if not _NODE_ACCOUNT.match(c)]
        if not named:
            return self.reason
        account = [c for c in clauses if _NODE_ACCOUNT.match(c)]
        if account and _NO_ROOM.search(named[-1]):
            return f"{named[-1]}; {account[-1]}"
        return named[-1]


def unit_minimum(tree: TreeNode | None) -> int:
    """Pods the workload's scheduling units need together (a basic root: the sum of its
    units' minimums)."""
    from gangsched.gang import minimum_pods as tree_minimum
    from gangsched.gang import scheduling_units

    if tree is None:
        return 0
    return sum(tree_minimum(u) for u in scheduling_units(tree))


def workload_result(w: Workload, outcome: WorkloadOutcome) -> WorkloadResult:
    from gangsched.gang import podsets, walk

    namespace, name = split_name(w.name)
    if w.invalid:
        status, reason = INVALID, w.invalid
    elif outcome.waiting:
        status, reason = WAITING, outcome.reason
    elif outcome.admitted:
        status, reason = ADMITTED, outcome.reason  # independent units that did not fit
    else:
        status, reason = REJECTED, outcome.reason
    if w.tree is not None:
        members = [(p, ps.path) for ps in podsets(w.tree) for p in ps.pods]
    else:
        members = [(p, "") for p in w.pods]
    pods = [PodResult(p, outcome.pods.get(p), group) for p, group in members]
    return WorkloadResult(
        kind=w.kind, namespace=namespace, name=name, status=status, reason=reason,
        priority=w.priority,
        minimum=unit_minimum(w.tree) if w.tree is not None else w.waiting_minimum,
        total=w.tree.size if w.tree is not None else len(w.pods),
        groups=list(outcome.groups), pods=pods,
        names=tuple(n.name for n in walk(w.tree)) if w.tree is not None else ())


# -- where: domains of nodes ---------------------------------------------------------------


class Where:
    """Topology domains of the cluster's nodes, for display."""

    def __init__(self, state: ClusterState) -> None:
        from gangsched.placement.describe import level_noun

        self.topo = state.topology
        self.level_noun = level_noun

    def node_path(self, node: str) -> str:
        """The node's domains, widest first: ``z0/z0-b1/z0-b1-r3`` (its host left out)."""
        j = self.topo.index.get(node)
        if j is None:
            return NONE
        parts = [lv.values[int(lv.node_domain[j])] or "?" for lv in self.topo.levels
                 if lv.key != "kubernetes.io/hostname"]
        return "/".join(parts) or NONE

    def common(self, nodes: list[str]) -> str:
        """The narrowest domain holding all these nodes, as ``rack=z0-b1-r3``; ``cluster``
        when none does, ``<none>`` without nodes."""
        idx = [self.topo.index[n] for n in nodes if n in self.topo.index]
        if not idx:
            return NONE
        for lv in reversed(self.topo.levels):
            ds = {int(lv.node_domain[j]) for j in idx}
            if len(ds) == 1:
                d = ds.pop()
                if lv.valid[d]:
                    return f"{self.level_noun(lv.key)}={self.topo.domain_path(lv, d)}"
        return "cluster"


# -- the document ----------------------------------------------------------------------------


def _group_dict(g: GroupOutcome) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": g.path,
        "kind": g.kind,
        "satisfied": g.satisfied,
        "pods": {"placed": g.placed_pods, "minimum": g.min_pods, "total": g.size},
    }
    if g.kind == "Group":
        out["children"] = {"satisfied": g.satisfied_children, "minimum": g.min_groups,
                           "total": g.children}
    if g.domain_key is not None:
        out["domain"] = {"key": g.domain_key, "value": g.domain_value}
    return out


def _workload_dict(r: WorkloadResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": r.kind,
        "namespace": r.namespace,
        "name": r.name,
        "status": r.status,
    }
    if r.reason:
        out["reason"] = r.reason
    out["priority"] = r.priority
    out["minimum"] = r.minimum
    out["groups"] = [_group_dict(g) for g in r.groups]
    out["pods"] = [{"name": split_name(p.name)[1], "group": p.group, "node": p.node}
                   for p in r.pods]
    return out


def document(results: list[WorkloadResult], warnings: list[str]) -> dict[str, Any]:
    """The ``PlacementResult`` (docs/placement-result.md)."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "warnings": list(warnings),
        "workloads": [_workload_dict(r) for r in results],
    }


# -- rows --------------------------------------------------------------------------------------

HEADER = ("namespace", "kind", "name", "status", "pods", "domain", "reason")
WIDE_HEADER = ("namespace", "kind", "name", "status", "pods", "domain", "node", "reason")


def rows(results: list[WorkloadResult], where: Where, *, wide: bool = False
         ) -> list[list[str]]:
    """One row per workload (pods placed/minimum, the narrowest domain holding its pods,
    the short reason); ``wide``: the whole reason, and after each workload a row per pod
    with its node and the node's domain path."""
    out: list[list[str]] = []
    for r in results:
        placed = [p.node for p in r.pods if p.node is not None]
        reason = (r.reason if wide else r.short_reason) or NONE
        row = [r.namespace or NONE, r.kind, r.name, r.status, f"{r.placed}/{r.minimum}",
               where.common(placed)]
        out.append([*row, NONE, reason] if wide else [*row, reason])
        if not wide:
            continue
        for p in r.pods:
            namespace, name = split_name(p.name)
            node = p.node or NONE
            out.append([namespace or NONE, "Pod", name, "Placed" if p.node else "Pending",
                        NONE, where.node_path(p.node) if p.node else NONE, node, NONE])
    return out
