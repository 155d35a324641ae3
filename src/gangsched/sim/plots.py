"""The report's PNG plots, drawn from a :class:`Study` (every seed) with matplotlib's Agg canvas.

No pyplot and no GUI backend: every figure is a bare :class:`~matplotlib.figure.Figure`
attached explicitly to the Agg canvas (``FigureCanvasAgg``). The process-wide backend is
left alone (``matplotlib.use`` would close a caller's pyplot figures). Figures are drawn
under matplotlib's default style (a user's ``matplotlibrc`` does not leak in) with a fixed
size and dpi, a fixed color per policy name and no ``Software`` PNG text chunk, so the same
result gives byte-identical files.

Each ``*_plot`` function writes one PNG and returns a :class:`Plot` with the title and the
caption the HTML report shows under it; :func:`draw_all` writes all of them.
"""

from __future__ import annotations

import io
import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import style as mpl_style
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, PercentFormatter

from gangsched.api.files import write_atomic
from gangsched.sim.result import Study

WIDTH = 10.0  # inches
DPI = 100
PANEL_HEIGHT = 1.9  # inches per policy in the allocation small multiples

# Fixed colors for the built-in policies (colorblind-safe Okabe-Ito hues); any other policy
# name gets one from FALLBACK chosen by a stable hash of the name.
POLICY_COLORS: dict[str, str] = {
    "gangsched": "#0072B2",  # blue
    "pod-by-pod": "#D55E00",  # vermillion
    "flat-gang": "#E69F00",  # orange
    "cpg-alpha": "#CC79A7",  # reddish purple
    "volcano": "#009E73",  # bluish green
}
FALLBACK = ("#56B4E9", "#F0E442", "#000000", "#999999", "#8C564B", "#17BECF", "#BCBD22")
WASTE_COLOR = "#C0392B"
INK = "#333333"  # legend entries that explain line styles, not policies

STYLE: dict[str, Any] = {
    "font.size": 9.5,
    "axes.titlesize": 10.5,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "path.simplify": True,
    "axes.axisbelow": True,
}


@dataclass(frozen=True)
class Plot:
    """One written PNG with what the report says about it."""

    path: Path
    title: str
    caption: str  # what to look for


def policy_color(name: str) -> str:
    """The fixed color of a policy (the same in every plot and in the HTML table)."""
    if name in POLICY_COLORS:
        return POLICY_COLORS[name]
    return FALLBACK[zlib.crc32(name.encode()) % len(FALLBACK)]


def time_unit(seconds: float) -> tuple[str, float]:
    """A readable unit for an axis spanning ``seconds``: (name, seconds per unit)."""
    if seconds <= 120:
        return "s", 1.0
    if seconds <= 2 * 3600:
        return "min", 60.0
    if seconds <= 3 * 86400:
        return "h", 3600.0
    return "days", 86400.0


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _save(fig: Figure, path: Path) -> None:
    FigureCanvasAgg(fig)
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    write_atomic(path, out.getvalue())


def _figure(height: float) -> Figure:
    return Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")


def _empty(fig: Figure, message: str) -> None:
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", color="#666666")


def _styled(draw: Callable[[], Figure]) -> Figure:
    with mpl_style.context(["default", STYLE]):  # defaults, not the user's matplotlibrc
        return draw()


# -- per-seed series ------------------------------------------------------------------------


def _series(study: Study, policy: str, attr: str) -> tuple[np.ndarray, np.ndarray]:
    """(times, values[seed, time]) of one sample field over the seeds, on the first
    seed's sample times (every seed samples at the same times)."""
    rows = []
    times: np.ndarray | None = None
    for result in study.runs:
        run = next((r for r in result.policies if r.policy == policy), None)
        if run is None or not run.samples:
            continue
        samples = sorted(run.samples, key=lambda x: x.time)
        t = np.array([x.time for x in samples])
        v = np.array([float(getattr(x, attr)) for x in samples])
        if times is None:
            times = t
        rows.append(np.interp(times, t, v) if len(t) != len(times) or (t != times).any()
                    else v)
    if times is None:
        return np.zeros(0), np.zeros((0, 0))
    return times, np.vstack(rows)


def _shade_warmup(ax: Any, warmup: float, per: float) -> None:
    if warmup > 0:
        ax.axvspan(0, warmup / per, color="#eeeeee", linewidth=0, zorder=0)


# -- the plots -----------------------------------------------------------------------------


