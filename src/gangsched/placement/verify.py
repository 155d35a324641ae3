"""An independent checker for placements (the contract of DESIGN.md section 2).

``verify(unit, state_before, assignments)`` recomputes everything from the gang tree, the
node labels and the state's arrays, and lists every rule the assignment breaks. It shares
no code with the engine's search, so it can judge the engine (and the exact solver).

Rules (the engine's contract):

- every assigned pod belongs to the unit and every node exists;
- a pod's node passes ``state.mask(podset.requirements)``, and a PodSet's or Group's
  ``max_pods_per_node`` holds, counting its pods already running there
  (``held_per_node``);
- per node and resource, the placed pods' requests fit in ``state_before.free``
  (a resource a pod does not request is not checked);
- a PodSet is satisfied when at least ``min_pods`` of its pods are placed; a Group when at
  least ``min_groups`` children are satisfied, at least ``min_pods`` subtree pods are
  placed and its required topology holds;
- every tree node with placed pods is satisfied (extras are all-or-nothing per child), and
  the root is satisfied;
- a required constraint on key K: all the subtree's pods in one domain of K; nodes lacking
  K cannot host them. A domain of a level of the chain is a path of label values from
  the widest level down to K (a rack named alike in two blocks is two racks; a node
  lacking a wider label is apart from those carrying it), of any other key one value
  (:func:`gangsched.cluster.topology.domain_id`). Every node is a host:
  ``kubernetes.io/hostname`` means one node (its hostname label when hostname is a
  level, else its name);
- an exclusive constraint (set S on key K): the owner's pods are in no domain of K that
  another owner of S holds, in ``state_before`` or in this placement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np

from gangsched.api.types import Node as ClusterNode
from gangsched.cluster.state import ClusterState
from gangsched.cluster.topology import domain_id, domain_of
from gangsched.gang import Group, PodSet, TreeNode, podsets, walk


def _beside(held: int) -> str:
    return f" beside {held} already running" if held else ""


def domain_value(state: ClusterState, node: ClusterNode, key: str) -> str | None:
    """The domain of ``node`` for a topology key (None: the node lacks the label)."""
    return domain_of(node, key, state.topology.keys)


def verify(
    unit: TreeNode, state_before: ClusterState, assignments: Mapping[str, str]
) -> list[str]:
    """Every rule ``assignments`` (pod key -> node name) breaks; empty means sound."""
    out: list[str] = []
    topo = state_before.topology
    index = topo.index
    owner: dict[str, PodSet] = {}
    for ps in podsets(unit):
        for p in ps.pods:
            owner[p] = ps

    # pods per (PodSet path, node index); unknown pods and nodes are reported and skipped
    per_set: dict[str, Counter[int]] = {ps.path: Counter() for ps in podsets(unit)}
    for pod, node_name in assignments.items():
        own = owner.get(pod)
        if own is None:
            out.append(f"unknown pod {pod!r} (not in unit {unit.path})")
            continue
        j = index.get(node_name)
        if j is None:
            out.append(f"pod {pod} on unknown node {node_name!r}")
            continue
        per_set[own.path][j] += 1

    # per-node caps of groups (a role's pods across its replicas)
    for g in walk(unit):
        if isinstance(g, Group) and g.max_pods_per_node is not None:
            on_node: dict[int, int] = {}
            for ps in podsets(g):
                for j, c in per_set[ps.path].items():
                    on_node[j] = on_node.get(j, 0) + c
            for j, c in sorted(on_node.items()):
                name = topo.nodes[j].name
                held = g.held_per_node.get(name, 0)
                if c + held > g.max_pods_per_node:
                    out.append(f"{g.path}: {c} pods on node {name}{_beside(held)}, above "
                               f"max_pods_per_node {g.max_pods_per_node}")

    # node filters and per-node caps
    n_nodes = state_before.n_nodes
    load = np.zeros((len(state_before.resources), n_nodes), dtype=np.int64)
    for ps in podsets(unit):
        counts = per_set[ps.path]
        if not counts:
            continue
        mask = state_before.mask(ps.requirements)
        for j, c in sorted(counts.items()):
            name = topo.nodes[j].name
            if not mask[j]:
                out.append(
                    f"{ps.path}: {c} pod(s) on node {name}, which is unschedulable or fails "
                    f"the set's selector/affinity/taints"
                )
            held = ps.held_per_node.get(name, 0)
            if ps.max_pods_per_node is not None and c + held > ps.max_pods_per_node:
                out.append(
                    f"{ps.path}: {c} pods on node {name}{_beside(held)}, above "
                    f"max_pods_per_node {ps.max_pods_per_node}"
                )
        for res, amount in sorted(ps.requests.items()):
            if amount <= 0:
                continue
            r = state_before.rindex.get(res)
            if r is None:
                out.append(
                    f"{ps.path}: requests {res}, which no node has, yet {sum(counts.values())} "
                    f"pod(s) were placed"
                )
                continue
            for j, c in counts.items():
                load[r, j] += amount * c

    # capacity
    used = load > 0
    over = used & (load > state_before.free)
    for r, j in zip(*np.nonzero(over), strict=True):
        out.append(
            f"node {topo.nodes[int(j)].name}: {state_before.resources[int(r)]} over capacity "
            f"(placed {int(load[r, j])}, free {int(state_before.free[r, j])})"
        )

    # satisfaction, all-or-nothing and topology, bottom-up
    def nodes_of(v: TreeNode) -> Counter[int]:
        acc: Counter[int] = Counter()
        for ps in podsets(v):
            acc.update(per_set[ps.path])
        return acc

    def visit(v: TreeNode, is_root: bool) -> tuple[bool, int]:
        """(satisfied, placed pods in subtree); reports broken rules of v's subtree."""
        problems: list[str] = []
        if isinstance(v, PodSet):
            placed = sum(per_set[v.path].values())
            if placed < v.min_pods:
                problems.append(f"{placed} of min_pods {v.min_pods} pods placed")
        else:
            kids = [visit(c, False) for c in v.children]
            placed = sum(p for _, p in kids)
            sat = sum(1 for s, _ in kids if s)
            if sat < v.min_groups:
                problems.append(f"{sat} of min_groups {v.min_groups} children satisfied")
            if placed < v.min_pods:
                problems.append(f"{placed} of min_pods {v.min_pods} pods placed")
        for con in [c for c in v.topology if c.mode == "required"] if placed else []:
            key = con.key
            domains: set[tuple[str | None, ...]] = set()
            lacking: list[str] = []
            for j in sorted(nodes_of(v)):
                nd = topo.nodes[j]
                got = domain_id(nd, key, topo.keys)
                if got is None:
                    lacking.append(nd.name)
                else:
                    domains.add(got)
            values = {str(d[-1]) for d in domains}
            if lacking:
                msg = f"pods on node(s) lacking label {key}: {', '.join(lacking[:5])}"
                out.append(f"{v.path}: required topology broken: {msg}")
                problems.append("required topology broken")
            if con.value is not None and values - {con.value}:
                out.append(f"{v.path}: required topology broken: pinned to {key}="
                           f"{con.value}, pods on {', '.join(sorted(values - {con.value}))}")
                problems.append("required topology broken")
            if len(domains) > 1:
                shown = ", ".join(sorted("/".join(x or "?" for x in d) for d in domains)[:5])
                out.append(
                    f"{v.path}: required topology broken: pods span {len(domains)} domains "
                    f"of {key} ({shown})"
                )
                problems.append("required topology broken")
        satisfied = not problems
        if not satisfied:
            what = "; ".join(dict.fromkeys(problems))
            if is_root:
                out.append(f"{v.path}: minimum not met (root not satisfied): {what}")
            elif placed:
                out.append(
                    f"{v.path}: has {placed} pod(s) placed but is not satisfied "
                    f"(all-or-nothing per child): {what}"
                )
        return satisfied, placed

    visit(unit, True)

    # exclusive domains: owners of one set never share a domain of its key
    taken: dict[tuple[str, str], list[tuple[str, set[str]]]] = {}
    for v in walk(unit):
        for con in v.topology:
            if con.exclusive is None:
                continue
            values = {val for j in nodes_of(v)
                      if (val := domain_value(state_before, topo.nodes[j], con.key)) is not None}
            if not values:
                continue
            others = state_before.held_by_others(con.exclusive, con.key, v.path) & values
            if others:
                out.append(f"{v.path}: exclusive {con.key} broken: {', '.join(sorted(others))} "
                           f"held by another group of {con.exclusive}")
            mine = taken.setdefault((con.exclusive, con.key), [])
            for other, theirs in mine:
                if values & theirs:
                    out.append(f"{v.path}: exclusive {con.key} broken: shares "
                               f"{', '.join(sorted(values & theirs))} with {other}")
            mine.append((v.path, values))
    return out


