"""Checked reading of the published traces' CSV files: rows with the line each starts on,
and numbers in range; every mistake a one-line :class:`InputError` naming the file, the
line and the column."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from gangsched.api.errors import InputError
from gangsched.sim.textfile import read_lines

MAX_ROWS = 1_000_000  # lines of one file (the largest published one has 23,872)


def rows(path: Path, columns: tuple[str, ...], what: str
         ) -> list[tuple[int, dict[str, str]]]:
    """The rows of a CSV file with a header (gzip-compressed or not), with the line each
    starts on; the header must name ``columns``, and at least one row follow (``what``
    the rows are, for the error)."""
    reader = csv.reader(read_lines(path), strict=True)
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
            if reader.line_num > MAX_ROWS:
                raise InputError(f"more than {MAX_ROWS:,} lines", file=f"{path}:{line}")
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
    if not out:
        raise InputError(f"no {what} in the file (only its header)", file=str(path))
    return out


_DECIMAL = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
"""Numbers as the traces write them: ASCII decimal (``float`` and ``int`` would also read
``1_000``, ``inf`` and other scripts' digits)."""


def number(path: Path, line: int, row: dict[str, str], col: str, low: float, high: float,
           default: float | None = None) -> float:
    """The column's value as a finite number in [low, high]; ``default`` when it is empty
    (an error when there is none)."""
    text = (row.get(col) or "").strip()
    if not text and default is not None:
        return default
    v = float(text) if _FLOAT.fullmatch(text) else math.nan
    if not math.isfinite(v):
        raise InputError(f"must be a number, got {text!r}", file=f"{path}:{line}",
                         field=col)
    return _within(path, line, col, v, text, low, high)


def integer(path: Path, line: int, row: dict[str, str], col: str, low: int, high: float,
            default: int | None = None) -> int:
    """:func:`number` as a whole number: ``1000``, or ``1000.0`` and ``1e3`` as some trace
    columns are written (an integer text is read exactly, beyond 2**53 too)."""
    text = (row.get(col) or "").strip()
    if not text and default is not None:
        return default
    if _DECIMAL.fullmatch(text):
        return int(_within(path, line, col, int(text), text, low, high))
    v = number(path, line, row, col, low, high)
    if not v.is_integer():
        raise InputError(f"must be a whole number, got {text!r}", file=f"{path}:{line}",
                         field=col)
    return int(v)


def _within(path: Path, line: int, col: str, v: float, text: str, low: float,
            high: float) -> float:
    if v < low:
        raise InputError(f"must be >= {low:g}, got {text}", file=f"{path}:{line}", field=col)
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
