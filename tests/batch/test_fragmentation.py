"""``gangsched place`` chooses domains against the batch's mix of pod shapes when the
batch does not fit as it comes (``Options.mix``: the least stranded capacity first)."""

from __future__ import annotations

import numpy as np
import pytest

from gangsched.api.types import Node
from gangsched.batch import LOOKAHEAD, Lookahead, batch_mix, place_plan
from gangsched.cluster.state import ClusterState
from gangsched.gang import Group
from gangsched.model import Plan, Workload
from gangsched.placement.engine import Options, place
from gangsched.placement.engine.pods import choose, choose_each
from gangsched.testing.builders import GPU, cons, group, levels_of, nodes, podset, take

RACKS = (("zone", 1), ("rack", 2), ("host", 4))  # 2 racks of 4 nodes of 8 GPUs


def gang(name: str, pods: int, gpu: int, priority: int = 0) -> Group:
    return group(name, [podset(f"{name}/w", pods, gpu=gpu)], topology=cons("rack"),
                 priority=priority)


def halves() -> tuple[list[Node], ClusterState]:
    """Rack 0: one whole node and one half node free (the others busy); rack 1: four half
    nodes free."""
    ns = nodes(RACKS, {"cpu": 64_000, GPU: 8, "pods": 110})
    state = ClusterState.from_nodes(ns, levels_of(RACKS))
    take(state, "n-z0-r0-h1", gpu=4)
    take(state, "n-z0-r0-h2", gpu=8)
    take(state, "n-z0-r0-h3", gpu=8)
    for h in range(4):
        take(state, f"n-z0-r1-h{h}", gpu=4)
    return ns, state


def test_a_gang_of_half_node_pods_takes_the_half_nodes_and_leaves_the_whole_one() -> None:
    # the high-priority gang (3 pods of 4 GPUs) fits rack 0 tightest (3 slots of 4 GPUs,
    # one of them half of the whole node) and rack 1 (4 slots, all on half nodes). In rack
    # 0 it would break the only whole node, and the one-node gang after it (lower
    # priority: no order puts it first) finds no room; against the batch's mix it takes
    # rack 1's half nodes, which no 8-GPU pod could use, and both are admitted
    trees = (gang("small", 3, 4, priority=10), gang("big", 1, 8))
    ns, state = halves()
    p = Plan([Workload(t.path, "PodGroup", t, priority=t.priority) for t in trees], ns, None, [])
    plain = place_plan(p, state, fragmentation=False)
    assert [o.admitted for o in plain] == [True, False]
    ns, state = halves()
    p = Plan([Workload(t.path, "PodGroup", t, priority=t.priority) for t in trees], ns, None, [])
    out = place_plan(p, state)
    assert [o.admitted for o in out] == [True, True]
    assert {n.rsplit("-", 1)[0] for n in out[0].pods.values()} == {"n-z0-r1"}
    assert list(out[1].pods.values()) == ["n-z0-r0-h0"]


def test_the_look_ahead_stops_once_the_mix_admits_everything() -> None:
    trees = (gang("small", 3, 4, priority=10), gang("big", 1, 8))
    ns, state = halves()
    p = Plan([Workload(t.path, "PodGroup", t, priority=t.priority) for t in trees], ns, None, [])
    look = Lookahead(p, state, Options(extras=False), batch_mix(p, state))
    order = look.best([0, 1], LOOKAHEAD)
    assert order == [0, 1] and look.mixed
    assert look.decisions == 2 * len(order)  # the plain run and the mixed one, no trials


def test_the_mix_weighs_each_request_by_what_the_batch_asks_for() -> None:
    trees = (gang("small", 3, 4), gang("big", 1, 8))
    ns, state = halves()
    p = Plan([Workload(t.path, "PodGroup", t) for t in trees], ns, None, [])
    mix = dict(batch_mix(p, state))
    assert sorted(mix.values()) == [0.4, 0.6]  # 8 GPUs and 12 GPUs of 20


def test_a_batch_that_fits_is_decided_as_without_the_mix() -> None:
    trees = (gang("small", 2, 4), gang("big", 1, 8))
    results = []
    for frag in (False, True):
        ns, state = halves()
        p = Plan([Workload(t.path, "PodGroup", t) for t in trees], ns, None, [])
        results.append([o.pods for o in place_plan(p, state, fragmentation=frag)])
    assert results[0] == results[1]


def test_a_mix_of_one_shape_changes_no_decision() -> None:
    # a pod of the mix's only shape strands nothing of it: the plain order stands
    _, state = halves()
    unit = gang("small", 3, 4)
    mix = ((tuple(sorted(unit.children[0].requests.items())), 1.0),)  # type: ignore[union-attr]
    a = place(unit, state.snapshot(), Options(extras=False))
    b = place(unit, state.snapshot(), Options(extras=False, mix=mix))
    assert a.assignments == b.assignments


@pytest.mark.parametrize("equal", [False, True])
def test_the_estimate_puts_pods_where_the_pods_step_would(equal: bool) -> None:
    """``choose_each`` (the estimate's and the fast path's) takes, slice by slice, the
    positions and counts ``choose`` takes, in its order: on slices of any sizes (one
    sort over all, or a padded grid when they are about one size) and of one size (the
    grid: a level's domains)."""
    rng = np.random.default_rng(7)
    for _ in range(500):
        n = int(rng.integers(1, 40))
        fit = rng.integers(0, 5, n)
        if equal:
            size = int(rng.integers(1, 6))
            n = size * int(rng.integers(1, 8))
            fit = rng.integers(0, 5, n)
            cuts = np.arange(size, n, size)
        else:
            cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, int(rng.integers(0, 6))),
                                      replace=False)) if n > 1 else np.zeros(0, dtype=np.int64)
        starts, ends = np.r_[0, cuts].astype(np.int64), np.r_[cuts, n].astype(np.int64)
        keep = rng.random(len(starts)) < 0.7
        starts, ends = starts[keep], ends[keep]
        room = rng.integers(0, 4, n) if rng.random() < 0.5 else None
        count = int(rng.integers(1, 8))
        got_nodes, got_take, owner = choose_each(fit, count, starts, ends, room)
        for k, (lo, hi) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            nz = np.flatnonzero(fit[lo:hi])
            got = list(zip(got_nodes[owner == k].tolist(), got_take[owner == k].tolist(),
                           strict=True))
            if not len(nz):
                assert got == []
                continue
            at, tk = choose(fit[lo:hi][nz], count, True,
                            room[lo:hi][nz] if room is not None else None)
            assert got == list(zip((nz[at] + lo).tolist(), tk.tolist(), strict=True))
