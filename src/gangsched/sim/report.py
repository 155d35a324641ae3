"""Write a study's report (every policy over several seeds): ``summary.json``,
``units.csv``, ``timeseries.csv``, PNG plots and a self-contained ``report.html``; and
the terminal comparison table (means with 95% intervals, fitting 80 columns).

``report.html`` has no scripts and loads nothing: the plots are inlined as base64 data URIs
and the CSS is inline, so the file can be mailed or opened offline.

The metrics the table shows, their labels, units and which direction is better live in
:data:`METRICS`; keys of the summary not listed there are shown after them, unhighlighted.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rich import box
from rich.table import Table

from gangsched.api.files import write_atomic
from gangsched.sim.result import Sample, Study, UnitRecord
from gangsched.sim.stats import verdict

if TYPE_CHECKING:
    from gangsched.sim.plots import Plot

Better = Literal["higher", "lower"] | None
Kind = Literal["count", "fraction", "duration", "ms", "gpu_hours", "number"]


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    kind: Kind
    better: Better
    help: str
    required: bool = False  # always a row, else only when present
    main: bool = True  # in the report's main table; else under "more"
    terminal: bool = True  # in the terminal table (main metrics only)


def _m(key: str, label: str, kind: Kind, better: Better, help: str, *, required: bool = False,
       main: bool = True, terminal: bool = True) -> Metric:
    return Metric(key, label, kind, better, help, required, main, terminal and main)


METRICS: tuple[Metric, ...] = (
    _m("units", "units", "count", None, "scheduling units arriving after the warm-up",
       required=True, terminal=False),
    _m("gpu_useful_topology_mean", "GPU useful", "fraction", "higher",
       "share of GPUs held by units whose whole minimum runs with every required topology "
       "constraint holding", required=True),
    _m("gpu_useful_mean", "useful (pods)", "fraction", "higher",
       "the same counting pods only, ignoring topology", required=True),
    _m("gpu_allocation_mean", "GPU allocated", "fraction", None,
       "share of GPUs bound to pods, useful or not", required=True),
    _m("wasted_gpu_hours", "wasted GPU-h", "gpu_hours", "lower",
       "GPU-hours held by units below their minimum", required=True),
    _m("locality", "locality", "fraction", "higher",
       "share of admitted units inside their narrowest feasible domain", required=True),
    _m("locality_held", "locality held", "fraction", "higher",
       "the same over time, on the pods each unit at its minimum holds", required=True),
    _m("wait_p95_all", "wait p95 (all)", "duration", "lower",
       "95th percentile wait over every unit; one never admitted waits to the end",
       required=True),
    _m("never_admitted", "never admit", "count", "lower",
       "units that never reached their minimum", required=True),
    _m("deadlocked_pairs", "deadlock pairs", "count", "lower",
       "most pairs at once of partial units each needing what the other holds",
       required=True),
    _m("partial_units_max", "partial units", "count", "lower",
       "most units holding pods below their minimum at once", required=True),
    _m("decision_latency_p50_ms", "decision p50", "ms", "lower",
       "engine time per placement decision (wall clock)", required=True),
    # in the report's main table, not in the terminal
    _m("admitted", "admitted", "count", "higher",
       "units that reached their minimum during the run", required=True, terminal=False),
    _m("wait_p50_all", "wait p50 (all)", "duration", "lower",
       "median wait over every unit; one never admitted waits to the end", required=True,
       terminal=False),
    _m("wait_p99_all", "wait p99 (all)", "duration", "lower",
       "99th percentile wait over every unit", required=True, terminal=False),
    _m("wait_p50", "wait p50 (admitted)", "duration", "lower",
       "median wait from arrival to minimum, admitted units only", required=True,
       terminal=False),
    _m("wait_p95", "wait p95 (admitted)", "duration", "lower", "admitted units only",
       required=True, terminal=False),
    _m("wait_p99", "wait p99 (admitted)", "duration", "lower", "admitted units only",
       required=True, terminal=False),
    _m("deadlocked_units", "deadlocked units", "count", "lower",
       "most partial units at once that could complete only if another one left",
       required=True, terminal=False),
    _m("useful_gpu_hours", "useful GPU-h (count)", "gpu_hours", "higher",
       "GPU-hours held by units at or above their minimum", terminal=False),
    _m("broken_topology_gpu_hours", "topology-broken GPU-h", "gpu_hours", "lower",
       "GPU-hours held at the minimum with a required topology broken", terminal=False),
    _m("completion_p50", "completion p50", "duration", "lower",
       "arrival to finish, finished jobs", terminal=False),
    _m("pd_distance_mean", "prefill-decode distance", "number", "lower",
       "mean topology levels between prefill and decode (0 = same host)", terminal=False),
    _m("decision_latency_p99_ms", "decision p99", "ms", "lower",
       "engine time per placement decision (wall clock)", required=True, terminal=False),
    _m("preemptions", "preemptions", "count", "lower", "preemption events", required=True,
       terminal=False),
    # the rest: in summary.json, and under "more metrics" in the report
    _m("unadmitted", "never admitted (old key)", "count", "lower",
       "units never at their minimum", main=False),
    _m("finished", "finished jobs", "count", "higher", "finite jobs that completed",
       main=False),
    _m("pods_desired", "pods desired", "count", None, "sum of desired pods over units",
       main=False),
    _m("cpu_allocation_mean", "CPU allocation, mean", "fraction", None,
       "share of CPU bound to pods", main=False),
    _m("gpu_hours", "GPU-hours held", "gpu_hours", None, "useful plus wasted", main=False),
    _m("partial_units_end", "partial units at end", "count", "lower",
       "units below their minimum holding pods when the run ended", main=False),
    _m("partial_unit_hours", "partial unit-hours", "number", "lower",
       "hours units spent holding pods below their minimum, summed", main=False),
    _m("deadlocked_units_end", "deadlocked units at end", "count", "lower",
       "deadlocked units when the run ended", main=False),
    _m("pending_units_end", "pending units at end", "count", "lower",
       "units waiting when the run ended", main=False),
    _m("wait_mean", "time to admission, mean", "duration", "lower", "admitted units",
       main=False),
    _m("completion_p95", "completion time p95", "duration", "lower",
       "arrival to finish, finished jobs", main=False),
    _m("completion_mean", "completion time, mean", "duration", "lower",
       "arrival to finish, finished jobs", main=False),
    _m("locality_mean", "locality score, mean", "number", "higher",
       "per-unit 1 / (1 + levels wider than needed)", main=False),
    _m("locality_wider_1", "one level wider than needed", "fraction", "lower",
       "admitted units", main=False),
    _m("locality_wider_2", "two or more levels wider", "fraction", "lower",
       "admitted units", main=False),
    _m("fragmentation_mean", "fragmentation, mean", "fraction", "lower",
       "share of free GPUs on partly used nodes", main=False),
    _m("decisions", "placement decisions", "count", None, "engine searches", main=False),
    _m("decision_latency_mean_ms", "decision latency, mean", "ms", "lower",
       "wall clock", main=False),
    _m("evictions", "evictions", "count", "lower", "pods evicted", main=False),
    _m("cycles", "scheduling cycles", "count", None, "", main=False),
    _m("wall_seconds", "simulation wall time", "duration", None,
       "wall-clock time to simulate this policy", main=False),
)
KNOWN = {m.key for m in METRICS}

HOW_TO_READ = (
    "Each column is one scheduling policy replaying the same traces on the same simulated "
    "cluster; only the scheduling algorithm differs. Every number is the mean over the "
    "seeds with its 95% Student-t interval (mean ± half-width); the first hours are a "
    "warm-up and are not measured. A cell is marked best only when its interval does not "
    "overlap the runner-up's; when they overlap the leaders are a tie, and the difference "
    "is within the noise between seeds. A unit counts as useful only when its whole minimum "
    "runs with every required topology constraint holding; a unit never admitted counts as "
    "waiting until the end of the run. Decision latency is wall-clock time of this "
    "machine, not simulated time."
)

FILES = (
    ("summary.json", "per policy: each metric's mean over seeds, its 95% interval (ci) and "
                     "per-seed values (per_seed)"),
    ("units.csv", "one row per unit per policy per seed: arrival, admission, finish, waste, "
                  "locality"),
    ("timeseries.csv", "one row per sample per policy per seed: allocation, useful, partial "
                       "and pending units"),
    ("*.png", "the plots above, one file each"),
)


# -- formatting ------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    """A finite number, or None (missing, null, NaN, booleans and non-numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds:.2f} s" if seconds else "0 s"
    if seconds < 120:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _guess_kind(key: str) -> Kind:
    if key.endswith("_ms"):
        return "ms"
    if key.endswith("_hours"):
        return "gpu_hours"
    if any(w in key for w in ("wait", "completion", "seconds", "_time")):
        return "duration"
    return "number"


