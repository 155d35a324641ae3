"""Explanations: why a unit does not fit, in words a user can act on (DESIGN.md 2.7).

While an attempt searches, :class:`Notes` records for each node of the tree that failed
what it needed and the best any domain offered: the tier and domain that came closest
(exactly how many of the scarcest kind of pod, or of whole replicas, it holds now), the
most children a group held together, a pin outside the parent's domain, a crossing key no
node carries, the domains other owners of its exclusive set hold (and which owner holds
each). When the decision is a rejection, :func:`reasons` turns the notes into clauses:
the root's note, the note of the group that blocks it (found by placing children one by
one in search order, :func:`blocking_chain`), and kube-scheduler's account of the nodes
for the blocking kind of pod (:func:`filter_note`, from ``placement/filters.py``).

Held domains are neither room nor missing labels: they are counted apart (``Seen.held``),
a domain's count is never negative, and when every domain of an exclusive key is held the
note says so, naming the holders, with no capacity account beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gangsched.cluster.state import BIG
from gangsched.cluster.topology import Level
from gangsched.gang import Constraint, Group, PodSet, TreeNode, podsets
from gangsched.placement.describe import describe_requests, level_noun, plural
from gangsched.placement.engine.domains import Crossing, Seen
from gangsched.placement.engine.facts import Demand, Facts
from gangsched.placement.engine.values import Candidate
from gangsched.placement.filters import node_summary

if TYPE_CHECKING:
    from gangsched.placement.engine.search import Search


class Notes:
    """What failed in one attempt, and the best it could do, by tree path."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.state = facts.state
        self.topo = facts.topo
        self.text: dict[str, str] = {}  # path -> note
        self.most: dict[str, int] = {}  # group path -> most children placed together
        self.bottleneck: dict[str, Demand] = {}  # path -> scarcest demand, no domain held it
        # path -> exclusive constraint -> domain values other owners of its set hold
        self.owners: dict[str, dict[Constraint, set[str]]] = {}
        # path -> how many domains its note says other owners hold, every one in its scope
        self.held_out: dict[str, int] = {}

    def __contains__(self, path: str) -> bool:
        return path in self.text

    def _all(self) -> tuple[dict[Any, Any], ...]:
        return self.text, self.most, self.bottleneck, self.owners, self.held_out

    def saved(self) -> tuple[dict[Any, Any], ...]:
        """A copy of every note, to :meth:`restore` when a wider search replaces them."""
        return tuple(dict(x) for x in self._all())

    def restore(self, saved: tuple[dict[Any, Any], ...]) -> None:
        for mine, old in zip(self._all(), saved, strict=True):
            mine.clear()
            mine.update(old)

    # -- recorded by the search ---------------------------------------------------------

    def pinned_outside(self, node: TreeNode, con: Constraint) -> None:
        self.text[node.path] = (
            f"{node.name}: pinned to {level_noun(con.key)} {con.value}, "
            "which is not inside its parent's domain"
        )

    def owned(self, node: TreeNode, con: Constraint, held: set[str]) -> None:
        """Domains that could hold the node were left out: other owners of its exclusive
        set hold them."""
        self.owners.setdefault(node.path, {})[con] = held

    def holder(self, node: TreeNode, con: Constraint, value: str) -> str | None:
        """The owner (tree path) of ``con``'s set, other than ``node``, holding the domain
        ``value`` of its key; None when no other owner holds it."""
        assert con.exclusive is not None
        owners = self.state.claims.get((con.exclusive, con.key), {}).get(value, {})
        return min((o for o in owners if o != node.path), default=None)

    def holders(self, tier: Seen) -> list[str | None]:
        """Per domain of the tier: the other owner holding it (or the wider domain of an
        exclusive key it lies in), None when it is free of them."""
        n = 0 if tier.valid is None else len(tier.valid)
        if tier.level is None or tier.held is None or not tier.held.any():
            return [None] * n
        starts = _clipped_starts(tier.level, tier.lo, tier.hi)[:n]
        out: list[str | None] = [None] * n
        for con, held in self.owners.get(tier.node.path, {}).items():
            lv = self.topo.level_for(con.key)
            if lv is None:
                continue
            values = self.facts.level_values(lv)[lv.node_domain[starts]]
            for i in np.flatnonzero(tier.held):
                if out[i] is None and values[i] in held:
                    out[i] = self.holder(tier.node, con, str(values[i]))
        return out

    def group(self, g: Group, c: Candidate, most: int) -> None:
        """No ``min_groups`` children fit together in c; keep the domain that came closest,
        a domain of a level the group requires (or its scope) before any of a level tried
        only for locality or preference."""
        rank = most + (_REQUIRED if _mode(g, c.key) == "required" else 0)
        if rank >= self.most.get(g.path, -1):
            self.most[g.path] = rank
            self.text[g.path] = self.describe_group(g, c, most)

    def group_pods(self, g: Group, c: Candidate, placed: int) -> None:
        """The group's children fit, but not ``min_pods`` pods of its subtree."""
        mode = _mode(g, c.key)
        if mode == "required":
            self.most[g.path] = max(self.most.get(g.path, -1), _REQUIRED - 1)
        elif self.most.get(g.path, -1) >= _REQUIRED - 1:
            return  # a note of a required domain says more
        where = "" if c.key is None else f"{_inside(mode, level_noun(c.key))} ({c.label})"
        self.text[g.path] = (
            f"{g.name}: needs {plural(g.min_pods, 'pod')} placed{where}; only {placed} fit"
        )

    def failure(self, node: TreeNode, seen: list[Seen]) -> None:
        """Why no domain passed: the tier and domain that came closest (the most of the
        scarcest kind of pod) and exactly how many of the blocking pods or replicas it
        holds now."""
        if isinstance(node, Group) and node.path in self.text:
            if node.path in self.held_out:  # all held in a wider scope says more
                self._all_held(node, seen, wider=True)
            return  # the group's own search left a more precise note
        if self._failure(node, seen):
            return
        lo, hi, sel = self._scope(seen)
        for con, held in self.owners.get(node.path, {}).items():
            mine = self._held_in(node, con, self._scope_values(con.key, lo, hi, sel), held)
            self.text[node.path] += _held_clause(mine, con.key)

    def _failure(self, node: TreeNode, seen: list[Seen]) -> bool:
        """Write the node's note; True when it says every domain is held by other owners
        (nothing more to add)."""
        facts = self.facts
        dems = facts.demand(node) or facts.desired(node)
        if not dems:
            self.text[node.path] = f"{node.name}: does not fit"
            return False
        best: tuple[float, int, int, str | None, Level | None] | None = None
        asked = [t for t in seen
                 if _mode(node, t.level.key if t.level is not None else None) == "required"]
        for tier in asked or seen:  # narrowest first; a wider tier must come strictly closer
            held = [self.domain_counts(tier, d) for d in dems]
            if not len(held[0]) or held[0].max() < 0:  # no domain to count: none or held
                continue
            cover = np.min([h / d.count for h, d in zip(held, dems, strict=True)], axis=0)
            cover = np.where(held[0] < 0, -1.0, cover)
            j = int(np.argmax(cover))
            worst = min(range(len(dems)), key=lambda i: (held[i][j] / dems[i].count, i))
            where = (self.topo.domain_path(tier.level, tier.d0 + j)
                     if tier.level is not None else None)
            if best is None or cover[j] > best[0]:
                best = (float(cover[j]), worst, int(held[worst][j]), where, tier.level)
        if best is None:
            return self._all_held(node, seen)
        _, worst, have, where, level = best
        self.bottleneck[node.path] = dems[worst]
        inside = _inside(_mode(node, level.key), level_noun(level.key)) if level else ""
        per = facts.replica_demand(node)
        unit = "replica" if per is not None else "pod"
        need = self.need_text(node) if len(dems) == 1 else self.demand_text(node, dems, worst)
        if level is not None and where is not None:
            got = f"the best {level_noun(level.key)} ({where}) holds {have}"
        else:
            got = f"room for {plural(have, unit)}"
        self.text[node.path] = f"{node.name}: needs {need}{inside}; {got}"
        return False

    def _all_held(self, node: TreeNode, seen: list[Seen], wider: bool = False) -> bool:
        """No domain to count: when other owners hold every domain of one of the node's
        exclusive keys in its scope, say so (True); else "no domain" (``wider``: only
        replace a note that says so of fewer domains)."""
        lo, hi, sel = self._scope(seen)
        whole = lo == 0 and hi == self.state.n_nodes and sel is None
        for con, held in self.owners.get(node.path, {}).items():
            values = self._scope_values(con.key, lo, hi, sel)
            if self._held_everywhere(node, con, values, held, whole):
                return True
        if not wider:
            self.text[node.path] = f"{node.name}: needs {self.need_text(node)}; " + (
                self._unlabelled(node, seen) or "no domain")
        return False

    def _unlabelled(self, node: TreeNode, seen: list[Seen]) -> str | None:
        """When no node of any tier seen carries every label the node requires, say so."""
        if not seen or any(t.valid is None or t.valid.any() for t in seen):
            return None
        keys = [lv.key for lv in self.facts.required_levels(node)]
        if len(keys) == 1:
            return f"no node here carries label {keys[0]}"
        return f"no node here carries all of the labels it requires ({', '.join(keys)})"

    def _scope(self, seen: list[Seen]) -> tuple[int, int, np.ndarray | None]:
        """The node's scope as its first tier saw it (none seen: the whole cluster)."""
        return (seen[0].lo, seen[0].hi, seen[0].sel) if seen else (0, self.state.n_nodes, None)

    def _held_everywhere(self, node: TreeNode, con: Constraint, values: list[str],
                         held: set[str], whole: bool) -> bool:
        """When other owners hold all ``values`` (the domains of ``con``'s key in the
        node's scope, ``whole`` when that is the cluster), the node's note says so,
        naming them, unless it already says so of more domains; True then."""
        mine = self._held_in(node, con, values, held)
        if not values or len(mine) < len(values):
            return False
        if len(values) <= self.held_out.get(node.path, 0):
            return True
        noun = level_noun(con.key)
        every = f"every {noun}" + ("" if whole else " of its parent's domain")
        need = self.need_text(node)
        self.text[node.path] = (
            f"{node.name}: needs {need} inside one {noun}; {every} is held exclusively by "
            f"other groups of its set: {plural(len(values), noun)}, {len(mine)} held "
            f"({_listed(mine)})")
        self.held_out[node.path] = len(values)
        return True

    def _held_in(self, node: TreeNode, con: Constraint, values: list[str],
                 held: set[str]) -> list[str]:
        """``value by owner`` for each of ``values`` another owner holds."""
        out = []
        for v in values:
            who = self.holder(node, con, v) if v in held else None
            if who is not None:
                out.append(f"{v} by {who}")
        return out

    def _scope_values(self, key: str, lo: int, hi: int, sel: np.ndarray | None) -> list[str]:
        """The label values of ``key``'s domains with a node in the scope, in order."""
        if hi <= lo:
            return []
        lv = self.topo.level_for(key)
        if lv is not None:
            d0, d1 = int(lv.node_domain[lo]), int(lv.node_domain[hi - 1]) + 1
            return [lv.values[d] for d in range(d0, d1) if lv.valid[d] and (
                sel is None or bool(sel[max(int(lv.starts[d]), lo):min(int(lv.ends[d]), hi)]
                                    .any()))]
        xl = self.topo.cross(key)
        codes = xl.node_domain[lo:hi]
        ok = codes >= 0 if sel is None else (codes >= 0) & sel[lo:hi]
        return [xl.values[d] for d in np.unique(codes[ok])]

    def cross(self, node: TreeNode, con: Constraint, x: Crossing) -> None:
        """Why no domain of a key outside the chain holds the node's minimum."""
        noun = level_noun(con.key)
        need = self.need_text(node)
        xl = x.level
        if not x.ok.any():
            if not len(xl):
                why = f"no node has the label {con.key}"
            elif con.value is not None:
                why = f"no node in its scope has {con.key}={con.value}"
            else:
                why = f"no node in its scope has the label {con.key}"
            self.text[node.path] = f"{node.name}: needs {need} inside one {noun}; {why}"
            return
        if x.main_sum is None:
            self.text[node.path] = f"{node.name}: needs {need} inside one {noun}"
            return
        present = np.bincount(x.codes[x.ok], minlength=len(xl)) > 0
        held = self.owners.get(node.path, {}).get(con, set())
        values = [xl.values[d] for d in np.flatnonzero(present)]
        if held:
            whole = len(x.codes) == self.state.n_nodes and bool(
                (x.ok == (x.codes >= 0)).all())
            if self._held_everywhere(node, con, values, held, whole):
                return
            present &= ~np.isin(np.asarray(xl.values, dtype=object), list(held))
        dems = self.facts.demand(node) or self.facts.desired(node)
        counts = [self.cross_counts(node, d, x) for d in dems]
        cover = np.min([c / d.count for c, d in zip(counts, dems, strict=True)], axis=0)
        j = int(np.argmax(np.where(present, cover, -1.0)))
        worst = min(range(len(dems)), key=lambda i: (counts[i][j] / dems[i].count, i))
        if len(dems) > 1:
            need = self.demand_text(node, dems, worst)
        self.text[node.path] = (f"{node.name}: needs {need} inside one {noun}; the best "
                                f"{noun} ({xl.values[j]}) holds "
                                f"{int(min(counts[worst][j], BIG))}")
        self.text[node.path] += _held_clause(self._held_in(node, con, values, held), con.key)

    # -- counting what fits -------------------------------------------------------------

    def domain_counts(self, tier: Seen, dem: Demand) -> np.ndarray:
        """How many of ``dem``'s pods (or, for a group of identical replicas, whole
        replicas) each valid domain of the tier can hold now; one entry for a tier
        without a level. Per-node caps and a replica's own narrower required level are
        taken into account, so the number is what really fits."""
        node, lo, hi, sel = tier.node, tier.lo, tier.hi, tier.sel
        f = self._capped(node, dem, lo, hi)
        if sel is not None:
            f = f * sel[lo:hi]
        per = self.facts.replica_demand(node) if isinstance(node, Group) else None
        outer = tier.level
        if per is not None and per.shape == dem.shape:
            assert isinstance(node, Group)
            inner = self._replica_level(node)
            if inner is not None and (outer is None or (self.topo.rank(inner.key) or 0)
                                      > (self.topo.rank(outer.key) or 0)):
                f = _per_domain(f, inner, lo, hi) // per.count  # replicas per inner
                starts = _clipped_starts(inner, lo, hi)
                if outer is None:
                    return np.array([int(f[inner.valid[inner.node_domain[starts]]].sum())])
                ids = outer.node_domain[starts] - int(outer.node_domain[lo])
                ok = inner.valid[inner.node_domain[starts]]
                assert tier.valid is not None
                sums = np.bincount(ids[ok], weights=f[ok], minlength=len(tier.valid))
                return np.where(_usable(tier), sums, -1).astype(np.int64)
            if outer is None:
                return np.array([int(f.sum()) // per.count])
            sums = _per_domain(f, outer, lo, hi) // per.count
        elif outer is None:
            return np.array([min(int(f.sum()), int(BIG))])
        else:
            sums = _per_domain(f, outer, lo, hi)
        return np.where(_usable(tier), np.minimum(sums, BIG), -1)

    def cross_counts(self, node: TreeNode, dem: Demand, x: Crossing) -> np.ndarray:
        """How many of ``dem``'s pods each domain of a crossing key can hold now, with
        the same per-node caps as :meth:`domain_counts`; in replicas for a group of
        replicas (whole replicas, inside the narrower level each one requires)."""
        lo, hi = x.lo, x.lo + len(x.codes)
        f = self._capped(node, dem, lo, hi)
        n = len(x.level)
        ok, codes = x.ok, x.codes
        per = self.facts.replica_demand(node) if isinstance(node, Group) else None
        if per is None or per.shape != dem.shape:
            return np.bincount(codes[ok], weights=f[ok], minlength=n)
        assert isinstance(node, Group)
        inner = self._replica_level(node)
        if inner is None:
            return np.bincount(codes[ok], weights=f[ok], minlength=n) // per.count
        # replicas per (inner domain, crossing domain) pair: an inner domain may straddle
        inner_of = inner.node_domain[lo:hi]
        ok = ok & inner.valid[inner_of]
        pair = inner_of[ok].astype(np.int64) * n + codes[ok]
        keys, where = np.unique(pair, return_inverse=True)
        replicas = np.bincount(where, weights=f[ok]) // per.count
        return np.bincount(keys % n, weights=replicas, minlength=n)

    def _capped(self, node: TreeNode, dem: Demand, lo: int, hi: int) -> np.ndarray:
        """Pods of ``dem`` each node of [lo, hi) takes now, under every per-node cap."""
        f = self.state.capacity(dem.shape, dem.req)[lo:hi]
        for room in self._caps(node, dem):
            f = np.minimum(f, room[lo:hi])
        return f

    def _replica_level(self, node: Group) -> Level | None:
        """The level each replica of a group of replicas requires, if any."""
        key = self.facts.required(node.children[0])
        return self.topo.level_for(key) if key is not None else None

    def _caps(self, node: TreeNode, dem: Demand) -> list[np.ndarray]:
        """Per node, the room left by each per-node cap every pod below ``node`` is
        under (its own, and those of the groups around all of them), the pods already
        running against it counted; and when every set of ``dem``'s pods has a cap of its
        own, the room of those caps together."""
        facts = self.facts

        def room(g: TreeNode) -> np.ndarray:
            assert g.max_pods_per_node is not None
            return np.maximum(g.max_pods_per_node - facts.held(g), 0)

        out = [room(node)] if node.max_pods_per_node is not None else []
        mine = [ps for ps in podsets(node)
                if ps is not node and (facts.shape(ps), ps.requirements) == (dem.shape, dem.req)]
        if mine and all(ps.max_pods_per_node is not None for ps in mine):
            out.append(sum((room(ps) for ps in mine[1:]), room(mine[0])))
        sets = [ps.path for ps in podsets(node)]
        if sets:
            around = [g for _, _, g in facts.group_caps.get(sets[0], ()) if g is not node]
            for path in sets[1:]:
                theirs = {id(g) for _, _, g in facts.group_caps.get(path, ())}
                around = [g for g in around if id(g) in theirs]
            out += [room(g) for g in around if g.max_pods_per_node is not None]
        return out

    # -- words --------------------------------------------------------------------------

    def demand_text(self, node: TreeNode, dems: list[Demand], worst: int) -> str:
        """The scarcest kind of pod the minimum needs, and how many others beside."""
        text = self.pods_text(node, dems[worst])
        others = sum(x.count for i, x in enumerate(dems) if i != worst)
        return f"{text} beside {plural(others, 'other pod')}" if others else text

    def pods_text(self, node: TreeNode, d: Demand) -> str:
        """``5 pods x 8 nvidia.com/gpu, 1 cpu (workers)``: the set is named when one set
        below the node has pods of this kind."""
        shape = self.facts.shape
        sets = [ps for ps in podsets(node)
                if ps is not node and (shape(ps), ps.requirements) == (d.shape, d.req)]
        who = f" ({sets[0].name})" if len({ps.name for ps in sets}) == 1 else ""
        reqs = describe_requests(self.facts.shape_requests(d.shape, d.req))
        return f"{plural(d.count, 'pod')} x {reqs}{who}"

    def need_text(self, node: TreeNode) -> str:
        """What the node's minimum needs, e.g. ``2 replicas of 4 pods x 8 nvidia.com/gpu``."""
        per = self.facts.replica_demand(node)
        if isinstance(node, PodSet):
            return f"{plural(node.min_pods, 'pod')} x {describe_requests(node.requests)}"
        if per is not None:
            reqs = describe_requests(self.facts.shape_requests(per.shape, per.req))
            return (f"{plural(node.min_groups, 'replica')} of {plural(per.count, 'pod')} "
                    f"x {reqs}")
        return "; ".join(self.pods_text(node, d) for d in self.facts.demand(node)) or (
            "its minimum")

    def describe_group(self, g: Group, c: Candidate, got: int) -> str:
        """``decode: needs 2 children of 4 pods inside one rack; the best rack (r3) held
        1 of them``: ``got`` children were satisfied together at most."""
        per = self.facts.replica_demand(g)
        if per is not None:
            reqs = describe_requests(self.facts.shape_requests(per.shape, per.req))
            noun = "replica" if g.min_groups == 1 else "replicas"
            each = f" of {plural(per.count, 'pod')} x {reqs}"
        else:
            noun = "child" if g.min_groups == 1 else "children"
            sizes = sorted({ch.size for ch in g.children})
            each = f" of {plural(sizes[0], 'pod')}" if len(sizes) == 1 else ""
        if c.key is not None:
            best = f"the best {level_noun(c.key)} ({c.label}) held {got} of them together"
        else:
            best = f"at most {got} of them fit together"
        inside = _inside(_mode(g, c.key), level_noun(c.key)) if c.key is not None else ""
        return f"{g.name}: needs {g.min_groups} {noun}{each}{inside}; {best}"


class QuietNotes(Notes):
    """Notes without the numbers: which nodes failed, each "does not fit" (for callers
    that only need the verdict, ``Options.explain=False``)."""

    def _quiet(self, node: TreeNode) -> None:
        self.text.setdefault(node.path, f"{node.name}: does not fit")

    def failure(self, node: TreeNode, seen: list[Seen]) -> None:
        self._quiet(node)

    def group(self, g: Group, c: Candidate, most: int) -> None:
        self._quiet(g)

    def group_pods(self, g: Group, c: Candidate, placed: int) -> None:
        self._quiet(g)

    def cross(self, node: TreeNode, con: Constraint, x: Crossing) -> None:
        self._quiet(node)


_REQUIRED = 1 << 40  # Notes.most: added for a note of a domain the group requires


def _mode(node: TreeNode, key: str | None) -> str:
    """How the node names a level: "required" (or None: its parent's scope),
    "preferred", or "locality" (a level tried first only for locality, Options.narrow, or
    on the way from a preferred level to a required one)."""
    if key is None:
        return "required"
    modes = {c.mode for c in node.topology if c.key == key}
    return "required" if "required" in modes else "preferred" if modes else "locality"


def _inside(mode: str, noun: str) -> str:
    """`` inside one rack`` for a level the node requires; a level it does not require
    is not called a need."""
    if mode == "required":
        return f" inside one {noun}"
    if mode == "preferred":
        return f" (preferably inside one {noun}, not required)"
    return f" (tried inside one {noun} first, for locality; not required)"


def _usable(tier: Seen) -> np.ndarray:
    """Domains of the tier whose room counts: labelled, and held by no other owner."""
    assert tier.valid is not None
    return tier.valid if tier.held is None else tier.valid & ~tier.held


def _held_clause(mine: list[str], key: str) -> str:
    """``; N <domains> held exclusively by other groups of its set (...)``, or "" when
    ``mine`` (the held domains, each with its holder) is empty."""
    if not mine:
        return ""
    return (f"; {plural(len(mine), level_noun(key))} held exclusively by other groups of its "
            f"set ({_listed(mine)})")


def _listed(items: list[str], most: int = 5) -> str:
    return ", ".join(items[:most]) + (f", and {len(items) - most} more"
                                      if len(items) > most else "")


def _clipped_starts(level: Level, lo: int, hi: int) -> np.ndarray:
    """First node index of each domain of ``level`` inside [lo, hi)."""
    d0, d1 = int(level.node_domain[lo]), int(level.node_domain[hi - 1]) + 1
    return np.maximum(level.starts[d0:d1], lo)


def _per_domain(f: np.ndarray, level: Level, lo: int, hi: int) -> np.ndarray:
    """Per-node values of [lo, hi) summed per domain of ``level``."""
    return np.add.reduceat(f, _clipped_starts(level, lo, hi) - lo)


# -- the reasons of a rejection ---------------------------------------------------------


def reasons(search: Search, root: TreeNode) -> tuple[str, ...]:
    """Why the unit was rejected, one clause per blocking group.

    When no domain could even hold the root's minimum, the root's own note says how
    close the best one came (the scarcest kind of pod and exactly how many fit).
    Otherwise descend to the group that cannot be placed: first a child that does not
    fit even alone; else, placing children one by one in search order, the first that
    no longer fits beside its earlier siblings (cheap dry runs, no backtracking). Then
    kube-scheduler's account of the nodes for the blocking kind of pod."""
    notes = search.notes
    search.budget.backtrack = 0
    root_note = notes.text.get(root.path)
    if root_note is not None and root.path in notes.bottleneck and (
            search.facts.replica_demand(root) is not None):  # identical replicas: said it all
        return tuple(p for p in (root_note, filter_note(notes, root)) if p)
    chain = blocking_chain(search, root)
    blamed = next((notes.text[c.path] for c in chain if c.path in notes.text), None)
    if blamed and isinstance(root, Group) and len(root.children) == 1 and not root.topology:
        root_note = None  # an only child's note says what the root's would, precisely
    parts = tuple(p for p in (root_note, blamed, filter_note(notes, chain[-1] if chain else root))
                  if p)
    return parts or (f"{root.name}: does not fit",)


def blocking_chain(search: Search, root: TreeNode) -> list[TreeNode]:
    """The groups below ``root`` that block it, outermost first."""
    txn, order_of = search.txn, search.facts.placement_order
    start = txn.mark()
    chain: list[TreeNode] = []
    node = root
    while isinstance(node, Group) and node.path not in search.notes.held_out:
        # (an owner kept out of held domains: its own children fit nowhere else either)
        order = [c for _, c in sorted(
            (order_of(c, i), c) for i, c in enumerate(node.children))]
        culprit = next((c for c in order if not fits_alone(search, c)), None)
        if culprit is None:
            for child in order:  # placed one by one, each beside the earlier ones
                if search.first(child) is None:
                    culprit = child
                    break
        if culprit is None:
            break
        chain.append(culprit)
        node = culprit
    txn.rollback_to(start)
    return chain


def fits_alone(search: Search, node: TreeNode) -> bool:
    m = search.txn.mark()
    fits = search.first(node) is not None
    search.txn.rollback_to(m)
    return fits


def filter_note(notes: Notes, node: TreeNode) -> str | None:
    """kube-scheduler's account of the nodes for one pod of the blocking group's most
    demanding set, when filters or capacity cut some nodes out."""
    facts, state = notes.facts, notes.state
    if node.path in notes.held_out:  # held domains, not the nodes' room, are why
        return None
    sets = [ps for ps in podsets(node) if ps.size]
    if not sets:
        return None
    impossible = [ps for ps in sets if facts.shape(ps).impossible]
    scarce = notes.bottleneck.get(node.path)
    matching = [ps for ps in sets if scarce is not None
                and (facts.shape(ps), ps.requirements) == (scarce.shape, scarce.req)]
    target = (impossible or matching or [max(
        sets, key=lambda ps: (facts.shape_weight(facts.shape(ps)), ps.min_pods))])[0]
    available, text = node_summary(state, target.requests, target.requirements,
                                   target.from_limits, _who(target))
    return None if available == state.n_nodes else text


def _who(ps: PodSet) -> str:
    """The pods a node account is for: ``a pod of decode``, or by a pod's name when the
    set's name is the one a front-end gives a set of identical pods (``pods``,
    ``pods-1``), which names nothing the user wrote."""
    generated = ps.name == "pods" or (ps.name.startswith("pods-") and ps.name[5:].isdigit())
    if not generated or not ps.pods:
        return f"a pod of {ps.name}"
    first = ps.pods[0].rpartition("/")[2]
    return f"pod {first}" if ps.size == 1 else f"a pod like {first}"
