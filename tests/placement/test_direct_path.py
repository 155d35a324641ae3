"""The first-choice path (engine/direct.py) decides exactly as the generic search does.

Random units whose every node is required whole (roles of several pod shapes, replica
groups, required and preferred levels, node selectors, tolerations), with some just
outside that shape (a minimum below the size, a per-node cap, a pinned value), are
decided on random clusters with ``Options.fast`` on and off, committing as they go:
every decision (assignments and their order, per-group outcomes, dry runs, reasons) and
the cluster afterwards must be the same, and the path must have placed some of them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from placement_helpers import cache_current, decided, random_cluster

from gangsched.api.types import NodeRequirements, Toleration
from gangsched.gang import Constraint, Group, PodSet, TreeNode
from gangsched.placement import place
from gangsched.placement.engine import Options, attempts
from gangsched.testing.builders import GPU, LEVEL_KEYS, podset

KEYS = ("zone", "block", "rack", "host")
TOLERATE = NodeRequirements(tolerations=(Toleration("dedicated", "Equal", "x", "NoSchedule"),))
IN_RACK_0 = NodeRequirements(node_selector=((LEVEL_KEYS["rack"], "r0"),))


def constraints(rng: np.random.Generator) -> tuple[Constraint, ...]:
    """None, a required level, a preferred one, or both."""
    out: list[Constraint] = []
    if rng.random() < 0.5:
        out.append(Constraint(LEVEL_KEYS[str(rng.choice(KEYS))]))
    if rng.random() < 0.3:
        out.append(Constraint(LEVEL_KEYS[str(rng.choice(KEYS))], "preferred"))
    return tuple(out)


def role_set(rng: np.random.Generator, path: str) -> PodSet:
    gpu = int(rng.choice([0, 1, 2, 4, 8]))
    ps = podset(path, int(rng.choice([1, 1, 2, 3, 4, 8])), gpu=gpu,
                cpu=int(rng.choice([500, 1000, 4000])))
    r = rng.random()
    if r < 0.1:
        ps.requirements = TOLERATE
    elif r < 0.13:
        ps.requirements = IN_RACK_0
    return ps


def whole_unit(rng: np.random.Generator, i: int) -> Group:
    """A serving unit: roles of replica groups or plain pod sets, every node required."""
    p = f"u{i}"
    roles: list[Group | PodSet] = []
    for r in range(int(rng.integers(1, 4))):
        if rng.random() < 0.3:
            roles.append(role_set(rng, f"{p}/role{r}"))
            continue
        reps: list[Group | PodSet] = [
            Group(f"rep{k}", f"{p}/role{r}/rep{k}", [role_set(rng, f"{p}/role{r}/rep{k}/w")],
                  min_groups=1, topology=constraints(rng))
            for k in range(int(rng.integers(1, 3)))]
        roles.append(Group(f"role{r}", f"{p}/role{r}", reps, min_groups=len(reps),
                           topology=constraints(rng)))
    return Group(p, p, roles, min_groups=len(roles), topology=constraints(rng))


def odd(node: TreeNode, rng: np.random.Generator) -> TreeNode:
    """Now and then a node just outside the shape the path serves."""
    if isinstance(node, PodSet):
        r = rng.random()
        if r < 0.04 and len(node.pods) > 1:
            return replace(node, min_pods=len(node.pods) - 1)
        if r < 0.08:
            return replace(node, max_pods_per_node=1)
        return node
    kids = [odd(c, rng) for c in node.children]
    if rng.random() < 0.03 and node.topology and node.topology[0].mode == "required":
        return replace(node, children=kids, topology=(replace(node.topology[0], value="r0"),))
    return replace(node, children=kids)


def mixed_unit(rng: np.random.Generator, i: int) -> TreeNode:
    return odd(whole_unit(rng, i), rng)


VARIANTS = {
    "default": Options(),
    "spread": Options(node_order="spread"),
    "given-order": Options(child_order="given"),
    "not-narrow": Options(narrow=False),
    "not-whole": Options(keep_whole=False),
    "index-order": Options(domain_order="index"),
    "few-dry-runs": Options(max_dry_runs=6),
    "solver-soon": Options(exact_after=5),
    "quiet": Options(explain=False),
    "mix": Options(mix=(((("cpu", 1000), (GPU, 8)), 1.0), ((("cpu", 4000),), 0.5))),
}


def agree_whole(seed: int, opts: Options, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    base = random_cluster(rng)
    one, other = base.snapshot(), base.snapshot()
    generic = replace(opts, fast=False)
    served = []
    first_choice = attempts.first_choice

    def counted(*args: object) -> object:
        got = first_choice(*args)  # type: ignore[arg-type]
        served.append(got is not None)
        return got

    monkeypatch.setattr(attempts, "first_choice", counted)
    for i in range(30):
        unit = mixed_unit(rng, i)
        commit = rng.random() < 0.8
        a = place(unit, one, opts, commit=commit)
        b = place(unit, other, generic, commit=commit)
        assert decided(a) == decided(b), f"seed {seed}, unit {i}"
        assert np.array_equal(one.free, other.free)
        assert isinstance(unit, Group)
        cache_current(one, unit)
    assert any(served), "the first-choice path placed no unit"


@pytest.mark.parametrize("seed", range(60))
def test_first_choice_decides_as_the_generic_search(seed: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    agree_whole(seed, Options(), monkeypatch)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("variant", sorted(set(VARIANTS) - {"default"}))
def test_first_choice_agrees_under_other_options(variant: str, seed: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    agree_whole(3_000 + seed, VARIANTS[variant], monkeypatch)
