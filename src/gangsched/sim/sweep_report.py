"""A sweep's report: one ``summary.json`` for the whole grid, one full study report per
cell (scenario at one load) in a subdirectory, and a ``report.html`` that puts every
cell's comparison and findings on one page, linking to the cells' plots."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from gangsched.api.files import write_atomic
from gangsched.sim.metrics import study_summary
from gangsched.sim.report import (
    CSS,
    _e,
    _html_table,
    _jsonable,
    comparison_rows,
    what_this_shows,
    write_report,
)
from gangsched.sim.sweep import SweepResult


def write_sweep_report(result: SweepResult, out_dir: Path,
                       fidelity: Sequence[Mapping[str, str]] = ()) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    summary = _jsonable(result.summary())
    path = out_dir / "summary.json"
    write_atomic(path, json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n")
    written.append(path)
    page = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
            "<title>gangsched sweep</title>", f"<style>{CSS}</style>", "</head>", "<body>",
            "<main>", "<h1>gangsched sweep</h1>"]
    grid = summary["grid"]
    page.append(f'<p class="meta">scenarios <b>{_e(", ".join(grid["scenarios"]))}</b> · '
                f'loads <b>{_e(", ".join(map(str, grid["loads"])))}</b> · seeds '
                f'<b>{_e(", ".join(map(str, grid["seeds"])))}</b> · policies '
                f'<b>{_e(", ".join(grid["policies"]))}</b></p>')
    for cell, study in result.cells:
        cell_summary = study_summary(study)
        written += write_report(study, out_dir / cell.label, cell_summary, fidelity)
        names, rows = comparison_rows(cell_summary)
        page += [f'<h2 id="{_e(cell.label)}">{_e(cell.scenario)} at load {cell.load:g}</h2>',
                 "<ul>", *(f"<li>{_e(line)}</li>" for line in what_this_shows(cell_summary)),
                 "</ul>", *_html_table(names, [r for r in rows if r.metric.terminal],
                                       "comparison"),
                 f'<p class="small">Plots and every metric: <a href="{_e(cell.label)}/'
                 f'report.html">{_e(cell.label)}/report.html</a>.</p>']
    page += ["</main>", "</body>", "</html>", ""]
    path = out_dir / "report.html"
    write_atomic(path, "\n".join(page))
    written.append(path)
    return written