def allocation_plot(study: Study, path: Path) -> Plot:
    """GPU allocation over time, one panel per policy: the mean over seeds as lines, the
    range over seeds as bands; allocated, useful with topology, waste between them."""
    names = study.policies
    first = study.first
    unit, per = time_unit(first.horizon)

    def draw() -> Figure:
        fig = _figure(max(2.6, 0.9 + PANEL_HEIGHT * len(names)))
        if not names:
            _empty(fig, "no policies")
            return fig
        axes = fig.subplots(len(names), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
        for ax, name in zip(axes, names, strict=True):
            color = policy_color(name)
            ax.set_title(name, loc="left", color=color)
            ax.set_ylim(0, 1.02)
            ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
            ax.set_xlim(0, first.horizon / per)
            _shade_warmup(ax, first.warmup, per)
            t, alloc = _series(study, name, "gpu_allocated")
            if not len(t):
                ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center",
                        va="center", color="#666666")
                continue
            _, useful = _series(study, name, "gpu_useful_topology")
            x = t / per
            ax.fill_between(x, useful.mean(axis=0), alloc.mean(axis=0), step="post",
                            color=WASTE_COLOR, alpha=0.22, linewidth=0)
            for values, width, dash, alpha in ((alloc, 2.2, None, 0.5),
                                               (useful, 1.3, (0, (4, 2)), 1.0)):
                if len(values) > 1:
                    ax.fill_between(x, values.min(axis=0), values.max(axis=0), step="post",
                                    color=color, alpha=0.15, linewidth=0)
                ax.plot(x, values.mean(axis=0), drawstyle="steps-post", color=color,
                        linewidth=width, alpha=alpha, linestyle=dash or "-")
        fig.legend(handles=[
            Line2D([], [], color=INK, linewidth=2.2, alpha=0.5, label="GPU allocated"),
            Line2D([], [], color=INK, linewidth=1.3, linestyle=(0, (4, 2)),
                   label="GPU useful (minimum placed, topology held)"),
            Patch(color=WASTE_COLOR, alpha=0.22, linewidth=0,
                  label="not useful (below minimum or topology broken)"),
            Patch(color="#eeeeee", linewidth=0, label="warm-up (not measured)"),
        ], loc="outside upper center", ncols=2, fontsize=8.5)
        axes[-1].set_xlabel(f"simulated time ({unit})")
        fig.supylabel("share of cluster GPUs")
        return fig

    seeds = len(study.runs)
    _save(_styled(draw), path)
    return Plot(path, "GPU allocation over time",
                "One panel per policy; lines are the mean over "
                f"{seeds} seed{'s' if seeds != 1 else ''}, pale bands the range over seeds. "
                "Solid: share of GPUs bound to pods. Dashed: the share held by units whose "
                "whole minimum is placed with every required topology constraint holding "
                "(useful). The red band between them is allocation that does no useful work. "
                "The grey strip is the warm-up, left out of every metric.")


def _waits_all(study: Study, name: str) -> list[float]:
    out: list[float] = []
    for result in study.runs:
        run = next((r for r in result.policies if r.policy == name), None)
        if run is None:
            continue
        for u in run.units:
            if u.arrival < result.warmup:
                continue
            out.append(u.wait if u.wait is not None else max(0.0, result.horizon - u.arrival))
    return sorted(out)


def wait_cdf_plot(study: Study, path: Path) -> Plot:
    """Empirical CDF of the time to admission over every measured unit of every seed (a
    unit never admitted counts as waiting to the end of the run), zoomed to where the
    policies differ."""
    names = study.policies
    waits = {n: _waits_all(study, n) for n in names}
    # zoom: from 0 to a bit past the largest 99th percentile, but never past the longest
    q99 = max((float(np.percentile(w, 99)) for w in waits.values() if w), default=0.0)
    longest = max((w[-1] for w in waits.values() if w), default=0.0)
    right_s = min(longest, q99 * 1.1) if q99 > 0 else max(longest, 1.0)
    unit, per = time_unit(right_s if right_s > 0 else 1.0)
    right = right_s / per if right_s > 0 else 1.0
    lowest = min((sum(1 for x in w if x <= 0.0) / len(w) for w in waits.values() if w),
                 default=0.0)

    def draw() -> Figure:
        fig = _figure(4.2)
        if not any(waits.values()):
            _empty(fig, "no units")
            return fig
        ax = fig.add_subplot()
        for name in names:
            ws = waits[name]
            if not ws:
                continue
            total = len(ws)
            xs = [0.0, *(w / per for w in ws)]
            ys = [0.0, *((i + 1) / total for i in range(total))]
            ax.plot(xs, ys, drawstyle="steps-post", color=policy_color(name), linewidth=1.6,
                    label=f"{name} (p95 {format_wait(float(np.percentile(ws, 95)))})")
        ax.set_xlim(-0.015 * right, right)
        bottom = max(0.0, lowest - 0.05)
        ax.set_ylim(bottom, 1.01)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel(f"time from arrival to admission ({unit}); never admitted = to the "
                      "end of the run")
        ax.set_ylabel("share of units")
        ax.set_title("Time to admission, every unit (CDF, zoomed)", loc="left")
        fig.legend(loc="outside right upper", fontsize=8.5)
        return fig

    _save(_styled(draw), path)
    return Plot(path, "Time to admission",
                "For each policy, the share of all measured units (every seed) admitted "
                "within a given time of arriving; a unit never admitted counts as waiting "
                "until the end of the run, so the curves reach 100% and the tail shows it. "
                "Higher and further left is better. The axes are zoomed to where the curves "
                "differ (up to about the largest 99th percentile).")