def tree_minimum(node: TreeNode) -> int:
    """Fewest pods that satisfy ``node`` ignoring capacity and topology (0 if impossible).

    Exact for the tree's structure: a child with placed pods must be satisfied, so a Group
    combines its children's achievable pod counts, not just their minimums.
    """
    counts = achievable(node)
    return min(counts) if counts else 0


def achievable(node: TreeNode) -> set[int]:
    """Every pod count with which ``node`` can be satisfied (capacity ignored)."""
    bits = _achievable_bits(node)
    return {i for i in range(bits.bit_length()) if bits >> i & 1}


def _achievable_bits(node: TreeNode) -> int:
    """:func:`achievable` as a bitset (bit t set: t pods can satisfy the node)."""
    if isinstance(node, PodSet):
        return ((1 << (node.size + 1)) - 1) & ~((1 << node.min_pods) - 1)
    assert isinstance(node, Group)
    need = node.min_groups
    # reach[k]: pod totals reachable with k satisfied children (k capped at need)
    reach = [0] * (need + 1)
    reach[0] = 1
    for child in node.children:
        opts = _achievable_bits(child)
        shifts = [o for o in range(opts.bit_length()) if opts >> o & 1]
        nxt = list(reach)  # the child left out: zero pods, not counted
        for k, totals in enumerate(reach):
            if not totals:
                continue
            k2 = min(k + 1, need)
            for o in shifts:
                nxt[k2] |= totals << o
        reach = nxt
    return reach[need] & ~((1 << node.min_pods) - 1)
