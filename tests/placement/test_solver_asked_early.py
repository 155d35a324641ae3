"""The exact solver asked mid-search (``Options.exact_after``): a small unit whose search
runs long and that the solver proves infeasible is rejected then; any other decision is
the one the whole search makes. And a unit of no minimum whose search places no pod gets
the solver's placement when it has one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gangsched.api.types import Node
from gangsched.bench.instances import random_instance
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, TreeNode
from gangsched.placement import place
from gangsched.placement.engine import Options
from gangsched.placement.engine import attempts as engine_attempts
from gangsched.placement.engine import extras as engine_extras
from gangsched.placement.engine.trace import SearchLog, recording
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify
from gangsched.testing.builders import HOST, group, podset

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


def capped_host_case() -> tuple[ClusterState, TreeNode]:
    """Reduced from the random-tree fuzzing: one pod fits (on n1: n3 already runs more of
    its group than the group's cap of one per node); the host group holding it has no
    minimum, so it goes first to the tightest host (n3), where no pod grows."""
    pool, switch = "example.com/pool", "example.com/switch"
    nodes = [
        Node("n1", {pool: "p0", HOST: "n1"},
             allocatable={"cpu": 32_000, "memory": 16 << 30, "pods": 6, "nvidia.com/gpu": 8}),
        Node("n3", {pool: "p0", HOST: "n3"},
             allocatable={"cpu": 32_000, "memory": 32 << 30, "pods": 6, "nvidia.com/gpu": 2}),
        Node("n5", {pool: "p2", switch: "s1", HOST: "n5"},
             allocatable={"cpu": 8_000, "memory": 16 << 30, "pods": 6}),
    ]
    state = ClusterState.from_nodes(nodes, [], keys={pool, switch, HOST})
    one = replace(group("job/c/h/one", [podset("job/c/h/one/z", 1, gpu=2, min_pods=0)],
                        min_groups=1), max_pods_per_node=1, held_per_node={"n3": 2})
    empty = podset("job/c/h/e", 0, gpu=1, topology=(Constraint(switch, exclusive="setA"),))
    host = replace(group("job/c/h", [one, empty], min_groups=0, topology=(Constraint(HOST),)),
                   max_pods_per_node=2)
    unit = group("job", [group("job/c", [host], min_groups=0)], min_groups=1,
                 topology=(Constraint(pool, value="p0"),))
    return state, unit


def test_an_extra_child_of_no_minimum_tries_its_next_domain() -> None:
    state, unit = capped_host_case()
    d = place(unit, state, Options(exact=0), commit=False)  # the search alone
    assert d.admitted and verify(unit, state, d.assignments) == []
    assert d.assignments == {"default/job-c-h-one-z-0": "n1"}


def test_an_empty_set_no_longer_steers_the_search_away_from_the_one_pod(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the case was reduced while the empty exclusive set failed where no switch is (its
    # host group then went to n3, where no pod grows, and only the solver found n1); a set
    # of no pods now holds whatever it names, and the search alone finds n1
    monkeypatch.setattr(engine_extras, "EMPTY_RETRIES", 0)
    state, unit = capped_host_case()
    alone = place(unit, state, Options(exact=0), commit=False)
    assert alone.admitted and alone.assignments == {"default/job-c-h-one-z-0": "n1"}
    d = place(unit, state, commit=False)
    assert d.admitted and verify(unit, state, d.assignments) == []
    assert d.assignments == {"default/job-c-h-one-z-0": "n1"}
    assert d.minimum_pods == 0 and d.extra_pods == 1
