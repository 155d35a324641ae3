"""The simulation report: every file written and parseable, a self-contained HTML page that
names every policy and inlines every plot, means with intervals over seeds, best and tie
marks, byte-stable output, and (where Chromium is installed) a headless-browser
screenshot that shows the plots.

The study is built by hand (units and samples), so these tests do not depend on the
simulator.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import os
import re
import shutil
import signal
import subprocess
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gangsched.sim.metrics import study_summary
from gangsched.sim.plots import WASTE_COLOR, policy_color
from gangsched.sim.report import comparison_table, what_this_shows, write_report
from gangsched.sim.result import PolicyRun, Sample, SimResult, Study, UnitRecord

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HORIZON = 4 * 3600.0
WARMUP = 1800.0
STEP = 600.0
DESCRIPTIONS = {
    "gangsched": "Ours: hierarchical gangs, minimum-first, backtracking across siblings & "
                 "domains <all of them>.",
    "pod-by-pod": "kube-scheduler without gangs: each pod binds as soon as it fits.",
    "flat-gang": "KEP-4671 gang scheduling: each PodGroup is its own gang.",
}
PNGS = ["gpu_allocation.png", "wait_cdf.png", "gpu_hours.png", "partial_units.png"]
FIDELITY = [{"policy": "pod-by-pod", "upstream": "kube-scheduler v1.37",
             "modelled": "filters and scores", "not_modelled": "tie-breaking"}]


def unit(i: int, admitted: float | None, wasted: float = 0.0) -> UnitRecord:
    arrival = WARMUP + 300.0 * i
    return UnitRecord(
        name=f"app-{i}", workload=f"app-{i}", kind="inference" if i % 2 else "training",
        priority=i % 3, pods_min=4, pods_desired=8, gpus_min=16, arrival=arrival,
        admitted=None if admitted is None else arrival + admitted,
        finished=arrival + 5000.0 if i % 2 == 0 and admitted is not None else None,
        duration=3600.0 if i % 2 == 0 else None, max_pods=8 if admitted is not None else 3,
        partial_seconds=0.0 if wasted == 0 else 1800.0, wasted_gpu_hours=wasted,
        gpu_hours=10.0 + wasted, locality=1.0 if admitted is not None else None,
        pd_distance=1 if i % 2 else None,
    )


def samples(level: float, waste: float, partial: int, broken: float = 0.0) -> list[Sample]:
    out = []
    for k in range(int(HORIZON / STEP) + 1):
        t = k * STEP
        ramp = min(1.0, t / 5400.0)
        alloc = level * ramp
        useful = max(0.0, alloc - waste * ramp)
        out.append(Sample(
            time=t, gpu_allocated=alloc, gpu_useful=useful,
            gpu_useful_topology=max(0.0, useful - broken * ramp), cpu_allocated=0.5 * alloc,
            pending_units=max(0, 6 - k), partial_units=partial if k > 3 else 0,
            deadlocked_units=1 if partial and k > 8 else 0,
            deadlocked_pairs=1 if partial > 1 and k > 8 else 0, fragmentation=0.1 * (k % 3),
        ))
    return out


def seed_run(seed: int) -> SimResult:
    d = 5.0 * seed  # seeds differ a little
    ours = [unit(i, 30.0 * i + d) for i in range(6)]
    pods = [unit(i, 120.0 * i + d if i < 4 else None, 2.5 if i >= 4 else 0.0)
            for i in range(6)]
    flat = [unit(i, 60.0 * i + d if i < 5 else None, 1.0 if i == 5 else 0.0)
            for i in range(6)]
    runs = [
        PolicyRun("gangsched", DESCRIPTIONS["gangsched"], ours, samples(0.8, 0.0, 0),
                  [0.4 + 0.01 * seed, 0.6, 1.1], wall_seconds=1.5),
        PolicyRun("pod-by-pod", DESCRIPTIONS["pod-by-pod"], pods, samples(0.9, 0.25, 2, 0.2),
                  [0.1, 0.1], wall_seconds=0.7),
        PolicyRun("flat-gang", DESCRIPTIONS["flat-gang"], flat, samples(0.85, 0.1, 1, 0.1),
                  [0.2], wall_seconds=0.9),
    ]
    parameters = {"description": "Two racks, synthetic load.", "racks": 2, "trace": "synthetic"}
    return SimResult(scenario="tiny", seed=seed, horizon=HORIZON, nodes=16, gpus=128,
                     policies=runs, parameters=parameters, warmup=WARMUP)


def make_study() -> Study:
    return Study("tiny", [seed_run(s) for s in (7, 8, 9)], {"load": 1.0})


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Study, Path, list[Path]]:
    study = make_study()
    out = tmp_path_factory.mktemp("report") / "out"  # not yet there: write_report creates it
    return study, out, write_report(study, out, fidelity=FIDELITY)


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


# -- files -----------------------------------------------------------------------------------


def test_every_file_is_written_and_returned(report: tuple[Study, Path, list[Path]]) -> None:
    _, out, written = report
    names = [p.name for p in written]
    assert names == ["summary.json", "units.csv", "timeseries.csv", *PNGS, "report.html"]
    assert all(p.parent == out and p.is_file() for p in written)
    assert sorted(p.name for p in out.iterdir()) == sorted(names)


def test_summary_json_has_means_intervals_and_per_seed_values(
        report: tuple[Study, Path, list[Path]]) -> None:
    study, out, _ = report
    text = (out / "summary.json").read_text()
    data = json.loads(text)
    assert data == json.loads(json.dumps(study_summary(study)))
    assert data["seeds"] == [7, 8, 9]
    assert list(data["policies"]) == sorted(DESCRIPTIONS)  # sorted keys, for diffs
    pods = data["policies"]["pod-by-pod"]
    assert pods["wasted_gpu_hours"] == 5.0 and pods["ci"]["wasted_gpu_hours"] == [5.0, 5.0]
    assert pods["per_seed"]["wasted_gpu_hours"] == [5.0, 5.0, 5.0]
    # waits over every unit: the two never admitted wait until the end of the run
    ours = data["policies"]["gangsched"]
    # waits 30 i + 5 seed: the median of i = 0..5 is 75 + 5 seed
    assert ours["per_seed"]["wait_p50"] == [110.0, 115.0, 120.0]
    assert ours["wait_p50"] == 115.0 and ours["ci"]["wait_p50"][0] < 115.0
    assert pods["never_admitted"] == 2
    assert text.startswith('{\n  "gpus": 128,') and text.endswith("}\n")


def test_units_csv(report: tuple[Study, Path, list[Path]]) -> None:
    _, out, _ = report
    columns, rows = read_csv(out / "units.csv")
    assert columns == ["seed", "policy", *(f.name for f in fields(UnitRecord)), "wait"]
    assert len(rows) == 3 * 18
    never = [r for r in rows if r["policy"] == "pod-by-pod" and r["admitted"] == ""]
    assert len(never) == 6 and all(r["wait"] == "" for r in never)  # None -> empty cell
    first = rows[1]
    assert (first["seed"], first["policy"], first["name"], float(first["wait"])) == (
        "7", "gangsched", "app-1", 65.0)


def test_timeseries_csv(report: tuple[Study, Path, list[Path]]) -> None:
    _, out, _ = report
    columns, rows = read_csv(out / "timeseries.csv")
    assert columns == ["seed", "policy", *(f.name for f in fields(Sample))]
    assert len(rows) == 3 * 3 * 25
    assert {r["policy"] for r in rows} == set(DESCRIPTIONS)
    last = next(r for r in reversed(rows) if r["policy"] == "pod-by-pod")
    assert float(last["time"]) == HORIZON and float(last["gpu_allocated"]) == 0.9
    assert int(last["deadlocked_units"]) == 1 and int(last["deadlocked_pairs"]) == 1


def test_pngs(report: tuple[Study, Path, list[Path]]) -> None:
    _, out, _ = report
    for name in PNGS:
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC), name
        assert len(data) > 10_000, (name, len(data))
        assert b"Software" not in data  # no matplotlib version stamp: byte-stable


# -- HTML ------------------------------------------------------------------------------------


def test_html_is_self_contained_and_complete(
    report: tuple[Study, Path, list[Path]],
) -> None:
    study, out, _ = report
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<h1>gangsched simulation: tiny</h1>" in page
    for fact in ("seeds <b>7, 8, 9</b>", "<b>16</b> nodes", "<b>128</b> GPUs", "<b>4.0 h</b>",
                 "<b>30.0 min</b> warm-up"):
        assert fact in page, fact
    assert '<p class="scenario">Two racks, synthetic load.</p>' in page
    assert "<dt>racks</dt><dd>2</dd>" in page and "<dt>description</dt>" not in page
    assert "How to read this" in page and "What this shows" in page
    assert '<table class="comparison">' in page and '<table class="fidelity">' in page
    for run in study.first.policies:
        assert html.escape(run.description) in page, run.policy
        assert f'data-policy="{run.policy}"' in page
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == len(PNGS)
    for encoded, name in zip(images, PNGS, strict=True):
        assert base64.b64decode(encoded) == (out / name).read_bytes()
    assert len(re.findall(r"<figcaption>", page)) == len(PNGS)
    lowered = page.lower()
    assert "http://" not in lowered and "https://" not in lowered
    assert "<script" not in lowered and "<link" not in lowered and "@import" not in lowered
    assert "&<all" not in page  # descriptions are escaped


def row_cells(page: str, key: str) -> dict[str, tuple[str, str]]:
    """policy -> (cell text, mark: best, tie or "") for the table row of metric ``key``."""
    row = re.search(rf'<tr id="m-{key}">(.*?)</tr>', page)
    assert row, key
    cells = re.findall(r'<td(?: class="(best|tie)")? data-policy="([^"]+)">([^<]*)</td>',
                       row.group(1))
    return {policy: (text, mark) for mark, policy, text in cells}


def test_best_only_where_intervals_do_not_overlap(
    report: tuple[Study, Path, list[Path]],
) -> None:
    _, out, _ = report
    page = html.unescape((out / "report.html").read_text())
    wasted = row_cells(page, "wasted_gpu_hours")
    assert wasted == {"gangsched": ("0.0", "best"), "pod-by-pod": ("5.0", ""),
                      "flat-gang": ("1.0", "")}
    # the seeds move gangsched's latency more than the gap to flat-gang: no best
    latency = row_cells(page, "decision_latency_p50_ms")
    assert latency["pod-by-pod"][1] == "best"
    waits = row_cells(page, "wait_p50")
    assert waits["gangsched"][0] == "115 s ± 12 s" and waits["gangsched"][1] == "best"
    assert row_cells(page, "gpu_useful_topology_mean")["gangsched"][1] == "best"
    # no direction, or all equal: nothing marked
    for key in ("units", "gpu_allocation_mean", "preemptions"):
        assert not any(mark for _, mark in row_cells(page, key).values()), key


def test_what_this_shows_names_winners_and_ties(
        report: tuple[Study, Path, list[Path]]) -> None:
    study, _, _ = report
    lines = what_this_shows(study_summary(study))
    useful = next(x for x in lines if x.startswith("GPU useful"))
    assert "gangsched is best" in useful and "no overlap" in useful
    assert not any("cannot separate" in x for x in lines)


def test_output_is_byte_stable(tmp_path: Path,
                               report: tuple[Study, Path, list[Path]]) -> None:
    _, _, written = report
    again = write_report(make_study(), tmp_path, fidelity=FIDELITY)
    for first, second in zip(written, again, strict=True):
        assert first.read_bytes() == second.read_bytes(), first.name


def test_degenerate_result_still_writes_a_report(tmp_path: Path) -> None:
    """A policy with no units or samples: valid JSON with nulls, "—" cells."""
    empty = PolicyRun("volcano", "Volcano: two levels.")
    study = Study("empty", [SimResult("empty", 1, 60.0, 1, 8, [empty])])
    written = write_report(study, tmp_path)
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["policies"]["volcano"]["wait_p95"] is None
    assert data["policies"]["volcano"]["ci"]["wait_p95"] == [None, None]
    assert read_csv(tmp_path / "units.csv")[1] == []
    assert read_csv(tmp_path / "timeseries.csv")[1] == []
    page = html.unescape((tmp_path / "report.html").read_text())
    assert row_cells(page, "wait_p50") == {"volcano": ("—", "")}
    assert all(p.stat().st_size > 0 for p in written)


def test_a_trace_without_gangs_or_contention_says_it_cannot_separate() -> None:
    single = {"units": 10, "pods_desired": 10, "never_admitted": 0, "wait_p95_all": 0.0,
              "gpu_useful_topology_mean": 0.5}
    summary = {"seeds": [0, 1, 2], "policies": {"a": dict(single), "b": dict(single)}}
    first = what_this_shows(summary)[0]
    assert first.startswith("This comparison cannot separate the policies")
    assert "single pod" in first and "no contention" in first


def test_comparison_table_fits_80_columns(report: tuple[Study, Path, list[Path]]) -> None:
    study, _, _ = report
    summary = study_summary(study)
    table = comparison_table(summary)
    assert [str(c.header) for c in table.columns] == ["metric", *DESCRIPTIONS]
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "wasted GPU-h↓" in text and "wait p95 (all)↓" in text
    assert "CPU allocation" not in text  # headline rows only
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("wasted GPU-h"))
    assert line.split()[-3:] == ["0*", "5", "1"]
    console.print(comparison_table(summary, all_metrics=True))
    assert "CPU allocation" in console.export_text()


# -- headless browser ------------------------------------------------------------------------


def chromium() -> str | None:
    for candidate in (shutil.which("chromium"), "/usr/bin/chromium",
                      shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def color_pixels(image: Any, hex_color: str, tolerance: float = 0.12) -> int:
    import numpy as np

    rgb = np.array([int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    distance = np.abs(image[:, :, :3] - rgb).max(axis=2)
    return int((distance < tolerance).sum())


def test_report_renders_in_headless_chromium(
    tmp_path: Path, report: tuple[Study, Path, list[Path]],
) -> None:
    browser = chromium()
    if browser is None:
        pytest.skip("Chromium not installed (apt-get install chromium): "
                    "headless screenshot of report.html not checked")
    from matplotlib.image import imread

    _, out, _ = report
    shot = tmp_path / "shot.png"
    command = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1",
        f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
        "--window-size=1280,4000", (out / "report.html").resolve().as_uri(),
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        log, _ = proc.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # chromium and the helpers it started
        log, _ = proc.communicate()
        if not shot.exists():
            pytest.fail(f"chromium timed out:\n{log.decode(errors='replace')[-2000:]}")
    assert shot.exists(), log.decode(errors="replace")[-2000:]

    image = imread(shot)
    height, width = image.shape[:2]
    assert (width, height) == (1280, 4000)  # tall enough for the table and all four plots
    gray = image[:, :, :3].mean(axis=2)
    assert float(gray.std()) > 0.05  # not blank
    assert float((gray < 0.9).mean()) > 0.02  # text and lines, not an empty page
    # the plots are drawn: each policy's color covers far more than its two small swatches
    # (~170 pixels each), the pale waste band of the allocation plot and the solid waste
    # bars of the GPU-hours plot are there
    for name in DESCRIPTIONS:
        count = color_pixels(image, policy_color(name))
        assert count > 5000, (name, count)
    band = "#{:02X}{:02X}{:02X}".format(*(round(0.75 * 255 + 0.25 * int(WASTE_COLOR[i:i + 2], 16))
                                           for i in (1, 3, 5)))
    assert color_pixels(image, band, 0.03) > 5000, "waste band of the allocation plot"
    assert color_pixels(image, WASTE_COLOR, 0.05) > 5000, "waste bars of the GPU-hours plot"


def test_locality_per_level_counts_units_by_how_much_wider_than_needed() -> None:
    from dataclasses import replace

    from gangsched.sim.metrics import summarize

    scores = [1.0, 1.0, 0.5, 1 / 3, 0.25]  # 0, 0, 1, 2 and 3 levels wider than needed
    run = PolicyRun("p", "", units=[replace(unit(i, 60.0), locality=x)
                                    for i, x in enumerate(scores)])
    s = summarize(run, HORIZON, WARMUP)
    assert (s["locality"], s["locality_wider_1"], s["locality_wider_2"]) == (0.4, 0.2, 0.4)
