"""Clocks: the scheduler reads time only through a :class:`Clock`.

:class:`RealClock` is ``time.monotonic``; :class:`FakeClock` is set by tests and by the
simulator's discrete-event loop.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...


class RealClock:
    """Monotonic wall time in seconds."""

    def now(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 0.0) -> None:
        self._t = float(start)

    def now(self) -> float:
        return self._t

    def advance(self, dt: float) -> None:
        if dt < 0:
            raise ValueError(f"cannot move a clock backwards (advance by {dt})")
        self._t += dt

    def set(self, t: float) -> None:
        if t < self._t:
            raise ValueError(f"cannot move a clock backwards (from {self._t} to {t})")
        self._t = float(t)