def format_value(value: Any, kind: Kind) -> str:
    """A summary value as the report shows it ("—" for missing or null)."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    number = _number(value)
    if number is None:
        return "—" if isinstance(value, float) else str(value)
    if kind == "count":
        return f"{number:,.0f}" if number == int(number) else f"{number:,.1f}"
    if kind == "fraction":
        return f"{number * 100:.1f}%"
    if kind == "duration":
        return format_duration(number)
    if kind == "ms":
        digits = 2 if number < 10 else 1 if number < 100 else 0
        return f"{number:,.{digits}f} ms"
    if kind == "gpu_hours":
        return f"{number:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{number:,.2f}" if abs(number) < 1e6 else f"{number:.3g}"


def _duration_unit(seconds: float) -> tuple[str, float]:
    if seconds < 120:
        return "s", 1.0
    if seconds < 2 * 3600:
        return "m", 60.0
    return "h", 3600.0


def _short(x: float) -> str:
    """At most four significant characters: 0.31, 4.2, 42, 420, 4.2k."""
    a = abs(x)
    if a >= 9999.5:
        return f"{x / 1000:.0f}k"
    if a >= 99.95:
        return f"{x:.0f}"
    if a >= 9.995:
        return f"{x:.1f}" if a < 99.5 else f"{x:.0f}"
    return f"{x:.2f}" if a < 1 else f"{x:.1f}"


def _two(x: float) -> str:
    """Two significant digits (a half-width): 11, 4.3, 0.42, 1.2k."""
    a = abs(x)
    if a >= 999.5:
        return f"{x / 1000:.1f}k" if a < 9950 else f"{x / 1000:.0f}k"
    if a >= 9.95:
        return f"{x:.0f}"
    if a >= 0.995:
        return f"{x:.1f}"
    return f"{x:.2f}"


def format_ci(mean: Any, ci: Any, kind: Kind, *, compact: bool = False) -> str:
    """``mean ± half-width`` of a metric (just the mean when the interval is a point)."""
    m = _number(mean)
    if m is None:
        return "—"
    pair = ci if isinstance(ci, list | tuple) and len(ci) == 2 else (None, None)
    lo, hi = _number(pair[0]), _number(pair[1])
    half = (hi - lo) / 2 if lo is not None and hi is not None else 0.0
    if not compact:
        text = format_value(mean, kind)
        if half <= 0:
            return text
        return f"{text} ± {format_value(half, kind if kind != 'count' else 'number')}"
    if kind == "fraction":  # the unit (%, ms) is in the row's label
        body, unit, scale = _short(m * 100), "", 100.0
    elif kind == "duration":
        unit, per = _duration_unit(max(m, half))
        body, scale = _short(m / per), 1.0 / per
    elif kind == "ms":
        body, unit, scale = _short(m), "", 1.0
    elif kind in ("count", "gpu_hours") and float(m).is_integer():
        body, unit, scale = f"{m:,.0f}", "", 1.0
    else:
        body, unit, scale = _short(m), "", 1.0
    return body + (f"±{_two(half * scale)}" if half > 0 else "") + unit


@dataclass(frozen=True)
class Row:
    metric: Metric
    cells: list[str]  # one formatted value per policy, in policy order
    best: str | None  # the policy whose interval beats the runner-up's
    tied: set[str]  # the leaders whose intervals overlap (no clear best)


def comparison_rows(summary: Mapping[str, Any], *, compact: bool = False
                    ) -> tuple[list[str], list[Row]]:
    """(policy names, rows) of the comparison table from a study summary."""
    per_policy: Mapping[str, Mapping[str, Any]] = summary.get("policies", {})
    names = list(per_policy)
    present: set[str] = set()
    for values in per_policy.values():
        present.update(k for k in values if k not in ("ci", "per_seed"))
    metrics = [m for m in METRICS if m.required or m.key in present]
    extras = sorted(
        k for k in present - KNOWN
        if all(_scalar(v.get(k)) for v in per_policy.values())
    )
    metrics += [_m(k, k.replace("_", " "), _guess_kind(k), None, "", main=False)
                for k in extras]
    rows: list[Row] = []
    for m in metrics:
        cells = [format_ci(per_policy[p].get(m.key), (per_policy[p].get("ci") or {}).get(m.key),
                           m.kind, compact=compact) for p in names]
        best, tied = verdict(per_policy, m.key, m.better)
        rows.append(Row(m, cells, best, tied))
    return names, rows


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float)


# -- what the numbers say --------------------------------------------------------------------

HEADLINE = ("gpu_useful_topology_mean", "locality", "wait_p95_all", "never_admitted",
            "wasted_gpu_hours", "deadlocked_pairs")


def separability(summary: Mapping[str, Any]) -> str | None:
    """Why this comparison cannot separate the policies, or None when it can."""
    per_policy: Mapping[str, Mapping[str, Any]] = summary.get("policies", {})
    if len(per_policy) < 2:
        return None
    first = next(iter(per_policy.values()))
    units = _number(first.get("units")) or 0
    pods = _number(first.get("pods_desired")) or 0
    reasons = []
    if units and pods <= units:
        reasons.append("every unit is a single pod (the trace has no gangs), so gang and "
                       "topology handling play no part")
    idle = all((_number(s.get("never_admitted")) or 0) == 0
               and (_number(s.get("wait_p95_all")) or 0) <= 1.0 for s in per_policy.values())
    if idle:
        reasons.append("no policy ever made a unit wait or left one unadmitted (no "
                       "contention: every policy fits everything at once)")
    if not reasons:
        return None
    return ("This comparison cannot separate the policies: " + "; and ".join(reasons) + ". "
            "Differences below are noise or bookkeeping, not evidence for or against a "
            "policy; raise --load or use a scenario with gangs.")


def what_this_shows(summary: Mapping[str, Any]) -> list[str]:
    """Plain sentences from the numbers: who wins which headline metric, with intervals."""
    per_policy: Mapping[str, Mapping[str, Any]] = summary.get("policies", {})
    seeds = summary.get("seeds") or []
    out = []
    by_key = {m.key: m for m in METRICS}
    for key in HEADLINE:
        m = by_key[key]
        if not any(key in s for s in per_policy.values()):
            continue
        best, tied = verdict(per_policy, key, m.better)

        def value(name: str, m: Metric = m) -> str:
            s = per_policy[name]
            return format_ci(s.get(m.key), (s.get("ci") or {}).get(m.key), m.kind)

        if best is not None:
            others = [n for n in per_policy if n != best]
            runner = min(others, key=lambda n: _rank(per_policy[n].get(key), m.better))
            out.append(f"{m.label}: {best} is best with {value(best)}, ahead of {runner} "
                       f"({value(runner)}), with no overlap of the 95% intervals.")
        elif tied:
            names = sorted(tied)
            out.append(f"{m.label}: a tie between {', '.join(names)} "
                       f"({'; '.join(f'{n} {value(n)}' for n in names)}): the intervals "
                       "overlap.")
        else:
            out.append(f"{m.label}: no difference between the policies.")
    note = separability(summary)
    if note:
        out.insert(0, note)
    if len(seeds) < 3:
        out.append(f"Only {len(seeds)} seed{'s' if len(seeds) != 1 else ''}: intervals are "
                   "wide or undefined; run --seeds 5 or more before deciding.")
    return out


def _rank(value: Any, better: Better) -> float:
    n = _number(value)
    if n is None:
        return math.inf
    return -n if better == "higher" else n


# -- terminal table --------------------------------------------------------------------------


def table_title(summary: Mapping[str, Any]) -> str:
    seeds = summary.get("seeds") or []
    return (f"{summary.get('scenario')}: {len(seeds)} seed{'s' if len(seeds) != 1 else ''}, "
            f"{summary.get('nodes', 0):,} nodes, {summary.get('gpus', 0):,} GPUs, "
            f"{format_duration(float(summary.get('horizon') or 0))} "
            f"(warm-up {format_duration(float(summary.get('warmup') or 0))})")


TABLE_CAPTION = "mean±95% half-width over seeds; * best (intervals apart), = tie"


def comparison_table(summary: Mapping[str, Any], *, all_metrics: bool = False) -> Table:
    """Policies as columns, the headline metrics as rows (every metric with
    ``all_metrics``): mean±half-width over seeds, ``*`` best (intervals apart), ``=`` tied
    leaders. Fits 80 columns for the five built-in policies."""
    names, rows = comparison_rows(summary, compact=True)
    if not all_metrics:
        rows = [r for r in rows if r.metric.terminal]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True)
    table.add_column("metric", no_wrap=True, max_width=16)
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        arrow = {"higher": "↑", "lower": "↓", None: ""}[row.metric.better]
        cells = []
        for name, cell in zip(names, row.cells, strict=True):
            if name == row.best:
                cells.append(f"[bold green]{cell}*[/]")
            elif name in row.tied:
                cells.append(f"[yellow]{cell}=[/]")
            else:
                cells.append(cell)
        unit = {"fraction": " %", "ms": " ms"}.get(row.metric.kind, "")
        table.add_row(row.metric.label + unit + arrow, *cells)
    return table


# -- files -----------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Plain JSON values: numpy scalars unwrapped, NaN and infinities as null."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [_jsonable(v) for v in items]
    if isinstance(value, Path):
        return str(value)
    tolist = getattr(value, "tolist", None)  # numpy scalar or array
    if callable(tolist) and not isinstance(value, str | bytes | int | float):
        return _jsonable(tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _csv_value(value: Any) -> Any:
    return "" if value is None else value


def _write_csv(path: Path, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_value(row.get(k)) for k in columns})


def _columns(base: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    columns = list(base)
    for row in rows:
        columns += [k for k in row if k not in columns]
    return columns


def _ablation_html(ablation: Mapping[str, Any]) -> list[str]:
    """The section on what each mechanism buys (``--ablation``)."""
    from gangsched.sim.ablation import METRICS

    out = ['<h2 id="ablation">What each mechanism buys</h2>',
           '<p class="how">gangsched with one mechanism switched off, on the same seeds: '
           "each cell is the mean difference <i>off minus on</i> over the seeds with its 95% "
           "interval. Green: switching it off makes gangsched worse (the mechanism helps); "
           "red: better; grey: the interval includes 0 (no difference shown).</p>",
           '<table class="ablation"><thead><tr><th>switched off</th>',
           *(f"<th>{_e(metric)}</th>" for metric, _ in METRICS), "</tr></thead><tbody>"]
    for knob, row in ablation.items():
        cells = []
        for metric, _ in METRICS:
            m = row["metrics"].get(metric, {})
            d = m.get("off_minus_on")
            if d is None:
                cells.append("<td>—</td>")
                continue
            worse = (d < 0) if m.get("better") == "higher" else (d > 0)
            color = ("#888" if not m.get("significant") else
                     "#1a7f37" if worse else "#cf222e")
            cells.append(f'<td style="color:{color}">{d:+.4g} '
                         f"[{m['lo']:+.4g}, {m['hi']:+.4g}]</td>")
        out.append(f"<tr><td>{_e(knob)}=false: {_e(row['switches_off'])}</td>"
                   + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return out


def write_report(study: Study, out_dir: Path,
                 summary: Mapping[str, Any] | None = None,
                 fidelity: Sequence[Mapping[str, str]] = ()) -> list[Path]:
    """Write every report file into ``out_dir`` (created if missing); return their paths:
    ``summary.json``, ``units.csv``, ``timeseries.csv``, the PNG plots, ``report.html``.

    ``summary`` is the study's summary, passed when the caller already computed it;
    ``fidelity`` rows (policy, upstream, modelled, not modelled) go into the page."""
    from gangsched.sim import plots  # matplotlib loads only when a report is written
    from gangsched.sim.metrics import study_summary

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = _jsonable(study_summary(study) if summary is None else summary)
    written: list[Path] = []

    path = out_dir / "summary.json"
    write_atomic(path, json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n")
    written.append(path)

    unit_rows = study.unit_rows()
    path = out_dir / "units.csv"
    _write_csv(path, _columns(["seed", "policy", *(f.name for f in fields(UnitRecord)),
                               "wait"], unit_rows), unit_rows)
    written.append(path)

    sample_fields = [f.name for f in fields(Sample)]
    path = out_dir / "timeseries.csv"
    _write_csv(path, ["seed", "policy", *sample_fields], (
        {"seed": result.seed, "policy": run.policy,
         **{k: getattr(s, k) for k in sample_fields}}
        for result in study.runs for run in result.policies
        for s in sorted(run.samples, key=lambda s: s.time)
    ))
    written.append(path)

    drawn = plots.draw_all(study, summary.get("policies", {}), out_dir)
    written += [p.path for p in drawn]

    path = out_dir / "report.html"
    write_atomic(path, render_html(study, summary, drawn, fidelity))
    written.append(path)
    return written


# -- HTML ------------------------------------------------------------------------------------

CSS = """
:root { color-scheme: light; }
body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif;
  color: #1f2328; background: #fff; margin: 0; line-height: 1.45; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 1.7em; margin: 0 0 4px; }
