"""The exact solver asked mid-search (``Options.exact_after``): a small unit whose search
runs long and that the solver proves infeasible is rejected then; any other decision is
the one the whole search makes. And a unit of no minimum whose search places no pod gets
the solver's placement when it has one."""

from __future__ import annotations

import numpy as np
import pytest

from gangsched.bench.instances import random_instance
from gangsched.placement import place
from gangsched.placement.engine import Options
from gangsched.placement.engine import attempts as engine_attempts
from gangsched.placement.engine.trace import SearchLog, recording
from gangsched.placement.exact import solve

EARLY = Options(exact_after=20)  # asked after 20 dry runs: reached by modest instances
LATE = Options(exact_after=0)  # asked only when every search failed


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """(dry runs, stopped for the solver) of every attempt searched."""
    log: list[tuple[int, bool]] = []
    run = engine_attempts.run

    def counted(*args: object, **kwargs: object) -> engine_attempts.Outcome:
        out = run(*args, **kwargs)  # type: ignore[arg-type]
        log.append((out.search.budget.dry_runs, out.search.budget.stopped))
        return out

    monkeypatch.setattr(engine_attempts, "run", counted)
    return log


def test_asking_early_changes_no_decision(runs: list[tuple[int, bool]]) -> None:
    proven = 0  # decisions the solver ended by proving them infeasible
    for seed in range(120):
        state, unit = random_instance(np.random.default_rng(seed))
        runs.clear()
        early = place(unit, state, EARLY, commit=False)
        early_runs = list(runs)
        runs.clear()
        late = place(unit, state, LATE, commit=False)
        assert (early.admitted, early.assignments) == (late.admitted, late.assignments), seed
        assert not any(stopped for _, stopped in runs)  # never stopped when not asked
        if early.admitted or not any(stopped for _, stopped in early_runs):
            continue
        if solve(unit, state, maximize=False).status == "infeasible":
            proven += 1
            assert early.reason  # explained all the same
            # the search was cut short: fewer dry runs than the whole search spent
            assert sum(n for n, _ in early_runs) < sum(n for n, _ in runs), seed
    assert proven > 0  # the early verdict was really reached


def test_the_search_log_keeps_no_stopped_attempt() -> None:
    def searches(log: SearchLog) -> list[tuple[bool, bool, bool, bool, bool]]:
        return [(a.pack, a.whole, a.implied, a.caps_first, a.deep) for a in log.attempts
                if not a.exact and not a.explanation]

    mid = 0
    for seed in range(120):
        state, unit = random_instance(np.random.default_rng(seed))
        with recording(SearchLog()) as late:
            place(unit, state, LATE, commit=False)
        with recording(SearchLog()) as early:
            place(unit, state, EARLY, commit=False)
        asked = [i for i, a in enumerate(early.attempts) if a.exact]
        if not asked or asked[0] == len(early.attempts) - 1:
            continue  # not asked, or asked last, as without asking early
        mid += 1
        assert len(asked) == 1  # once
        before = searches(SearchLog(early.attempts[:asked[0]]))
        assert before == searches(late)[:len(before)]  # none cut short and recorded
        if solve(unit, state, maximize=False).status != "infeasible":
            assert searches(early) == searches(late)  # the search went on, whole
    assert mid > 0


def test_a_unit_the_search_alone_cannot_place_is_still_rejected_when_asked_early() -> None:
    # the capacity bound cannot prove it, the solver can: 6 + 3 x 3 GPUs on two nodes of 8
    from gangsched.testing.builders import GPU, cluster, group, podset

    two = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 2)),
                  alloc={"cpu": 64_000, GPU: 8, "pods": 110})
    mixed = group("mix", [podset("mix/a", 1, gpu=6), podset("mix/b", 3, gpu=3)])
    for opts in (Options(exact_after=1), LATE):
        d = place(mixed, two, opts, commit=False)
        assert not d.admitted and "mix" in d.reason
