"""The discrete-event kernel: ordering by (time, priority, sequence), lazy cancellation,
running until a time, seeded randomness."""

from __future__ import annotations

import pytest

from gangsched.sim.kernel import Kernel


def test_events_run_in_time_then_priority_then_sequence_order() -> None:
    k = Kernel()
    seen: list[str] = []
    k.at(2.0, lambda: seen.append("t2"))
    k.at(1.0, lambda: seen.append("t1-p5"), priority=5)
    k.at(1.0, lambda: seen.append("t1-p0-first"))
    k.at(1.0, lambda: seen.append("t1-p0-second"))
    k.run()
    assert seen == ["t1-p0-first", "t1-p0-second", "t1-p5", "t2"]
    assert k.now == 2.0
    assert k.processed == 4


def test_events_scheduled_while_running_join_the_order() -> None:
    k = Kernel()
    seen: list[float] = []

    def tick() -> None:
        seen.append(k.now)
        if k.now < 3:
            k.after(1.0, tick)

    k.at(0.0, tick)
    k.run()
    assert seen == [0.0, 1.0, 2.0, 3.0]


def test_cancelled_events_are_skipped_lazily() -> None:
    k = Kernel()
    seen: list[str] = []
    a = k.at(1.0, lambda: seen.append("a"))
    k.at(2.0, lambda: seen.append("b"))
    a.cancel()
    assert len(k) == 1
    assert k.peek() == 2.0
    k.run()
    assert seen == ["b"]


def test_run_until_stops_before_later_events_and_sets_the_clock() -> None:
    k = Kernel()
    seen: list[str] = []
    k.at(1.0, lambda: seen.append("a"))
    k.at(5.0, lambda: seen.append("b"))
    k.run(until=3.0)
    assert seen == ["a"]
    assert k.now == 3.0
    k.run()
    assert seen == ["a", "b"]


def test_events_in_the_past_are_refused() -> None:
    k = Kernel(start=10.0)
    with pytest.raises(ValueError, match="before now"):
        k.at(9.0, lambda: None)


def test_step_on_an_empty_heap_is_false() -> None:
    assert Kernel().step() is False


def test_randomness_is_seeded() -> None:
    a, b, c = Kernel(seed=3), Kernel(seed=3), Kernel(seed=4)
    xs = [a.rng.random() for _ in range(5)]
    assert xs == [b.rng.random() for _ in range(5)]
    assert xs != [c.rng.random() for _ in range(5)]