h2 { font-size: 1.25em; margin: 32px 0 10px; border-bottom: 1px solid #d0d7de;
  padding-bottom: 4px; }
h3 { font-size: 1.05em; margin: 18px 0 4px; }
.meta { color: #57606a; margin: 0 0 14px; }
.meta b { color: #1f2328; }
p.scenario { margin: 0 0 8px; }
p.how { background: #f6f8fa; border-left: 4px solid #8c959f; padding: 10px 14px;
  margin: 14px 0; }
details { margin: 12px 0; }
details summary { cursor: pointer; color: #424a53; font-weight: 600; margin-bottom: 6px; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; width: 100%; }
th, td { padding: 5px 10px; border-bottom: 1px solid #e5e7eb; text-align: right;
  vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
thead th { border-bottom: 2px solid #57606a; white-space: nowrap; }
td.metric .help { display: block; color: #6e7781; font-size: 0.82em; font-weight: normal; }
td.metric { font-weight: 600; }
td.best { background: #dafbe1; font-weight: 700; color: #116329; }
td.tie { background: #fff8c5; }
table.fidelity td { text-align: left; font-size: 0.9em; }
.dir { color: #6e7781; font-weight: normal; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px;
  margin-right: 6px; vertical-align: -0.05em; }
a.policy { color: inherit; text-decoration: none; }
figure { margin: 18px 0 28px; }
figure img { max-width: 100%; height: auto; border: 1px solid #e5e7eb; }
figcaption { color: #424a53; font-size: 0.93em; margin-top: 6px; }
figcaption b { color: #1f2328; }
dl.params { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px;
  margin: 6px 0; }
dl.params dt { color: #57606a; }
dl.params dd { margin: 0; font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
.policy-desc { margin: 0 0 6px; }
.small { color: #6e7781; font-size: 0.85em; }
ul.files code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
@media print { figure { break-inside: avoid; } }
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _anchor(name: str) -> str:
    return "policy-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _html_table(names: Sequence[str], rows: Sequence[Row], cls: str) -> list[str]:
    from gangsched.sim.plots import policy_color

    out = [f'<table class="{cls}">', "<thead><tr>", "<th>metric</th>"]
    for name in names:
        out.append(f'<th><a class="policy" href="#{_anchor(name)}">'
                   f'<span class="swatch" style="background:{policy_color(name)}"></span>'
                   f"{_e(name)}</a></th>")
    out += ["</tr></thead>", "<tbody>"]
    for row in rows:
        m = row.metric
        arrow = {"higher": " ↑", "lower": " ↓", None: ""}[m.better]
        hint = {"higher": "higher is better", "lower": "lower is better", None: ""}[m.better]
        help_text = "; ".join(t for t in (m.help, hint) if t)
        cells = [f'<td class="metric">{_e(m.label)}<span class="dir">{arrow}</span>'
                 + (f'<span class="help">{_e(help_text)}</span>' if help_text else "")
                 + "</td>"]
        for name, cell in zip(names, row.cells, strict=True):
            cls_attr = (' class="best"' if name == row.best
                        else ' class="tie"' if name in row.tied else "")
            cells.append(f'<td{cls_attr} data-policy="{_e(name)}">{_e(cell)}</td>')
        out.append(f'<tr id="m-{_e(m.key)}">{"".join(cells)}</tr>')
    out += ["</tbody>", "</table>"]
    return out


def render_html(study: Study, summary: Mapping[str, Any], drawn: Sequence[Plot],
                fidelity: Sequence[Mapping[str, str]] = ()) -> str:
    """The self-contained page; the PNGs of ``drawn`` are inlined."""
    from gangsched import __version__
    from gangsched.sim.plots import policy_color

    first = study.first
    names, rows = comparison_rows(summary)
    title = f"gangsched simulation: {study.scenario}"
    seeds = summary.get("seeds") or study.seeds
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        f"<h1>{_e(title)}</h1>",
        '<p class="meta">'
        f"scenario <b>{_e(study.scenario)}</b> · seeds <b>{_e(', '.join(map(str, seeds)))}</b>"
        f" · <b>{first.nodes:,}</b> nodes, <b>{first.gpus:,}</b> GPUs · "
        f"<b>{_e(format_duration(first.horizon))}</b> simulated, the first "
        f"<b>{_e(format_duration(first.warmup))}</b> warm-up · "
        f"<b>{len(names)}</b> policies</p>",
    ]
    description = first.parameters.get("description")
    if isinstance(description, str):
        out.append(f'<p class="scenario">{_e(description)}</p>')
    knobs = {k: v for k, v in summary.get("parameters", {}).items() if k != "description"}
    if knobs:
        out += ["<details>", f"<summary>scenario parameters ({len(knobs)})</summary>",
                '<dl class="params">']
        for key, value in sorted(knobs.items()):
            shown = value if isinstance(value, str) else json.dumps(_jsonable(value),
                                                                    sort_keys=True)
            out.append(f"<dt>{_e(key)}</dt><dd>{_e(shown)}</dd>")
        out += ["</dl>", "</details>"]

    out += ['<h2 id="shows">What this shows</h2>', '<ul class="shows">']
    out += [f"<li>{_e(line)}</li>" for line in what_this_shows(summary)]
    out += ["</ul>", "<h2>How to read this</h2>", f'<p class="how">{_e(HOW_TO_READ)}</p>']

    out += ['<h2 id="comparison">Comparison</h2>',
            *_html_table(names, [r for r in rows if r.metric.main], "comparison"),
            '<p class="small">Mean ± 95% half-width over the seeds. Green: best, its interval '
            "apart from the runner-up's. Yellow: tied leaders (intervals overlap). ↑ higher "
            "is better, ↓ lower is better. “—”: not defined.</p>"]
    more = [r for r in rows if not r.metric.main]
    if more:
        out += ["<details>", f"<summary>{len(more)} more metrics</summary>",
                *_html_table(names, more, "more"), "</details>"]

    out.append("<h2>Plots</h2>")
    for plot in drawn:
        out += [
            "<figure>",
            f'<img src="{_data_uri(plot.path)}" alt="{_e(plot.title)}">',
            f"<figcaption><b>{_e(plot.title)}.</b> {_e(plot.caption)}</figcaption>",
            "</figure>",
        ]

    ablation = summary.get("ablation")
    if ablation:
        out += _ablation_html(ablation)

    if fidelity:
        out += ['<h2 id="fidelity">How faithful the peers are</h2>',
                '<table class="fidelity"><thead><tr><th>policy</th><th>follows</th>'
                "<th>modelled</th><th>not modelled</th></tr></thead><tbody>"]
        for row in fidelity:
            out.append(f"<tr><td>{_e(row['policy'])}</td><td>{_e(row['upstream'])}</td>"
                       f"<td>{_e(row['modelled'])}</td><td>{_e(row['not_modelled'])}</td></tr>")
        out += ["</tbody></table>"]

    out.append("<h2>The policies compared</h2>")
    for run in first.policies:
        out += [
            f'<h3 id="{_anchor(run.policy)}"><span class="swatch" '
            f'style="background:{policy_color(run.policy)}"></span>{_e(run.policy)}</h3>',
            f'<p class="policy-desc">{_e(run.description)}</p>',
        ]

    out += ["<h2>Files</h2>", '<ul class="files">']
    for name, what in FILES:
        out.append(f"<li><code>{_e(name)}</code>: {_e(what)}</li>")
    out += [
        "</ul>",
        f'<p class="small">Written by gangsched {_e(__version__)}. This page is '
        "self-contained: no scripts, images inlined.</p>",
        "</main>",
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(out)
