"""The fast path (engine/fast.py) decides exactly as the generic search does.

On random clusters (regular topologies, random background load, some nodes lacking a
label, cordoned or tainted) a queue of random units, most of the fast shape and some just
outside it, is decided twice, with ``Options.fast`` on and off, each on its own copy of
the cluster and committing as it goes: every decision (assignments and their order,
per-group outcomes, dry runs, reasons) and the cluster afterwards must be the same, and
the fast path must actually have served the units of its shape. The node choice shared by
both paths (:func:`pods.choose`, a partial selection on wide scopes) is checked against a
full sort.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from placement_helpers import cache_current, decided, random_cluster

from gangsched.api.types import NodeRequirements
from gangsched.gang import Constraint, Group, PodSet
from gangsched.placement import place
from gangsched.placement.engine import Options
from gangsched.placement.engine.fast import _Scope, fast_place
from gangsched.placement.engine.pods import choose
from gangsched.testing.builders import LEVEL_KEYS, podset

GENERIC = Options(fast=False)


def random_unit(rng: np.random.Generator, i: int) -> Group:
    """Mostly the fast shape (replicas of one pod kind under at most one required level,
    each replica group perhaps requiring a level of its own), sometimes just outside it
    (a preferred constraint, a minimum below the size, mixed kinds, a per-node cap, a
    selector, replicas on different levels)."""
    p = f"u{i}"
    gpu = int(rng.choice([0, 1, 2, 4, 8]))
    cpu = int(rng.choice([500, 1000, 4000]))
    reps = int(rng.choice([1, 1, 1, 2, 3, 4]))
    pods = int(rng.choice([1, 2, 3, 4, 8, 16, 40]))
    nested = rng.random() < 0.5
    odd = rng.random() < 0.25
    vary = rng.random() < 0.4  # replicas of different sizes: the largest goes first
    keys = ["", "zone", "block", "rack", "host"]
    kid_key = keys[int(rng.integers(len(keys)))] if nested and rng.random() < 0.6 else ""
    kid_topo = (Constraint(LEVEL_KEYS[kid_key]),) if kid_key else ()
    kids: list[Group | PodSet] = []
    for k in range(reps):
        n = pods + (int(rng.integers(0, 3)) if vary else 0)
        ps = podset(f"{p}/r{k}/w" if nested else f"{p}/r{k}", n, gpu=gpu, cpu=cpu)
        if odd and rng.random() < 0.3:
            ps.min_pods = max(1, n - 1)
        if odd and rng.random() < 0.2:
            ps.max_pods_per_node = 2
        if odd and rng.random() < 0.2:
            ps.requests = {**ps.requests, "cpu": cpu * 2}
        if odd and rng.random() < 0.1:
            ps.requirements = NodeRequirements(node_selector=(("gangsched.io/rack", "r0"),))
        if odd and kid_topo and rng.random() < 0.2:  # replicas on different levels
            kid_topo = (Constraint(LEVEL_KEYS["zone"]),)
        kids.append(Group(f"r{k}", f"{p}/r{k}", [ps], min_groups=1, topology=kid_topo)
                    if nested else ps)
    key = keys[int(rng.integers(len(keys)))]
    topo: tuple[Constraint, ...] = ()
    if key:
        topo = (Constraint(LEVEL_KEYS[key]),)
        if odd and rng.random() < 0.3:
            topo = (Constraint(LEVEL_KEYS[key], "preferred"),)
    min_pods = int(rng.integers(0, 3))
    if len(kids) == 1 and isinstance(kids[0], PodSet) and rng.random() < 0.3:
        # a basic gang, its pods counted: no child required (Workload API), or its one
        # set required but asking for nothing itself (Volcano)
        whole = len(kids[0].pods) - (1 if odd and rng.random() < 0.3 else 0)
        volcano = rng.random() < 0.5
        if volcano:
            kids[0].min_pods = int(rng.choice([0, 0, 1]))
        return Group(p, p, kids, min_groups=int(volcano), min_pods=whole, topology=topo)
    return Group(p, p, kids, min_groups=len(kids), min_pods=min_pods, topology=topo)


VARIANTS = {
    "given-order": Options(child_order="given"),
    "not-narrow": Options(narrow=False),
    "not-whole": Options(keep_whole=False),
    "few-dry-runs": Options(max_dry_runs=4),
    "quiet": Options(explain=False),
}


@pytest.mark.parametrize("seed", range(100))
def test_fast_path_decides_as_the_generic_search(seed: int) -> None:
    agree(seed, Options())


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_fast_path_agrees_under_other_options(variant: str, seed: int) -> None:
    agree(1_000 + seed, VARIANTS[variant])


def agree(seed: int, opts: Options, make: Callable[[np.random.Generator, int], Group] = (
        random_unit)) -> None:
    """A queue of random units (``make``) decided with the fast path on and off (``opts``
    otherwise) on two copies of a random cluster: the same decisions, the same cluster
    after."""
    rng = np.random.default_rng(seed)
    base = random_cluster(rng)
    fast_state, generic_state = base.snapshot(), base.snapshot()
    generic = replace(opts, fast=False)
    served = 0
    for i in range(40):
        unit = make(rng, i)
        probe = fast_state.snapshot()
        if fast_place(unit, probe, opts, unit.size, commit=False) is not None:
            served += 1
        commit = rng.random() < 0.8
        a = place(unit, fast_state, opts, commit=commit)
        b = place(unit, generic_state, generic, commit=commit)
        assert decided(a) == decided(b), f"seed {seed}, unit {i}"
        assert np.array_equal(fast_state.free, generic_state.free)
        cache_current(fast_state, unit)
    assert served > 0


def many_replicas(rng: np.random.Generator, i: int) -> Group:
    """Many identical replicas (a training job's slices), each requiring a level, under a
    root that may require a wider one; now and then a replica of another size."""
    p = f"u{i}"
    key = str(rng.choice(["rack", "rack", "block", "host"]))
    pods = int(rng.choice([1, 2, 3, 4, 6, 8]))
    gpu = int(rng.choice([1, 2, 4, 8]))
    kids: list[Group | PodSet] = []
    for k in range(int(rng.integers(2, 13))):
        n = pods + (1 if rng.random() < 0.1 else 0)
        kids.append(Group(f"r{k}", f"{p}/r{k}", [podset(f"{p}/r{k}/w", n, gpu=gpu)],
                          min_groups=1, topology=(Constraint(LEVEL_KEYS[key]),)))
    root = str(rng.choice(["", "zone", "block"]))
    topo = (Constraint(LEVEL_KEYS[root]),) if root and root != key else ()
    return Group(p, p, kids, min_groups=len(kids), topology=topo)


@pytest.mark.parametrize("seed", range(30))
def test_fast_path_places_runs_of_replicas_as_the_generic_search(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of equal replicas taking one domain each are placed at once
    (``_Scope._each``): the same decisions as the generic search, which places them one
    by one."""
    calls = []
    each = _Scope._each

    def counted(self: _Scope, *args: Any) -> Any:
        calls.append(args)
        return each(self, *args)

    monkeypatch.setattr(_Scope, "_each", counted)
    agree(2_000 + seed, Options(), many_replicas)
    assert calls, "no run of replicas was placed at once"


def test_fast_path_serves_the_common_shapes_and_leaves_the_rest() -> None:
    state = random_cluster(np.random.default_rng(0))
    rack = (Constraint(LEVEL_KEYS["rack"]),)
    one = Group("g", "g", [podset("g/w", 2, gpu=1)], min_groups=1, topology=rack)
    assert fast_place(one, state, Options(), 2, commit=False) is not None
    basic = Group("g", "g", [podset("g/w", 2, gpu=1)], min_groups=0, min_pods=2, topology=rack)
    assert fast_place(basic, state, Options(), 2, commit=False) is not None  # a basic gang
    volcano = Group("g", "g", [podset("g/w", 2, gpu=1, min_pods=0)], min_groups=1, min_pods=2,
                    topology=rack)
    assert fast_place(volcano, state, Options(), 2, commit=False) is not None  # a PodGroup
    loose = Group("g", "g", [podset("g/w", 2, gpu=1)], min_groups=0, min_pods=1, topology=rack)
    assert fast_place(loose, state, Options(), 1, commit=False) is None
    spare = Group("g", "g", [podset("g/w", 2, gpu=1, min_pods=1)], min_groups=1, topology=rack)
    assert fast_place(spare, state, Options(), 1, commit=False) is None  # has extras
    pref = Group("g", "g", [podset("g/w", 2, gpu=1)], min_groups=1,
                 topology=(Constraint(LEVEL_KEYS["rack"], "preferred"),))
    assert fast_place(pref, state, Options(), 2, commit=False) is None
    huge = Group("g", "g", [podset("g/w", 10_000, gpu=8)], min_groups=1)
    assert fast_place(huge, state, Options(), 10_000, commit=False) is None  # rejected
    assert not place(huge, state).admitted  # by the generic search, with its reason


def full_sort(fv: np.ndarray, count: int, pack: bool, rack: np.ndarray | None,
              pref: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    key = fv if pack else -fv
    keys = [k for k in (rack, key, pref) if k is not None]
    order = np.lexsort(tuple(keys))
    cum = np.cumsum(fv[order])
    k = min(int(np.searchsorted(cum, count)), len(order) - 1)
    take = fv[order[: k + 1]].astype(np.int64)
    take[-1] -= max(0, int(cum[k]) - count)
    return order[: k + 1], take


@pytest.mark.parametrize("seed", range(20))
def test_partial_selection_takes_the_nodes_a_full_sort_takes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(50):
        n = int(rng.integers(300, 3000))
        low = int(rng.integers(1, 12))
        fv = rng.integers(low, low + int(rng.integers(1, 40)), n)
        count = int(rng.integers(int(fv.max()) + 1, max(int(fv.max()) + 2, n // 3)))
        rack = rng.integers(0, 400, n) if rng.random() < 0.6 else None
        pref = rng.integers(0, 4, n) * (1 << 20) if rng.random() < 0.3 else None
        pack = bool(rng.random() < 0.7)
        got = choose(fv, count, pack, rack, pref)
        want = full_sort(fv, count, pack, rack, pref)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
