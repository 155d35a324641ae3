"""The simulator's text inputs read as a stream of lines: the same lines whatever the
chunk size, and every limit one clean error before memory fills."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import gangsched.sim.textfile as textfile
from gangsched.api.errors import InputError
from gangsched.sim.textfile import read_lines

TEXT = "first line\r\nsecond \u00e9\u20ac\U0001f600 line\rthird\n\nlast without break"
LINES = ["first line\r\n", "second \u00e9\u20ac\U0001f600 line\r", "third\n", "\n",
         "last without break"]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 1 << 20])
@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_lines_are_the_same_whatever_the_chunk_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, packed: bool) -> None:
    """A \\r\\n, a multi-byte character or a gzip member split between two reads changes
    nothing."""
    monkeypatch.setattr(textfile, "CHUNK", chunk)
    data = TEXT.encode()
    if packed:  # two members, as `cat a.gz b.gz` makes, then bytes gzip -d ignores
        data = gzip.compress(data[:20]) + gzip.compress(data[20:]) + b"\0\0junk"
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    assert list(read_lines(path)) == LINES


def test_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"\xef\xbb\xbfname,gpu\nx,1\n")
    assert list(read_lines(path)) == ["name,gpu\n", "x,1\n"]


@pytest.mark.parametrize("chunk", [1, 4, 1 << 20])
def test_bytes_that_are_not_utf8_name_their_line_and_byte(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(textfile, "CHUNK", chunk)
    path = tmp_path / "t.txt"
    path.write_bytes(b"ok\n\xc3\xa9 fine\nbad \xff here\n")
    with pytest.raises(InputError, match=r"not UTF-8 text \(line 3, byte 16: invalid start"):
        list(read_lines(path))
    path.write_bytes(b"ok\ncut \xe2\x82")  # a character cut off at the end
    with pytest.raises(InputError, match=r"not UTF-8 text \(line 2"):
        list(read_lines(path))


def test_an_endless_line_stops_at_the_line_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/zero and a gzip bomb of one character are one endless line: refused once the
    line passes its limit, with only that much held."""
    monkeypatch.setattr(textfile, "MAX_LINE_CHARS", 1000)
    monkeypatch.setattr(textfile, "CHUNK", 256)
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(b"{}\n" + b" " * 100_000))
    with pytest.raises(InputError, match="line 2 is longer than 1,000 characters"):
        list(read_lines(path))
    if Path("/dev/zero").exists():
        with pytest.raises(InputError, match="line 1 is longer than 1,000 characters"):
            list(read_lines("/dev/zero"))


def test_a_gzip_bomb_of_short_lines_stops_at_the_size_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textfile, "MAX_TEXT_BYTES", 10_000)
    monkeypatch.setattr(textfile, "CHUNK", 1024)
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n" * 1_000_000))
    seen = 0
    with pytest.raises(InputError, match="decompresses to more than 10,000 bytes"):
        for _ in read_lines(path):
            seen += 1
    assert seen <= 10_000


def test_a_member_cut_short_is_truncated(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textfile, "CHUNK", 7)
    path = tmp_path / "t.gz"
    path.write_bytes(gzip.compress(b"a\n") + gzip.compress(b"b\n" * 50)[:-9])
    with pytest.raises(InputError, match="truncated gzip"):
        list(read_lines(path))
