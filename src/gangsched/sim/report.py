"""Write a simulation's report: ``summary.json``, ``units.csv``, ``timeseries.csv``, PNG
plots and a self-contained ``report.html``; and the terminal comparison table.

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

from gangsched.sim.result import Sample, SimResult, UnitRecord

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
    required: bool = False  # always a row (the summary.json keys), else when present
    main: bool = True  # in the terminal table and the report's main table; else under "more"


def _m(key: str, label: str, kind: Kind, better: Better, help: str, *, required: bool = False,
       main: bool = True) -> Metric:
    return Metric(key, label, kind, better, help, required, main)


METRICS: tuple[Metric, ...] = (
    _m("units", "units", "count", None, "scheduling units in the trace", required=True),
    _m("admitted", "admitted", "count", "higher",
       "units that reached their minimum during the run", required=True),
    _m("gpu_allocation_mean", "GPU allocation, mean", "fraction", None,
       "share of GPUs bound to pods, useful or not", required=True),
    _m("gpu_useful_mean", "GPU useful, mean", "fraction", "higher",
       "share of GPUs held by units at or above their minimum", required=True),
    _m("useful_gpu_hours", "useful GPU-hours", "gpu_hours", "higher",
       "GPU-hours held by units at or above their minimum"),
    _m("wasted_gpu_hours", "wasted GPU-hours", "gpu_hours", "lower",
       "GPU-hours held by units below their minimum", required=True),
    _m("partial_units_max", "partial units, max", "count", "lower",
       "most units holding pods below their minimum at once", required=True),
    _m("deadlocked_units", "deadlocked units", "count", "lower",
       "most partial units at once that could complete only if another one left",
       required=True),
    _m("wait_p50", "time to admission p50", "duration", "lower",
       "median wait from arrival to minimum, admitted units", required=True),
    _m("wait_p95", "time to admission p95", "duration", "lower", "95th percentile wait",
       required=True),
    _m("wait_p99", "time to admission p99", "duration", "lower", "99th percentile wait",
       required=True),
    _m("completion_p50", "completion time p50", "duration", "lower",
       "arrival to finish, finished jobs"),
    _m("locality", "topology locality", "fraction", "higher",
       "share of admitted units inside their narrowest feasible domain", required=True),
    _m("pd_distance_mean", "prefill-decode distance", "number", "lower",
       "mean topology levels between prefill and decode (0 = same host)"),
    _m("decision_latency_p50_ms", "decision latency p50", "ms", "lower",
       "scheduler time per placement attempt (wall clock)", required=True),
    _m("decision_latency_p99_ms", "decision latency p99", "ms", "lower",
       "scheduler time per placement attempt (wall clock)", required=True),
    _m("preemptions", "preemptions", "count", "lower", "preemption events", required=True),
    # the rest: in summary.json, and under "more metrics" in the report
    _m("unadmitted", "never admitted", "count", "lower", "units never at their minimum",
       main=False),
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
    _m("fragmentation_mean", "fragmentation, mean", "fraction", "lower",
       "share of free GPUs on partly used nodes", main=False),
    _m("decisions", "placement attempts", "count", None, "scheduler decisions", main=False),
    _m("decision_latency_mean_ms", "decision latency, mean", "ms", "lower",
       "wall clock", main=False),
    _m("evictions", "evictions", "count", "lower", "pods evicted", main=False),
    _m("cycles", "scheduling cycles", "count", None, "", main=False),
    _m("wall_seconds", "simulation wall time", "duration", None,
       "wall-clock time to simulate this policy", main=False),
)
KNOWN = {m.key for m in METRICS}

HOW_TO_READ = (
    "Each column of the table is one scheduling policy replaying the same trace on the same "
    "simulated cluster with the same seed; only the scheduling algorithm differs. "
    "A unit is admitted once it holds at least its minimum pods; GPUs it holds before that "
    "are waste, because nothing can run on them. The highlighted cell in each row is the "
    "best value (rows where more is not simply better, such as total allocation, are not "
    "highlighted). Read waits together with the admitted count: a policy that admits fewer "
    "units can show shorter waits for the ones it does admit. Decision latency is wall-clock "
    "time of this machine, not simulated time. The plots below show the same run over time."
)

FILES = (
    ("summary.json", "the metrics in the table, per policy, machine-readable"),
    ("units.csv", "one row per unit per policy: arrival, admission, finish, waste, locality"),
    ("timeseries.csv", "one row per sample per policy: allocation, partial and pending units"),
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
    """A summary value as the table shows it ("—" for missing or null)."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    number = _number(value)
    if number is None:
        return "—" if isinstance(value, float) else str(value)
    if kind == "count":
        return f"{number:,.0f}" if number == int(number) else f"{number:,.2f}"
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


