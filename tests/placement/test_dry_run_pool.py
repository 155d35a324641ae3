"""A unit's dry runs are shared by all its attempts (``Options.max_dry_runs``): a tree
whose search space is large is not searched whole once per attempt. An attempt made after
they are spent still gets a tenth of them, so a retry and the explanation still run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gangsched.bench.instances import random_instance
from gangsched.gang import Group, TreeNode
from gangsched.placement import place
from gangsched.placement.engine import Options
from gangsched.placement.engine import attempts as engine_attempts

CAP = 60


def depth(node: TreeNode) -> int:
    return 1 + max((depth(c) for c in node.children), default=0) if isinstance(
        node, Group) else 1


@pytest.fixture
def spent(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Per decision, the dry runs each attempt spent."""
    log: list[list[int]] = []
    run = engine_attempts.run

    def counted(*args: object, **kwargs: object) -> engine_attempts.Outcome:
        out = run(*args, **kwargs)  # type: ignore[arg-type]
        log[-1].append(out.search.budget.dry_runs)
        return out

    monkeypatch.setattr(engine_attempts, "run", counted)
    return log


def test_the_attempts_of_a_unit_share_its_dry_runs(spent: list[list[int]]) -> None:
    opts = Options(max_dry_runs=CAP, exact=0)
    floor = CAP // engine_attempts.FLOOR_SHARE
    over = 0  # decisions that spent their dry runs before the last attempt
    for seed in range(60):
        state, unit = random_instance(np.random.default_rng(3000 + seed))
        spent.append([])
        d = place(unit, state, opts, commit=False)
        assert d.reason or d.admitted
        runs = spent[-1]
        left = CAP
        # each attempt within what was left, or the floor once it is gone (the cap is
        # read before each candidate: a dry run already under way may finish one more
        # placement per level of the tree)
        for n in runs:
            assert n <= max(left, floor) + depth(unit)
            left -= n
        over += left <= 0 and len(runs) > 1
    assert over > 0  # the cap was reached by some decision: the pool was really shared


def test_extras_placed_with_the_minimum_leave_it_half_the_dry_runs() -> None:
    """The attempts at raised minimums (extras searched with the minimum) spend at most
    half of the unit's dry runs: a unit whose own minimum is found within the other half
    is admitted with extras as without them (they spent it all, and the minimum's search
    then had only a tenth)."""
    opts = Options(max_dry_runs=300, exact=0)
    alone = replace(opts, extras=False)
    checked = 0
    for seed in range(390, 480):
        state, unit = random_instance(np.random.default_rng(seed))
        minimum = place(unit, state, alone, commit=False)
        if not minimum.admitted or minimum.dry_runs > 150:
            continue
        checked += 1
        d = place(unit, state, opts, commit=False)
        assert d.admitted, (seed, d.reason)
        assert len(d.assignments) >= len(minimum.assignments)
    assert checked > 20
