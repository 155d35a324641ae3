"""Several seeds into one comparison: means, Student-t 95% intervals, and which policy (if
any) is best in a metric once the noise between seeds is taken into account.

For a metric with values ``x_1..x_n`` over ``n`` seeds (``None`` values left out):
``mean = sum(x) / n`` and the interval is ``mean ± t(0.975, n-1) * s / sqrt(n)`` with
``s`` the sample standard deviation, its lower end clipped at 0 when no value is negative
(counts, shares and times cannot be); with one value the interval is ``[mean, mean]``.
A policy is *best* in a metric when its mean is the best and its interval does not
overlap the runner-up's; otherwise the leaders *tie* (every policy whose interval
overlaps the leader's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

Better = Literal["higher", "lower"] | None

# t(0.975, df) for df = 1..30; beyond, the normal quantile is within 2% (and is used).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
DIGITS = 6


def t975(df: int) -> float:
    """The two-sided 95% Student-t quantile for ``df`` degrees of freedom (df >= 1)."""
    return _T975[df - 1] if df <= len(_T975) else 1.960


def _finite(values: Sequence[Any]) -> list[float]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float):
            continue
        if math.isfinite(v):
            out.append(float(v))
    return out


def interval(values: Sequence[Any]) -> tuple[float | None, float | None, float | None]:
    """(mean, lo, hi) of the finite numbers among ``values``; all None when there are
    none; lo == hi == mean for a single value. Never NaN."""
    xs = _finite(values)
    if not xs:
        return None, None, None
    n = len(xs)
    mean = sum(xs) / n
    if n == 1:
        return _r(mean), _r(mean), _r(mean)
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    half = t975(n - 1) * math.sqrt(var / n)
    lo = mean - half
    if lo < 0 <= min(xs):  # a quantity that cannot be negative (counts, shares, times)
        lo = 0.0
    return _r(mean), _r(lo), _r(mean + half)


def _r(x: float) -> float:
    return round(x, DIGITS)


def aggregate(per_seed: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One policy's summaries over seeds: each numeric metric as its mean, plus ``ci``
    (``{metric: [lo, hi]}``) and ``per_seed`` (``{metric: [v0, v1, ...]}``). Keys that
    are not numbers in any seed (text, lists) are kept from the first seed."""
    keys: list[str] = []
    for s in per_seed:
        keys += [k for k in s if k not in keys]
    out: dict[str, Any] = {}
    ci: dict[str, list[float | None]] = {}
    seeds: dict[str, list[Any]] = {}
    for k in keys:
        values = [s.get(k) for s in per_seed]
        numeric = all(v is None or (isinstance(v, int | float) and not isinstance(v, bool))
                      for v in values)
        if not numeric:
            out[k] = next((v for v in values if v is not None), None)
            continue
        mean, lo, hi = interval(values)
        if mean is not None and all(isinstance(v, int) for v in values) and len(values) == 1:
            out[k] = values[0]  # a single integer seed stays an integer
        else:
            out[k] = mean
        ci[k] = [lo, hi]
        seeds[k] = list(values)
    out["ci"] = ci
    out["per_seed"] = seeds
    return out


def verdict(summaries: Mapping[str, Mapping[str, Any]], key: str, better: Better
            ) -> tuple[str | None, set[str]]:
    """(the best policy or None, the policies tied for best) in metric ``key``.

    Best: the leading mean whose interval does not overlap the runner-up's. Tie: the
    leader and every policy whose interval overlaps the leader's (empty when fewer than
    two policies have a number, when there is no direction, or when all are equal)."""
    if better is None:
        return None, set()
    rows = []
    for name, s in summaries.items():
        mean = s.get(key)
        if isinstance(mean, bool) or not isinstance(mean, int | float):
            continue
        lo, hi = (s.get("ci") or {}).get(key, [mean, mean])
        lo = mean if lo is None else lo
        hi = mean if hi is None else hi
        rows.append((float(mean), float(lo), float(hi), name))
    if len(rows) < 2 or len({r[0] for r in rows}) == 1:
        return None, set()
    rows.sort(key=lambda r: (-r[0] if better == "higher" else r[0], r[3]))
    lead, second = rows[0], rows[1]
    overlaps = (lead[1] <= second[2]) if better == "higher" else (lead[2] >= second[1])
    if lead[0] != second[0] and not overlaps:
        return lead[3], set()
    tied = {r[3] for r in rows if r[1] <= lead[2] and lead[1] <= r[2]}
    return None, tied
