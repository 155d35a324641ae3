"""Gang-tree arithmetic over what is bound: satisfaction, residual trees, surplus pods.

``sets`` maps a PodSet path to its bound pods (pod key -> node name). Everything here is
a pure function of (tree, sets); nothing touches the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from gangsched.api.types import NodeRequirements, NodeSelectorTerm, Requirement
from gangsched.cluster.topology import Topology
from gangsched.gang import Constraint, Group, PodSet, TreeNode, podsets, walk

Sets = Mapping[str, Mapping[str, str]]
# (node name, label key) -> the (key, value) pins naming that node's domain of the key,
# widest first, None for a wider label the node lacks (scheduler.capacity.pins_of)
PinsOf = Callable[[str, str], tuple[tuple[str, str | None], ...]]

_EMPTY: Mapping[str, str] = {}


def unit_name(workload: str, root_path: str, unit: TreeNode, alone: bool) -> str:
    """``<workload>`` for a workload that is one unit, else ``<workload>/<path tail>``
    (the unit's path below the workload root, or its name)."""
    if alone:
        return workload
    prefix = root_path.rstrip("/") + "/"
    tail = unit.path[len(prefix):] if unit.path.startswith(prefix) else unit.name
    return f"{workload}/{tail or unit.name}"


def disruption(node: TreeNode) -> str:
    return node.disruption if isinstance(node, Group) else "single"


def pod_keys(node: TreeNode) -> Iterator[str]:
    for ps in podsets(node):
        yield from ps.pods


def bound_in(node: TreeNode, sets: Sets) -> list[str]:
    """Bound pods of the node's subtree."""
    out: list[str] = []
    for ps in podsets(node):
        out.extend(sets.get(ps.path, _EMPTY))
    return out


def _eval(node: TreeNode, sets: Sets) -> tuple[int, bool]:
    """(pods bound in the subtree, gang minimum satisfied)."""
    if isinstance(node, PodSet):
        n = len(sets.get(node.path, _EMPTY))
        return n, n >= node.min_pods
    placed = sat = 0
    for c in node.children:
        p, ok = _eval(c, sets)
        placed += p
        sat += ok
    return placed, sat >= node.min_groups and placed >= node.min_pods


def satisfied(node: TreeNode, sets: Sets) -> bool:
    return _eval(node, sets)[1]


def broken_all_groups(node: TreeNode, sets: Sets) -> list[Group]:
    """The outermost ``all`` groups that hold bound pods but no longer meet their
    minimum: what is left of them is useless and goes (KEP-5710 disruption mode)."""
    out: list[Group] = []
    _broken(node, sets, out)
    return out


def _broken(n: TreeNode, sets: Sets, out: list[Group]) -> None:
    # a module function: a closure calling itself is a reference cycle on every call
    if not isinstance(n, Group):
        return
    if n.disruption == "all":
        placed, ok = _eval(n, sets)
        if placed and not ok:
            out.append(n)
            return
    for c in n.children:
        _broken(c, sets, out)


# -- residual trees ---------------------------------------------------------------------


@dataclass
class _Res:
    tree: TreeNode | None  # what is left to place, None when nothing
    placed: int
    ok: bool
    where: str | None  # a node holding one of the subtree's bound pods


def residual(node: TreeNode, sets: Sets, pins_of: PinsOf) -> TreeNode | None:
    """What is left to place of a running unit, with its pods already bound removed.

    A subtree holding bound pods has its required constraint pinned to the domain those
    pods are in; its minimum is what it now lacks (0 when satisfied), so a satisfied unit
    yields a tree of extras and a unit below a minimum a repair tree. A child with nothing
    bound keeps its own minimum (an extra child is all-or-nothing). A group short of
    children is repaired through its broken (partly bound) children when there are enough
    of them; its unplaced children come back later as extras. Below a group short of
    pods (its ``min_pods``), every child that has pods left to place stays: any of them may
    supply the pods the group lacks.
    """
    return _residual(node, sets, pins_of, False).tree


def _pin(topology: tuple[Constraint, ...], where: str | None,
         pins_of: PinsOf) -> tuple[tuple[Constraint, ...], tuple[str, ...]]:
    """Every required constraint of ``topology`` pinned to the domain of node ``where``
    (the wider levels' values first, where the key's value names several domains: the
    engine applies pins in order; also for a constraint pinned by value already, whose
    value may name several domains too); and the wider label keys that domain lies below
    none of (its pods must go to nodes lacking them: :func:`_lacking`)."""
    if where is None:
        return topology, ()
    named = {x.key for x in topology if x.mode == "required"}  # a preferred key is no pin
    out: list[Constraint] = []
    absent: list[str] = []
    for c in topology:
        pins = pins_of(where, c.key) if c.mode == "required" else ()
        if pins:
            for k, v in pins[:-1]:
                if v is None:
                    absent.append(k)
                elif k not in named:
                    out.append(Constraint(k, "required", v))
                    named.add(k)
            c = replace(c, value=pins[-1][1])
        out.append(c)
    return tuple(out), tuple(dict.fromkeys(absent))


def _lacking(node: TreeNode, keys: tuple[str, ...]) -> TreeNode:
    """``node`` with every pod set below it also asking for nodes without labels ``keys``
    (a node-affinity DoesNotExist in each term): a pinned domain below no domain of a
    wider level holds just such nodes, apart from the domains of its name below one."""
    if not keys:
        return node
    if isinstance(node, Group):
        return replace(node, children=[_lacking(c, keys) for c in node.children])
    need = tuple(Requirement(k, "DoesNotExist") for k in keys)
    req = node.requirements
    terms = tuple(replace(t, match_expressions=(*t.match_expressions, *need))
                  for t in req.affinity) or (NodeSelectorTerm(need),)
    return replace(node, requirements=NodeRequirements(req.node_selector, terms,
                                                       req.tolerations))


def _held(node: TreeNode, sets: Sets) -> dict[str, int]:
    """Bound pods of a capped set or group, per node: they count against its cap (with
    those the tree already says are running there)."""
    if node.max_pods_per_node is None:
        return {}
    held: dict[str, int] = dict(node.held_per_node)
    for ps in podsets(node):
        for node_name in sets.get(ps.path, _EMPTY).values():
            held[node_name] = held.get(node_name, 0) + 1
    return held


def _residual(node: TreeNode, sets: Sets, pins_of: PinsOf, need_pods: bool) -> _Res:
    # need_pods: a group above is short of pods, so no child with pods left may go
    if isinstance(node, PodSet):
        got = sets.get(node.path, _EMPTY)
        placed = len(got)
        where = next(iter(got.values()), None)
        rest = tuple(p for p in node.pods if p not in got) if placed else node.pods
        tree: TreeNode | None = None
        if rest:
            topology, absent = _pin(node.topology, where, pins_of)
            tree = _lacking(replace(node, pods=rest, min_pods=max(0, node.min_pods - placed),
                                    topology=topology, held_per_node=_held(node, sets)),
                            absent)
        return _Res(tree, placed, placed >= node.min_pods, where)
    if node.min_pods and not need_pods:
        need_pods = len(bound_in(node, sets)) < node.min_pods
    kids = [_residual(c, sets, pins_of, need_pods) for c in node.children]
    placed = sum(k.placed for k in kids)
    sat = sum(1 for k in kids if k.ok)
    where = next((k.where for k in kids if k.where is not None), None)
    ok = sat >= node.min_groups and placed >= node.min_pods
    short = max(0, node.min_groups - sat)
    pods_short = max(0, node.min_pods - placed)
    if short:
        broken = [k for k in kids if not k.ok and k.placed and k.tree is not None]
        unsat = [k for k in kids if not k.ok and k.tree is not None]
        chosen = broken if len(broken) >= short and not need_pods else unsat
        if need_pods:  # satisfied children's extras may supply pods too
            chosen = [k for k in kids if k.tree is not None]
            short += sum(1 for k in chosen if k.ok)
    else:
        chosen = [k for k in kids if k.tree is not None]
    children = [k.tree for k in chosen if k.tree is not None]
    if not children:
        return _Res(None, placed, ok, where)
    topology, absent = _pin(node.topology, where, pins_of)
    tree = _lacking(replace(node, children=children, min_groups=min(short, len(children)),
                            min_pods=pods_short, topology=topology,
                            held_per_node=_held(node, sets)), absent)
    return _Res(tree, placed, ok, where)


# -- surplus (what preemption may take from a "single" unit) -----------------------------


def surplus(node: TreeNode, sets: Sets, *, evict: bool = True) -> list[list[str]]:
    """Bound pods that can go while the node stays satisfied, as chunks that go whole
    (one pod, or a whole child): broken children first, then whole extra children
    (highest index first), then extras inside the kept children (highest pod index
    first). With ``evict`` (taking running pods away), ``all`` groups give up nothing:
    they only go whole; without it (pods not placed yet) they are like any group."""
    if isinstance(node, PodSet):
        got = sets.get(node.path, _EMPTY)
        spare = len(got) - node.min_pods
        if spare <= 0:
            return []
        out: list[list[str]] = []
        for p in reversed(node.pods):
            if p in got:
                out.append([p])
                if len(out) == spare:
                    break
        return out
    if evict and node.disruption == "all":
        return []
    evals = [_eval(c, sets) for c in node.children]
    placed = sum(p for p, _ in evals)
    budget = placed - node.min_pods
    sat = sum(1 for _, ok in evals if ok)
    spare_children = sat - node.min_groups
    if spare_children < 0 or budget < 0:
        return []
    chunks: list[list[str]] = []
    kept: list[TreeNode] = []

    def take(pods: list[str]) -> bool:
        nonlocal budget
        if not pods or len(pods) > budget:
            return False
        chunks.append(pods)
        budget -= len(pods)
        return True

    for c, (n, ok) in zip(node.children, evals, strict=True):
        if n and not ok:
            take(bound_in(c, sets))
    for c, (n, ok) in reversed(list(zip(node.children, evals, strict=True))):
        if not (n and ok):
            continue
        if spare_children > 0 and take(bound_in(c, sets)):
            spare_children -= 1
        else:
            kept.append(c)
    for c in reversed(kept):  # in tree order
        for chunk in surplus(c, sets, evict=evict):
            take(chunk)
    return chunks


# -- demand and constraints -------------------------------------------------------------


def min_demand(node: TreeNode) -> dict[str, int]:
    """A lower bound on the resources the node's minimum needs, per resource."""
    if isinstance(node, PodSet):
        return {r: v * node.min_pods for r, v in node.requests.items() if v > 0 and node.min_pods}
    kids = [min_demand(c) for c in node.children]
    out: dict[str, int] = {}
    for r in {r for k in kids for r in k}:
        vals = sorted(k.get(r, 0) for k in kids)
        total = sum(vals[: node.min_groups])
        if total:
            out[r] = total
    return out


def required_constraints(node: TreeNode) -> Iterator[tuple[TreeNode, Constraint]]:
    for n in walk(node):
        for c in n.topology:
            if c.mode == "required":
                yield n, c
                break


def widest_required(node: TreeNode, topology: Topology) -> str | None:
    """The label key of the widest required constraint in the tree that the topology
    knows (None when there is none): a unit lies inside one domain of it."""
    best: str | None = None
    rank: int | None = None
    for _, c in required_constraints(node):
        r = topology.rank(c.key)
        if r is not None and (rank is None or r < rank):
            best, rank = c.key, r
    return best
