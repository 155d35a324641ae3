"""Checked reading of the published traces' CSV files: rows with the line each starts on,
and numbers in range; every mistake a one-line :class:`InputError` naming the file, the
line and the column."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from gangsched.api.errors import InputError
from gangsched.sim.trace import read_text


def rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """The rows of a CSV file with a header (gzip-compressed or not), with the line each
    starts on; the header must name ``columns``."""
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    line = 1
    try:
        header = next(reader, None)
        missing = [c for c in columns if c not in (header or ())]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)}", file=str(path),
                             field="header")
        assert header is not None
        out = []
        line = reader.line_num + 1
        for fields in reader:
            if fields:  # a blank line
                if len(fields) != len(header):
                    raise InputError(f"has {len(fields)} field{'' if len(fields) == 1 else 's'}, "
                                     f"the header {len(header)}",
                                     file=f"{path}:{line}")
                out.append((line, dict(zip(header, fields, strict=True))))
            line = reader.line_num + 1
    except csv.Error as err:
        message = str(err)
        if "end of data" in message:
            message = "unterminated quoted field"
        elif "field limit" in message:
            message = f"{message} (an unterminated quote?)"
        raise InputError(f"invalid CSV: {message}", file=f"{path}:{line}") from None
    return out


def number(path: Path, line: int, row: dict[str, str], col: str, low: float, high: float,
           default: float | None = None) -> float:
    """The column's value as a finite number in [low, high]; ``default`` when it is empty
    (an error when there is none)."""
    text = (row.get(col) or "").strip()
    if not text and default is not None:
        return default
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v):
        raise InputError(f"must be a number, got {text!r}", file=f"{path}:{line}",
                         field=col)
    if v < low:
        raise InputError(f"must be >= {low:g}, got {text}", file=f"{path}:{line}", field=col)
    if v > high:
        raise InputError(f"must be at most {high:g}, got {text}", file=f"{path}:{line}",
                         field=col)
    return v


def integer(path: Path, line: int, row: dict[str, str], col: str, low: int, high: float,
            default: int | None = None) -> int:
    """:func:`number` as an integer: an integer text as is (exact beyond 2**53), a
    decimal one (``"8.0"``, as some trace columns are written) cut to its integer part."""
    text = (row.get(col) or "").strip()
    if not text and default is not None:
        return default
    try:
        v = int(text)
    except ValueError:
        return int(number(path, line, row, col, low, high))
    if v < low:
        raise InputError(f"must be >= {low}, got {text}", file=f"{path}:{line}", field=col)
    if v > high:
        raise InputError(f"must be at most {high:g}, got {text}", file=f"{path}:{line}",
                         field=col)
    return v


def name(path: Path, line: int, row: dict[str, str], col: str,
         seen: dict[str, int] | None = None) -> str:
    """The column's text: not empty, printable, and (with ``seen``: the names so far and
    their lines) not seen before."""
    text = (row.get(col) or "").strip()
    if not text:
        raise InputError("is empty", file=f"{path}:{line}", field=col)
    if not text.isprintable():
        raise InputError(f"must be printable text, got {text!r}", file=f"{path}:{line}",
                         field=col)
    if seen is not None:
        if text in seen:
            raise InputError(f"duplicate {text!r}, first on line {seen[text]}",
                             file=f"{path}:{line}", field=col)
        seen[text] = line
    return text
