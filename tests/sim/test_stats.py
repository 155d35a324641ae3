"""Means and Student-t 95% intervals over seeds, and when a policy is best or tied."""

from __future__ import annotations

import math

import pytest

from gangsched.sim.stats import aggregate, interval, t975, verdict


def test_interval_on_known_samples() -> None:
    # mean 12, sample sd 1, n 3: half-width t(0.975, 2) * 1 / sqrt(3) = 4.303 / 1.732
    mean, lo, hi = interval([11.0, 12.0, 13.0])
    assert mean == 12.0
    half = 4.303 / math.sqrt(3)
    assert lo == pytest.approx(12 - half, abs=1e-6) and hi == pytest.approx(12 + half, abs=1e-6)
    # five values: t(0.975, 4) = 2.776, sd of 10..14 is sqrt(2.5)
    mean, lo, hi = interval([10, 11, 12, 13, 14])
    assert mean == 12.0 and hi == pytest.approx(12 + 2.776 * math.sqrt(2.5 / 5), abs=1e-6)


def test_one_seed_is_a_point_and_nothing_is_nan() -> None:
    assert interval([0.5]) == (0.5, 0.5, 0.5)
    assert interval([]) == (None, None, None)
    assert interval([None, float("nan"), 4.0]) == (4.0, 4.0, 4.0)
    assert interval([7.0, 7.0, 7.0]) == (7.0, 7.0, 7.0)


def test_t_quantiles() -> None:
    assert t975(1) == 12.706 and t975(9) == 2.262 and t975(500) == 1.960


def test_aggregate_keeps_means_intervals_and_per_seed_values() -> None:
    got = aggregate([{"a": 1, "b": None, "name": "x"}, {"a": 3, "b": None, "name": "x"}])
    assert got["a"] == 2.0 and got["per_seed"]["a"] == [1, 3]
    assert got["ci"]["a"][0] < 2.0 < got["ci"]["a"][1]
    assert got["b"] is None and got["ci"]["b"] == [None, None]
    assert got["name"] == "x" and "name" not in got["ci"]
    single = aggregate([{"a": 4}])
    assert single["a"] == 4 and single["ci"]["a"] == [4.0, 4.0]


def summaries(**rows: tuple[float, float, float]) -> dict[str, dict[str, object]]:
    return {k: {"m": mean, "ci": {"m": [lo, hi]}} for k, (mean, lo, hi) in rows.items()}


def test_best_only_when_the_intervals_are_apart() -> None:
    clear = summaries(a=(0.9, 0.88, 0.92), b=(0.8, 0.78, 0.82), c=(0.5, 0.4, 0.6))
    assert verdict(clear, "m", "higher") == ("a", set())
    close = summaries(a=(0.490057, 0.48, 0.50), b=(0.490054, 0.48, 0.50), c=(0.1, 0.0, 0.2))
    assert verdict(close, "m", "higher") == (None, {"a", "b"})
    assert verdict(clear, "m", "lower") == ("c", set())
    assert verdict(clear, "m", None) == (None, set())
    same = summaries(a=(1.0, 1.0, 1.0), b=(1.0, 1.0, 1.0))
    assert verdict(same, "m", "higher") == (None, set())


def test_the_lower_end_is_clipped_for_quantities_that_cannot_be_negative() -> None:
    mean, lo, hi = interval([0.0, 10.0])
    assert (mean, lo) == (5.0, 0.0) and hi > 10.0
    assert interval([-1.0, 1.0])[1] < -1.0  # signed quantities keep the symmetric interval