def best_policies(values: Mapping[str, Any], better: Better) -> set[str]:
    """The policies with the best value of one metric (ties all win); empty when there is no
    direction, fewer than two numbers to compare, or all are equal."""
    numbers = {p: n for p, v in values.items() if (n := _number(v)) is not None}
    if better is None or len(numbers) < 2 or len(set(numbers.values())) == 1:
        return set()
    target = max(numbers.values()) if better == "higher" else min(numbers.values())
    return {p for p, n in numbers.items() if n == target}


@dataclass(frozen=True)
class Row:
    metric: Metric
    cells: list[str]  # one formatted value per policy, in policy order
    best: set[str]


def comparison_rows(summary: Mapping[str, Any]) -> tuple[list[str], list[Row]]:
    """(policy names, rows) of the comparison table from a ``SimResult.summary()`` value."""
    per_policy: Mapping[str, Mapping[str, Any]] = summary.get("policies", {})
    names = list(per_policy)
    present: set[str] = set()
    for values in per_policy.values():
        present.update(values)
    metrics = [m for m in METRICS if m.required or m.key in present]
    extras = sorted(
        k for k in present - KNOWN
        if all(_scalar(v.get(k)) for v in per_policy.values())
    )
    metrics += [_m(k, k.replace("_", " "), _guess_kind(k), None, "", main=False)
                for k in extras]
    rows: list[Row] = []
    for m in metrics:
        values = {p: per_policy[p].get(m.key) for p in names}
        rows.append(Row(m, [format_value(values[p], m.kind) for p in names],
                        best_policies(values, m.better)))
    return names, rows


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float)


# -- terminal table --------------------------------------------------------------------------


def comparison_table(result: SimResult, summary: Mapping[str, Any] | None = None, *,
                     all_metrics: bool = False) -> Table:
    """Policies as columns, the key metrics as rows (every metric with ``all_metrics``), the
    best value per row in bold green.

    Pass ``summary`` (``result.summary()``) when it is already computed.
    """
    summary = result.summary() if summary is None else summary
    names, rows = comparison_rows(summary)
    if not all_metrics:
        rows = [r for r in rows if r.metric.main]
    table = Table(
        title=(f"{result.scenario}: seed {result.seed}, {result.nodes:,} nodes, "
               f"{result.gpus:,} GPUs, {format_duration(result.horizon)} simulated"),
        title_justify="left", box=box.SIMPLE_HEAD,
        caption="↑/↓ higher/lower is better; bold green: best in its row"
                + ("" if all_metrics else "; every metric: summary.json, report.html"),
        caption_justify="left",
    )
    table.add_column("metric", style="bold", no_wrap=True)
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        arrow = {"higher": " ↑", "lower": " ↓", None: ""}[row.metric.better]
        table.add_row(row.metric.label + arrow, *(
            f"[bold green]{cell}[/]" if name in row.best else cell
            for name, cell in zip(names, row.cells, strict=True)
        ))
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