def format_wait(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def gpu_hours_plot(study: Study, summaries: Mapping[str, Mapping[str, Any]],
                   path: Path) -> Plot:
    """GPU-hours per policy: useful with topology, at the minimum but topology broken,
    and below the minimum (waste), means over seeds with 95% intervals."""
    names = study.policies
    parts = (("useful_gpu_hours", "useful", None),
             ("broken_topology_gpu_hours", "topology broken", "#E69F00"),
             ("wasted_gpu_hours", "below minimum", WASTE_COLOR))

    def value(name: str, key: str) -> tuple[float, float]:
        s = summaries.get(name, {})
        mean = _number(s.get(key)) or 0.0
        lo, hi = (s.get("ci") or {}).get(key, [mean, mean])
        return mean, max(0.0, ((hi if hi is not None else mean) -
                                (lo if lo is not None else mean)) / 2)

    def draw() -> Figure:
        fig = _figure(max(2.4, 1.2 + 0.45 * len(names)))
        if not names:
            _empty(fig, "no policies")
            return fig
        axes = fig.subplots(1, 3, sharey=True)
        ys = list(range(len(names)))
        colors = [policy_color(n) for n in names]
        for ax, (key, title, color) in zip(axes, parts, strict=True):
            means = []
            for y, name in zip(ys, names, strict=True):
                mean, half = value(name, key)
                if key == "useful_gpu_hours":
                    mean -= value(name, "broken_topology_gpu_hours")[0]
                means.append(mean)
                ax.barh(y, mean, color=color or colors[y], height=0.6,
                        xerr=half if half > 0 else None, ecolor="#333333", capsize=3)
                ax.text(mean, y, f" {mean:,.0f}", va="center", ha="left", fontsize=8.5)
            top = max(means, default=0.0)
            ax.set_xlim(0, top * 1.35 if top > 0 else 1.0)
            ax.set_title(title, loc="left")
            ax.grid(axis="y", visible=False)
            ax.set_xlabel("GPU-hours")
        axes[0].set_yticks(ys, names)
        axes[0].invert_yaxis()
        for label, color in zip(axes[0].get_yticklabels(), colors, strict=True):
            label.set_color(color)
        return fig

    _save(_styled(draw), path)
    return Plot(path, "Where the GPU-hours went",
                "Means over seeds (after the warm-up) with 95% intervals. Left: GPU-hours of "
                "units at their minimum with every required topology constraint holding. "
                "Middle: at the minimum but with a required topology broken (a replica "
                "spread over two racks). Right: held by units below their minimum, which "
                "nothing can use. Each panel has its own scale, so small waste stays "
                "visible.")


def partial_units_plot(study: Study, path: Path) -> Plot:
    """Partially placed units over time, one panel per policy (mean over seeds, range as a
    band), so a policy at zero is visibly at zero."""
    names = study.policies
    first = study.first
    unit, per = time_unit(first.horizon)

    def draw() -> Figure:
        fig = _figure(max(2.4, 0.8 + 0.9 * len(names)))
        if not names:
            _empty(fig, "no policies")
            return fig
        axes = fig.subplots(len(names), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
        top = 1.0
        for ax, name in zip(axes, names, strict=True):
            color = policy_color(name)
            _shade_warmup(ax, first.warmup, per)
            t, partial = _series(study, name, "partial_units")
            if not len(t):
                continue
            x = t / per
            if len(partial) > 1:
                ax.fill_between(x, partial.min(axis=0), partial.max(axis=0), step="post",
                                color=color, alpha=0.2, linewidth=0)
            ax.plot(x, partial.mean(axis=0), drawstyle="steps-post", color=color,
                    linewidth=1.4)
            top = max(top, float(partial.max()))
            ax.text(0.995, 0.8, f"{name}: max {int(partial.max())}", transform=ax.transAxes,
                    ha="right", va="top", color=color, fontsize=8.5)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=3))
        for ax in axes:
            ax.set_ylim(-0.08 * top, top * 1.15)
            ax.set_xlim(0, first.horizon / per)
        axes[-1].set_xlabel(f"simulated time ({unit})")
        fig.supylabel("units below minimum, holding pods")
        return fig

    _save(_styled(draw), path)
    return Plot(path, "Partially placed units over time",
                "One panel per policy, on one scale: units holding some pods while still "
                "below their minimum (mean over seeds; the band is the range). A gang "
                "scheduler keeps this at zero; a rising staircase means partial placements "
                "pile up. Deadlocked pairs are in the table.")


def draw_all(study: Study, summaries: Mapping[str, Mapping[str, Any]],
             out_dir: Path) -> list[Plot]:
    """Write every plot into ``out_dir``, in the order the report shows them."""
    plots: list[Plot] = [
        allocation_plot(study, out_dir / "gpu_allocation.png"),
        wait_cdf_plot(study, out_dir / "wait_cdf.png"),
        gpu_hours_plot(study, summaries, out_dir / "gpu_hours.png"),
        partial_units_plot(study, out_dir / "partial_units.png"),
    ]
    return plots


__all__ = [
    "POLICY_COLORS",
    "Plot",
    "allocation_plot",
    "draw_all",
    "gpu_hours_plot",
    "partial_units_plot",
    "policy_color",
    "time_unit",
    "wait_cdf_plot",
]
