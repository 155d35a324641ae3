"""Writing output files whole or not at all."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from gangsched.api.errors import InputError


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all: into a temporary
    file beside it, renamed over it once complete, so a full disk leaves the old file as
    it was and no half-written one. A path that exists and is not a regular file
    (``/dev/stdout``, a FIFO) is written in place. A failure is an :class:`InputError`
    naming the file."""
    view = memoryview(data.encode("utf-8") if isinstance(data, str) else data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not path.is_file():
            with open(path, "wb") as handle:
                handle.write(view)
            return
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            try:
                os.fchmod(fd, _file_mode(path))
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None


def _file_mode(path: Path) -> int:
    """The mode a new file gets (0666 less the umask), or the one ``path`` has."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