def write_report(result: SimResult, out_dir: Path,
                 summary: Mapping[str, Any] | None = None) -> list[Path]:
    """Write every report file into ``out_dir`` (created if missing); return their paths:
    ``summary.json``, ``units.csv``, ``timeseries.csv``, the PNG plots, ``report.html``.

    ``summary`` is ``result.summary()``, passed when the caller already computed it."""
    from gangsched.sim import plots  # matplotlib loads only when a report is written

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = _jsonable(result.summary() if summary is None else summary)
    written: list[Path] = []

    path = out_dir / "summary.json"
    path.write_text(json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n",
                    encoding="utf-8")
    written.append(path)

    unit_rows = result.unit_rows()
    path = out_dir / "units.csv"
    _write_csv(path, _columns(["policy", *(f.name for f in fields(UnitRecord)), "wait"],
                              unit_rows), unit_rows)
    written.append(path)

    sample_fields = [f.name for f in fields(Sample)]
    path = out_dir / "timeseries.csv"
    _write_csv(path, ["policy", *sample_fields], (
        {"policy": run.policy, **{k: getattr(s, k) for k in sample_fields}}
        for run in result.policies for s in sorted(run.samples, key=lambda s: s.time)
    ))
    written.append(path)

    drawn = plots.draw_all(result, summary.get("policies", {}), out_dir)
    written += [p.path for p in drawn]

    path = out_dir / "report.html"
    path.write_text(render_html(result, summary, drawn), encoding="utf-8")
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
            best = ' class="best"' if name in row.best else ""
            cells.append(f'<td{best} data-policy="{_e(name)}">{_e(cell)}</td>')
        out.append(f'<tr id="m-{_e(m.key)}">{"".join(cells)}</tr>')
    out += ["</tbody>", "</table>"]
    return out


def render_html(result: SimResult, summary: Mapping[str, Any], drawn: Sequence[Plot]) -> str:
    """The self-contained page; the PNGs of ``drawn`` are inlined."""
    from gangsched import __version__
    from gangsched.sim.plots import policy_color

    names, rows = comparison_rows(summary)
    title = f"gangsched simulation: {result.scenario}"
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
        f"scenario <b>{_e(result.scenario)}</b> · seed <b>{_e(result.seed)}</b> · "
        f"<b>{result.nodes:,}</b> nodes, <b>{result.gpus:,}</b> GPUs · horizon "
        f"<b>{_e(format_duration(result.horizon))}</b> simulated "
        f"({result.horizon:,.0f} s) · <b>{len(result.policies)}</b> policies</p>",
    ]
    description = result.parameters.get("description")
    if isinstance(description, str):
        out.append(f'<p class="scenario">{_e(description)}</p>')
    knobs = {k: v for k, v in result.parameters.items() if k != "description"}
    if knobs:
        out += ["<details>", f"<summary>scenario parameters ({len(knobs)})</summary>",
                '<dl class="params">']
        for key, value in sorted(knobs.items()):
            shown = value if isinstance(value, str) else json.dumps(_jsonable(value),
                                                                    sort_keys=True)
            out.append(f"<dt>{_e(key)}</dt><dd>{_e(shown)}</dd>")
        out += ["</dl>", "</details>"]

    out += ["<h2>How to read this</h2>", f'<p class="how">{_e(HOW_TO_READ)}</p>']

    out += ['<h2 id="comparison">Comparison</h2>',
            *_html_table(names, [r for r in rows if r.metric.main], "comparison"),
            '<p class="small">Highlighted: best value in its row. ↑ higher is better, '
            "↓ lower is better. “—”: not defined (for example no unit admitted).</p>"]
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

    out.append("<h2>The policies compared</h2>")
    for run in result.policies:
        out += [
            f'<h3 id="{_anchor(run.policy)}"><span class="swatch" '
            f'style="background:{policy_color(run.policy)}"></span>{_e(run.policy)}</h3>',
            f'<p class="policy-desc">{_e(run.description)}</p>',
            f'<p class="small">{len(run.units):,} units, {len(run.samples):,} samples, '
            f"{len(run.decision_latency_ms):,} scheduling decisions; simulated in "
            f"{run.wall_seconds:.1f} s of wall-clock time.</p>",
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
