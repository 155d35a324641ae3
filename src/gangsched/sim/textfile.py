"""Reading the simulator's text inputs (traces, the published CSV files) as a stream of
lines: plain or gzip-compressed, UTF-8, checked as they are read so that no input holds
more than one line in memory at a time.

Every mistake is a one-line :class:`InputError` naming the file: a missing file or a
directory, a truncated or damaged gzip file, more than :data:`MAX_TEXT_BYTES` bytes (as it
is, or decompressed: ``/dev/zero`` or a decompression bomb stops there, not when memory
runs out), a line longer than :data:`MAX_LINE_CHARS` (``/dev/zero`` is one endless
line) or bytes that are not UTF-8, with the line they are on. A leading byte order mark
is skipped, as spreadsheet programs write one before a CSV header.
"""

from __future__ import annotations

import codecs
import itertools
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from gangsched.api.errors import InputError

MAX_TEXT_BYTES = 1 << 30
"""Most bytes an input may have, decompressed (1 GiB: a trace at every limit of
:func:`~gangsched.sim.trace.read_trace` is far smaller; more is a mistake, or a
decompression bomb)."""

MAX_LINE_CHARS = 64 << 20
"""Longest line (64 Mi characters: a trace line at the limit of 100,000 pods written out
pod by pod is about 30 MB)."""

CHUNK = 1 << 20  # bytes read (and decompressed) at a time

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = codecs.BOM_UTF8
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def read_lines(path: str | Path) -> Iterator[str]:
    """The lines of a text file, each with its line break (``\\n``, ``\\r\\n`` or ``\\r``,
    as ``open(newline="")`` splits; ``str.splitlines`` would also split at U+2028, which
    JSON allows raw inside a string)."""
    file = str(path)
    return _split(_decode(_raw(file), file), file)


def _raw(file: str) -> Iterator[bytes]:
    """The file's bytes, decompressed when it starts as gzip does, in chunks."""
    chunks = _read(file)
    first = next(chunks, b"")
    while len(first) < len(_GZIP_MAGIC) and (more := next(chunks, b"")):
        first += more
    if first.startswith(_GZIP_MAGIC):
        yield from _gunzip(itertools.chain([first], chunks), file)
        return
    size = 0
    for chunk in itertools.chain([first], chunks):
        size += len(chunk)
        if size > MAX_TEXT_BYTES:
            raise InputError(f"is larger than the limit (more than {MAX_TEXT_BYTES:,} bytes)",
                             file=file)
        yield chunk


def _read(file: str) -> Iterator[bytes]:
    """The file's bytes as they are, in chunks; one that cannot be read is an error."""
    try:
        with open(file, "rb") as handle:
            while chunk := handle.read(CHUNK):
                yield chunk
    except FileNotFoundError:
        raise InputError("file not found", file=file) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", file=file) from None
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", file=file) from None


def _gunzip(chunks: Iterator[bytes], file: str) -> Iterator[bytes]:
    """Every gzip member's contents, at most :data:`MAX_TEXT_BYTES` in all; bytes after
    the last member that do not start another are ignored, as ``gzip -d`` does."""
    size = 0
    unzip = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    fed = False  # the current member has been given bytes
    buf = b""
    try:
        while True:
            if not buf:
                buf = next(chunks, b"")
                if not buf:
                    break
            if unzip.eof:  # a member ended: another one follows, or bytes to ignore
                while len(buf) < 2 and (more := next(chunks, b"")):
                    buf += more
                if not buf.startswith(_GZIP_MAGIC):
                    return
                unzip, fed = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS), False
            while True:  # all the output of buf, CHUNK bytes at a time
                out = unzip.decompress(buf, CHUNK)
                fed = True
                buf = unzip.unused_data if unzip.eof else unzip.unconsumed_tail
                size += len(out)
                if size > MAX_TEXT_BYTES:
                    raise InputError(f"decompresses to more than {MAX_TEXT_BYTES:,} bytes",
                                     file=file)
                if out:
                    yield out
                if unzip.eof or len(out) < CHUNK:
                    break
        if fed and not unzip.eof:
            raise InputError("is a truncated gzip file", file=file)
    except zlib.error as err:
        raise InputError(f"is a damaged gzip file ({err})", file=file) from None


def _decode(chunks: Iterator[bytes], file: str) -> Iterator[str]:
    """UTF-8 text, a leading byte order mark dropped; an invalid byte is an error naming
    its line."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    lines = 0  # line breaks in the bytes decoded so far
    offset = 0  # bytes decoded so far
    first = True
    for chunk in chunks:
        if first:
            first = False
            if chunk.startswith(_BOM):
                chunk, offset = chunk[len(_BOM):], len(_BOM)
        held = decoder.getstate()[0]  # the start of a character split between chunks
        try:
            text = decoder.decode(chunk)
        except UnicodeDecodeError as err:
            at = err.start - len(held)
            line = lines + chunk.count(b"\n", 0, max(at, 0)) + 1
            raise InputError(f"not UTF-8 text (line {line}, byte {offset + at + 1}: "
                             f"{err.reason})", file=file) from None
        lines += chunk.count(b"\n")
        offset += len(chunk)
        yield text
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (line {lines + 1}, byte {offset + 1}: "
                         f"{err.reason})", file=file) from None


def _split(texts: Iterator[str], file: str) -> Iterator[str]:
    """Lines with their breaks; a line is held in parts until its break arrives, so a
    long one costs its length once, not once per chunk."""
    parts: list[str] = []
    held = 0  # characters in parts
    number = 1
    for text in texts:
        if not text:  # a chunk that ended inside a character
            continue
        start = 0
        if parts and parts[-1].endswith("\r"):  # the last chunk ended with a \r
            start = 1 if text.startswith("\n") else 0
            parts.append(text[:start])
            yield "".join(parts)
            parts.clear()
            held = 0
            number += 1
        for m in _LINE_BREAK.finditer(text, start):
            if m.end() == len(text) and m.group() == "\r":
                break  # maybe the first half of a \r\n split between chunks
            parts.append(text[start:m.end()])
            yield "".join(parts)
            parts.clear()
            held = 0
            number += 1
            start = m.end()
        if start < len(text):
            parts.append(text[start:])
            held += len(text) - start
            if held > MAX_LINE_CHARS:
                raise InputError(f"line {number} is longer than {MAX_LINE_CHARS:,} "
                                 "characters", file=file)
    if parts:
        yield "".join(parts)
