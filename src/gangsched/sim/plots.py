"""The report's PNG plots, drawn from a :class:`SimResult` with matplotlib's Agg canvas.

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

import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib import style as mpl_style
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, PercentFormatter

from gangsched.sim.result import PolicyRun, SimResult

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


def gpu_hours(run: PolicyRun, gpus: int, horizon: float) -> tuple[float, float]:
    """(useful, wasted) GPU-hours integrated from the samples.

    Each sample holds until the next one (the last one until the horizon); useful is
    ``gpu_useful``, wasted is ``gpu_allocated - gpu_useful``, both fractions of ``gpus``.
    """
    samples = sorted(run.samples, key=lambda s: s.time)
    useful = wasted = 0.0
    for i, s in enumerate(samples):
        end = samples[i + 1].time if i + 1 < len(samples) else max(horizon, s.time)
        span = max(0.0, end - s.time)
        useful += s.gpu_useful * span
        wasted += max(0.0, s.gpu_allocated - s.gpu_useful) * span
    return useful * gpus / 3600.0, wasted * gpus / 3600.0


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _save(fig: Figure, path: Path) -> None:
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png", dpi=DPI, metadata={"Software": None})


def _figure(height: float) -> Figure:
    return Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")


def _empty(fig: Figure, message: str) -> None:
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", color="#666666")


def _styled(draw: Callable[[], Figure]) -> Figure:
    with mpl_style.context(["default", STYLE]):  # defaults, not the user's matplotlibrc
        return draw()


# -- the plots -----------------------------------------------------------------------------


def allocation_plot(result: SimResult, path: Path) -> Plot:
    """GPU allocation over time, one panel per policy: solid allocated, dashed useful, the
    gap between them shaded as waste, CPU allocation dotted."""
    runs = result.policies
    unit, per = time_unit(result.horizon)

    def draw() -> Figure:
        fig = _figure(max(2.6, 0.9 + PANEL_HEIGHT * len(runs)))
        if not runs:
            _empty(fig, "no policies")
            return fig
        axes = fig.subplots(len(runs), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
        for ax, run in zip(axes, runs, strict=True):
            color = policy_color(run.policy)
            samples = sorted(run.samples, key=lambda s: s.time)
            ax.set_title(run.policy, loc="left", color=color)
            ax.set_ylim(0, 1.02)
            ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
            ax.set_xlim(0, max(result.horizon, samples[-1].time if samples else 0.0) / per)
            if not samples:
                ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center",
                        va="center", color="#666666")
                continue
            t = [s.time / per for s in samples]
            alloc = [s.gpu_allocated for s in samples]
            useful = [s.gpu_useful for s in samples]
            ax.fill_between(t, useful, alloc, step="post", color=WASTE_COLOR, alpha=0.25,
                            linewidth=0)
            # allocated wide and pale, useful dashed on top: both stay visible where equal
            ax.plot(t, alloc, drawstyle="steps-post", color=color, linewidth=2.4, alpha=0.45)
            ax.plot(t, useful, drawstyle="steps-post", color=color, linewidth=1.3,
                    linestyle=(0, (4, 2)))
            ax.plot(t, [s.cpu_allocated for s in samples], drawstyle="steps-post",
                    color="#777777", linewidth=0.9, linestyle=":")
        fig.legend(handles=[
            Line2D([], [], color=INK, linewidth=2.4, alpha=0.45, label="GPU allocated"),
            Line2D([], [], color=INK, linewidth=1.3, linestyle=(0, (4, 2)),
                   label="GPU useful (units at or above their minimum)"),
            Patch(color=WASTE_COLOR, alpha=0.25, linewidth=0,
                  label="waste (held below minimum)"),
            Line2D([], [], color="#777777", linewidth=0.9, linestyle=":",
                   label="CPU allocated"),
        ], loc="outside upper center", ncols=4, fontsize=8.5)
        axes[-1].set_xlabel(f"simulated time ({unit})")
        fig.supylabel("share of cluster")
        return fig

    _save(_styled(draw), path)
    return Plot(path, "GPU allocation over time",
                "One panel per policy. Solid: share of the cluster's GPUs bound to pods. "
                "Dashed: the share held by units at or above their minimum (useful). "
                "The red band between them is waste: GPUs held by partially placed units "
                "that cannot run yet. Look for a band that stays open (a deadlock) and for "
                "a lower dashed line where a policy admits less. Dotted grey: CPU "
                "allocation.")


def wait_cdf_plot(result: SimResult, path: Path) -> Plot:
    """Empirical CDF of the time to admission, over all units (units never admitted keep the
    curve below 100%)."""
    waits: dict[str, list[float]] = {}
    totals: dict[str, int] = {}
    for run in result.policies:
        waits[run.policy] = sorted(w for u in run.units if (w := u.wait) is not None)
        totals[run.policy] = len(run.units)
    longest = max((w[-1] for w in waits.values() if w), default=0.0)
    unit, per = time_unit(longest if longest > 0 else 1.0)
    right = (longest / per) * 1.05 if longest > 0 else 1.0

    def draw() -> Figure:
        fig = _figure(4.2)
        if not any(totals.values()):
            _empty(fig, "no units")
            return fig
        ax = fig.add_subplot()
        for run in result.policies:
            total = totals[run.policy]
            if not total:
                continue
            ws = waits[run.policy]
            xs = [0.0, *(w / per for w in ws), right]
            ys = [0.0, *((i + 1) / total for i in range(len(ws))), len(ws) / total]
            ax.plot(xs, ys, drawstyle="steps-post", color=policy_color(run.policy),
                    linewidth=1.6, label=f"{run.policy} ({len(ws)}/{total} admitted)")
        ax.set_xlim(-0.015 * right, right)  # a jump at zero wait stays off the y axis
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel(f"time from arrival to admission ({unit})")
        ax.set_ylabel("share of units admitted")
        ax.set_title("Time to admission (CDF)", loc="left")
        fig.legend(loc="outside right upper")
        return fig

    _save(_styled(draw), path)
    return Plot(path, "Time to admission",
                "For each policy, the share of all units that reached their minimum within "
                "a given time of arriving. Higher and further left is better. A curve that "
                "ends below 100% means some units were never admitted during the run; "
                "compare where each curve ends, not only how steeply it rises.")


def gpu_hours_plot(result: SimResult, summaries: Mapping[str, Mapping[str, Any]],
                   path: Path) -> Plot:
    """Useful versus wasted GPU-hours per policy, side by side with separate scales.

    Wasted is ``wasted_gpu_hours`` from the summary (the table's number); useful is
    ``useful_gpu_hours`` from the summary when present, else integrated from the samples.
    """
    names = [run.policy for run in result.policies]
    useful: list[float] = []
    wasted: list[float] = []
    for run in result.policies:
        summary = summaries.get(run.policy, {})
        integ_useful, integ_wasted = gpu_hours(run, result.gpus, result.horizon)
        u = _number(summary.get("useful_gpu_hours"))
        w = _number(summary.get("wasted_gpu_hours"))
        useful.append(integ_useful if u is None else u)
        wasted.append(integ_wasted if w is None else w)

    def draw() -> Figure:
        fig = _figure(max(2.4, 1.2 + 0.45 * len(names)))
        if not names:
            _empty(fig, "no policies")
            return fig
        left, right = fig.subplots(1, 2, sharey=True)
        ys = list(range(len(names)))
        colors = [policy_color(n) for n in names]
        for ax, values, title, bar_colors in (
            (left, useful, "Useful GPU-hours (more is better)", colors),
            (right, wasted, "Wasted GPU-hours (less is better)", [WASTE_COLOR] * len(names)),
        ):
            ax.barh(ys, values, color=bar_colors, height=0.6)
            top = max(values, default=0.0)
            ax.set_xlim(0, top * 1.25 if top > 0 else 1.0)
            for y, v in zip(ys, values, strict=True):
                ax.text(v, y, f" {v:,.1f}", va="center", ha="left", fontsize=9)
            ax.set_title(title, loc="left")
            ax.grid(axis="y", visible=False)
            ax.set_xlabel("GPU-hours")
        left.set_yticks(ys, names)
        left.invert_yaxis()
        for label, color in zip(left.get_yticklabels(), colors, strict=True):
            label.set_color(color)
        return fig

    _save(_styled(draw), path)
    return Plot(path, "Useful versus wasted GPU-hours",
                "Left: GPU-hours held by units at or above their minimum, i.e. work that "
                "could run. Right: GPU-hours held by units below their minimum, which no "
                "workload could use (each side has its own scale, so a small waste is "
                "still visible). A hierarchical gang scheduler should show zero on the "
                "right.")


def partial_units_plot(result: SimResult, path: Path) -> Plot:
    """Partially placed units (solid) and deadlocked units (dashed) over time."""
    unit, per = time_unit(result.horizon)

    def draw() -> Figure:
        fig = _figure(3.6)
        if not any(run.samples for run in result.policies):
            _empty(fig, "no samples")
            return fig
        ax = fig.add_subplot()
        end = result.horizon
        for run in result.policies:
            samples = sorted(run.samples, key=lambda s: s.time)
            if not samples:
                continue
            end = max(end, samples[-1].time)
            color = policy_color(run.policy)
            t = [s.time / per for s in samples]
            ax.plot(t, [s.partial_units for s in samples], drawstyle="steps-post",
                    color=color, linewidth=1.4, label=f"{run.policy} partial")
            if any(s.deadlocked_units for s in samples):
                ax.plot(t, [s.deadlocked_units for s in samples], drawstyle="steps-post",
                        color=color, linewidth=1.2, linestyle=(0, (4, 2)),
                        label=f"{run.policy} deadlocked")
        ax.set_xlim(0, end / per)
        top = max((max(s.partial_units for s in run.samples)
                   for run in result.policies if run.samples), default=0)
        top = max(top, 1)
        ax.set_ylim(-0.04 * top, top * 1.08)  # a zero line stays clear of the x axis
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(f"simulated time ({unit})")
        ax.set_ylabel("units")
        ax.set_title("Units holding pods below their minimum", loc="left")
        fig.legend(loc="outside right upper", fontsize=8.5)
        return fig

    _save(_styled(draw), path)
    return Plot(path, "Partially placed units over time",
                "Solid: units holding some pods while still below their minimum. Dashed "
                "(only drawn when non-zero): partial units that could complete only if "
                "another partial unit left, i.e. deadlocked. A gang scheduler keeps both "
                "at zero; a rising staircase means partial placements pile up.")


def draw_all(result: SimResult, summaries: Mapping[str, Mapping[str, Any]],
             out_dir: Path) -> list[Plot]:
    """Write every plot into ``out_dir``, in the order the report shows them."""
    plots: list[Plot] = [
        allocation_plot(result, out_dir / "gpu_allocation.png"),
        wait_cdf_plot(result, out_dir / "wait_cdf.png"),
        gpu_hours_plot(result, summaries, out_dir / "gpu_hours.png"),
        partial_units_plot(result, out_dir / "partial_units.png"),
    ]
    return plots


__all__ = [
    "POLICY_COLORS",
    "Plot",
    "allocation_plot",
    "draw_all",
    "gpu_hours",
    "gpu_hours_plot",
    "partial_units_plot",
    "policy_color",
    "time_unit",
    "wait_cdf_plot",
]
