"""An exact MILP for one scheduling unit: is it feasible, and how many pods fit at most?

The model is the engine's contract (DESIGN.md section 2), nothing more; it is the yardstick
the engine's search is measured against on small instances (<= 64 nodes, <= ~200 pods).

Variables

- ``x[s, n]`` integer: pods of PodSet s on node n, only for nodes that pass the set's mask,
  carry every label its required constraints need, and can hold at least one pod; upper
  bound min(size, max_pods_per_node, fit on free capacity).
- ``y[v]`` binary for every tree node: v is active (satisfied); the root is fixed to 1.
- ``z[v, d]`` binary for every tree node with a required constraint and each domain d of
  its key: v's pods live in domain d.

Constraints

- capacity: sum_s req[s, r] * x[s, n] <= free[r, n] for each node and requested resource;
- PodSet: min_s * y_s <= sum_n x[s, n] <= size_s * y_s;
- Group g: y_c <= y_g for each child; sum_c y_c >= min_groups * y_g; pods of g's subtree
  >= min_pods * y_g;
- required topology on v: sum_d z[v, d] <= y_v and, for each set s under v and domain d,
  sum_{n in d} x[s, n] <= size_s * z[v, d] (the per-domain sum of the per-node big-M rows);
- exclusive domains (set S on key K): an owner's sets get no x variables on nodes of a
  domain another owner of S already holds (``state.held_by_others``); for the owners of
  S on K inside the unit, sum_v z[v, d] <= 1 for each domain d;
- symmetry: among identical siblings, y and subtree pods are non-increasing.

Phase 1 minimizes the pods placed (feasibility and the fewest pods that satisfy the
root), phase 2 maximizes them. HiGHS through :func:`scipy.optimize.milp`.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from collections.abc import Hashable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp
from scipy.sparse import coo_matrix

from gangsched.cluster.state import ClusterState
from gangsched.cluster.topology import domain_id
from gangsched.gang import Group, PodSet, TreeNode, podsets, required_keys, walk
from gangsched.placement.verify import domain_value


@dataclass
class ExactResult:
    feasible: bool
    max_pods: int | None  # most pods placeable with the root satisfied (None: not solved)
    min_pods_needed: int  # fewest pods that satisfy the root (0 when infeasible)
    status: str  # optimal | infeasible | time_limit (feasible, max not proven) | unknown
    max_pods_bound: int | None = None  # proven upper bound on max_pods
    assignments: dict[str, str] | None = None  # a placement with max_pods (or the minimum)
    active: frozenset[str] = frozenset()  # paths of the tree nodes it satisfies
    seconds: float = 0.0
    variables: int = 0
    rows: int = 0


@dataclass
class _Model:
    c_pods: np.ndarray  # objective coefficients counting pods
    integrality: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    a: coo_matrix | None
    row_lb: np.ndarray
    row_ub: np.ndarray
    xvars: list[tuple[PodSet, int]] = field(default_factory=list)  # (set, node) per x var
    ypaths: list[tuple[str, int]] = field(default_factory=list)  # (tree path, y var)


class _Builder:
    def __init__(self) -> None:
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.row_lb: list[float] = []
        self.row_ub: list[float] = []

    def var(self, lb: float, ub: float) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(1)
        return len(self.lb) - 1

    def row(self, terms: list[tuple[int, float]], lo: float, hi: float) -> None:
        r = len(self.row_lb)
        for col, val in terms:
            if val:
                self.rows.append(r)
                self.cols.append(col)
                self.vals.append(val)
        self.row_lb.append(lo)
        self.row_ub.append(hi)


def _held(v: TreeNode, state: ClusterState) -> np.ndarray:
    """Pods of ``v`` already running on each node: they count against its cap."""
    held = np.zeros(state.n_nodes, dtype=np.int64)
    index = state.topology.index
    for name, count in v.held_per_node.items():
        if name in index:
            held[index[name]] += count
    return held


def _signature(v: TreeNode) -> Hashable:
    """Structure of a subtree without names: identical siblings are interchangeable."""
    held = tuple(sorted(v.held_per_node.items()))
    if isinstance(v, PodSet):
        return (
            "S", v.size, v.min_pods, tuple(sorted(v.requests.items())), v.requirements,
            v.topology, v.max_pods_per_node, held,
        )
    return ("G", v.min_groups, v.min_pods, v.topology, v.max_pods_per_node, held,
            tuple(_signature(c) for c in v.children))


def build(unit: TreeNode, state: ClusterState) -> _Model:
    """The MILP of ``unit`` on ``state.free`` (x variables first)."""
    b = _Builder()
    n_nodes = state.n_nodes
    nodes = state.topology.nodes
    chain = state.topology.keys
    inf = np.inf

    # keys required on each set's path from the root; domains other owners hold
    req_keys: dict[int, list[tuple[str, str | None]]] = {}  # (key, pinned value or None)
    blocked: dict[int, list[tuple[str, set[str]]]] = {}  # (key, values it may not use)

    def collect(v: TreeNode, keys: list[tuple[str, str | None]],
                out: list[tuple[str, set[str]]]) -> None:
        here = [*keys, *((c.key, c.value) for c in v.topology if c.mode == "required")]
        held = [*out, *((c.key, state.held_by_others(c.exclusive, c.key, v.path))
                        for c in v.topology if c.exclusive is not None)]
        if isinstance(v, PodSet):
            req_keys[id(v)] = here
            blocked[id(v)] = [(k, h) for k, h in held if h]
        else:
            for c in v.children:
                collect(c, here, held)

    collect(unit, [], [])
    label_of: dict[str, list[str | None]] = {}

    def labels(key: str) -> list[str | None]:
        """Each node's domain of ``key`` (None: it lacks the label), read once per key."""
        got = label_of.get(key)
        if got is None:
            got = label_of[key] = [domain_value(state, nd, key) for nd in nodes]
        return got

    id_of: dict[str, list[tuple[str | None, ...] | None]] = {}

    def domains_of(key: str) -> list[tuple[str | None, ...] | None]:
        """Each node's domain of ``key`` as required constraints count it (a path of
        values for a level of the chain: :func:`domain_id`), read once per key."""
        got = id_of.get(key)
        if got is None:
            got = id_of[key] = [domain_id(nd, key, chain) for nd in nodes]
        return got

    # x variables
    xcols: dict[int, list[tuple[int, int]]] = {}  # id(set) -> [(node, col)]
    xvars: list[tuple[PodSet, int]] = []
    for ps in podsets(unit):
        shape = state.shape(ps.requests)
        cols: list[tuple[int, int]] = []
        xcols[id(ps)] = cols
        if shape.impossible or ps.size == 0:
            continue
        ub = np.full(n_nodes, ps.size, dtype=np.int64)
        if ps.max_pods_per_node is not None:
            np.minimum(ub, ps.max_pods_per_node - _held(ps, state), out=ub)
        for r, a in zip(shape.index, shape.amount, strict=True):
            np.minimum(ub, np.maximum(state.free[r] // a, 0), out=ub)
        ok = state.mask(ps.requirements) & (ub > 0)
        for j in np.flatnonzero(ok).tolist():
            if not all((dv := labels(k)[j]) is not None and (pinned is None or dv == pinned)
                       for k, pinned in req_keys[id(ps)]):
                continue
            if any(labels(k)[j] in held for k, held in blocked[id(ps)]):
                continue
            col = b.var(0, float(ub[j]))
            cols.append((j, col))
            xvars.append((ps, j))
    n_x = len(b.lb)

    # y variables
    ycol: dict[int, int] = {}
    ypaths: list[tuple[str, int]] = []
    for v in walk(unit):
        ycol[id(v)] = b.var(1 if v is unit else 0, 1)
        ypaths.append((v.path, ycol[id(v)]))

    # capacity rows
    cap_terms: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for ps in podsets(unit):
        shape = state.shape(ps.requests)
        for j, col in xcols[id(ps)]:
            for r, a in zip(shape.index, shape.amount, strict=True):
                cap_terms.setdefault((r, j), []).append((col, float(a)))
    for (r, j), terms in sorted(cap_terms.items()):
        if len(terms) > 1:  # a single set is already bounded by its fit
            b.row(terms, -inf, float(state.free[r, j]))

    def pods_terms(v: TreeNode) -> list[tuple[int, float]]:
        return [(col, 1.0) for ps in podsets(v) for _, col in xcols[id(ps)]]

    # tree rows
    for v in walk(unit):
        yv = ycol[id(v)]
        if isinstance(v, PodSet):
            terms = pods_terms(v)
            b.row([*terms, (yv, -float(v.size))], -inf, 0)
            if v.min_pods:
                b.row([*terms, (yv, -float(v.min_pods))], 0, inf)
            continue
        assert isinstance(v, Group)
        for c in v.children:
            b.row([(ycol[id(c)], 1.0), (yv, -1.0)], -inf, 0)
        if v.min_groups:
            b.row([*((ycol[id(c)], 1.0) for c in v.children), (yv, -float(v.min_groups))],
                  0, inf)
        if v.min_pods:
            b.row([*pods_terms(v), (yv, -float(v.min_pods))], 0, inf)
        if v.max_pods_per_node is not None:  # the group's pods on any one node
            per_node: dict[int, list[tuple[int, float]]] = {}
            for ps in podsets(v):
                for j, col in xcols[id(ps)]:
                    per_node.setdefault(j, []).append((col, 1.0))
            room = np.maximum(v.max_pods_per_node - _held(v, state), 0)
            for j in sorted(per_node):
                b.row(per_node[j], -inf, float(room[j]))
        # symmetry breaking among identical siblings
        # (not when domains are held already: who holds them tells siblings apart)
        sigs = [_signature(c) if not (state.claims and any(
            con.exclusive is not None for n in walk(c) for con in n.topology))
            else object() for c in v.children]
        for a_i in range(len(v.children) - 1):
            for b_i in range(a_i + 1, len(v.children)):
                if sigs[b_i] == sigs[a_i]:
                    ci, ck = v.children[a_i], v.children[b_i]
                    b.row([(ycol[id(ci)], 1.0), (ycol[id(ck)], -1.0)], 0, inf)
                    b.row([*pods_terms(ci), *((col, -val) for col, val in pods_terms(ck))],
                          0, inf)
                    break  # chain to the next identical sibling only

    # owners of one exclusive set and key inside the unit: they need their z variables
    owners: dict[tuple[str, str], list[TreeNode]] = {}
    for w in walk(unit):
        for con in w.topology:
            if con.exclusive is not None:
                owners.setdefault((con.exclusive, con.key), []).append(w)
    rivals = {(id(w), k) for (_, k), ws in owners.items() if len(ws) > 1 for w in ws}
    zvars: dict[tuple[int, str], dict[tuple[str | None, ...], int]] = {}

    # required topology
    for v, key in [(w, k) for w in walk(unit) for k in required_keys(w)]:
        dom_of = domains_of(key)
        per_set: list[tuple[PodSet, dict[tuple[str | None, ...], list[int]]]] = []
        domains: dict[tuple[str | None, ...], None] = {}
        for ps in podsets(v):
            by_dom: dict[tuple[str | None, ...], list[int]] = {}
            for j, col in xcols[id(ps)]:
                dom = dom_of[j]
                assert dom is not None  # filtered out above
                by_dom.setdefault(dom, []).append(col)
                domains[dom] = None
            per_set.append((ps, by_dom))
        if len(domains) <= 1 and (id(v), key) not in rivals:
            continue  # at most one domain reachable: the constraint holds by construction
        zcol = {dom: b.var(0, 1) for dom in domains}
        zvars[(id(v), key)] = zcol
        b.row([*((z, 1.0) for z in zcol.values()), (ycol[id(v)], -1.0)], -inf, 0)
        for ps, by_dom in per_set:
            for dom, dcols in by_dom.items():
                big = float(min(ps.size, sum(b.ub[c] for c in dcols)))
                b.row([*((c, 1.0) for c in dcols), (zcol[dom], -big)], -inf, 0)

    # exclusive: one owner of a set per domain of its key
    for (_, key), ws in owners.items():
        if len(ws) < 2:
            continue
        per_domain: dict[str, list[int]] = {}  # by label value, as owners hold domains
        for w in ws:
            for dom, z in zvars.get((id(w), key), {}).items():
                per_domain.setdefault(str(dom[-1]), []).append(z)
        for dv in sorted(per_domain):
            if len(per_domain[dv]) > 1:
                b.row([(z, 1.0) for z in per_domain[dv]], -inf, 1)

    n_vars = len(b.lb)
    c_pods = np.zeros(n_vars)
    c_pods[:n_x] = 1.0
    matrix = None
    if b.row_lb:
        matrix = coo_matrix(
            (np.asarray(b.vals), (np.asarray(b.rows), np.asarray(b.cols))),
            shape=(len(b.row_lb), n_vars),
        )
    return _Model(
        c_pods=c_pods,
        integrality=np.asarray(b.integer),
        lb=np.asarray(b.lb, dtype=float),
        ub=np.asarray(b.ub, dtype=float),
        a=matrix,
        row_lb=np.asarray(b.row_lb, dtype=float),
        row_ub=np.asarray(b.row_ub, dtype=float),
        xvars=xvars,
        ypaths=ypaths,
    )


def _flush_c_stdio() -> None:
    with suppress(OSError, AttributeError, TypeError):  # no C library handle (Windows)
        ctypes.CDLL(None).fflush(None)


_STDOUT = threading.Lock()  # one redirection of file descriptor 1 at a time


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """HiGHS now and then prints debug lines straight to file descriptor 1, past
    ``disp=False``; keep them out of the caller's output (e.g. a rich table)."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _run(
    model: _Model, sign: float, time_limit: float, presolve: bool = True,
    node_limit: int | None = None, relaxed: bool = False,
) -> OptimizeResult:
    """One HiGHS solve of the model; ``relaxed``: its LP relaxation (no integrality)."""
    constraints = (
        [LinearConstraint(model.a.tocsr(), model.row_lb, model.row_ub)]
        if model.a is not None
        else []
    )
    with _STDOUT, _quiet_stdout():  # serialized: each saves and restores descriptor 1
        return milp(
            sign * model.c_pods,
            integrality=np.zeros_like(model.integrality) if relaxed else model.integrality,
            bounds=Bounds(model.lb, model.ub),
            constraints=constraints,
            options={"disp": False, "time_limit": max(time_limit, 0.01), "presolve": presolve,
                     **({"node_limit": node_limit} if node_limit is not None else {})},
        )


def _solution(res: OptimizeResult, model: _Model) -> np.ndarray | None:
    """The result's x when it is a solution of the model: HiGHS stopped by a time or
    node limit before finding one still hands back an x (all zeros)."""
    x = res.x
    if x is None:
        return None
    tol = 1e-6
    if (x < model.lb - tol).any() or (x > model.ub + tol).any():
        return None
    whole = model.integrality > 0
    if (np.abs(x[whole] - np.rint(x[whole])) > tol).any():
        return None
    if model.a is not None:
        ax = model.a @ x
        if (ax < model.row_lb - tol).any() or (ax > model.row_ub + tol).any():
            return None
    return np.asarray(x)


def _assignments(model: _Model, x: np.ndarray, state: ClusterState) -> dict[str, str]:
    names = [nd.name for nd in state.topology.nodes]
    counts = np.rint(x[: len(model.xvars)]).astype(np.int64)
    taken: dict[int, int] = {}
    out: dict[str, str] = {}
    for (ps, j), c in zip(model.xvars, counts.tolist(), strict=True):
        k = taken.get(id(ps), 0)
        for p in ps.pods[k : k + c]:
            out[p] = names[j]
        taken[id(ps)] = k + c
    return out


def solve(
    unit: TreeNode, state: ClusterState, *, time_limit: float = 10.0, maximize: bool = True,
    node_limit: int | None = None,
) -> ExactResult:
    """Decide ``unit`` exactly on ``state.free``: feasibility, fewest and most pods.

    ``time_limit`` applies to each phase, and so does ``node_limit`` (branch-and-bound
    nodes, a bound that does not depend on the machine's speed). With ``maximize=False``
    only phase 1 runs (``max_pods`` stays None). The state is not modified.
    """
    t0 = time.perf_counter()
    model = build(unit, state)
    n_vars = len(model.lb)
    rows = len(model.row_lb)

    def done(
        feasible: bool,
        max_pods: int | None,
        min_needed: int,
        status: str,
        bound: int | None = None,
        x: np.ndarray | None = None,
    ) -> ExactResult:
        return ExactResult(
            feasible=feasible,
            max_pods=max_pods,
            min_pods_needed=min_needed,
            status=status,
            max_pods_bound=bound,
            assignments=_assignments(model, x, state) if x is not None else None,
            active=frozenset(p for p, col in model.ypaths if x[col] > 0.5)
            if x is not None else frozenset(),
            seconds=time.perf_counter() - t0,
            variables=n_vars,
            rows=rows,
        )

    first = _run(model, 1.0, time_limit, node_limit=node_limit)
    if first.status == 2 and _run(model, 1.0, time_limit, presolve=False,
                                  relaxed=True).status == 2:
        return done(False, None, 0, "infeasible", bound=0)  # not even fractionally
    if first.status in (2, 4):
        # HiGHS's presolve can wrongly report infeasibility (seen with scipy 1.17 on
        # models whose solutions verify) or fail with a "solve error"; such verdicts
        # are confirmed without it: by the LP relaxation when that is infeasible too
        # (cheap: most are), else by the whole model
        first = _run(model, 1.0, time_limit, presolve=False, node_limit=node_limit)
    if first.status == 2:
        return done(False, None, 0, "infeasible", bound=0)
    x1 = _solution(first, model)
    if x1 is None:
        return done(False, None, 0, "unknown" if first.status == 1 else f"error: {first.message}")
    min_needed = round(float(model.c_pods @ x1))
    if not maximize:
        return done(True, None, min_needed, "optimal" if first.status == 0 else "time_limit",
                    x=x1)
    second = _run(model, -1.0, time_limit, node_limit=node_limit)
    x2 = _solution(second, model)
    if x2 is None:
        second = _run(model, -1.0, time_limit, presolve=False, node_limit=node_limit)
        x2 = _solution(second, model)
    if x2 is None:
        return done(True, None, min_needed, "time_limit", x=x1)
    best = round(float(model.c_pods @ x2))
    bound = best
    dual = getattr(second, "mip_dual_bound", None)
    if second.status != 0 and dual is not None and np.isfinite(dual):
        bound = max(best, int(np.floor(-float(dual) + 1e-6)))
    status = "optimal" if second.status == 0 else "time_limit"
    return done(True, best, min_needed, status, bound=bound, x=x2)
