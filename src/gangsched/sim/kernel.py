"""A small discrete-event kernel (SimPy's core idea, without processes).

Events are callbacks due at a simulated time. They run in the order ``(time, priority,
sequence)``: earlier first, then lower priority number, then the order they were
scheduled in, so ties are deterministic. Cancelling is lazy: a cancelled event stays in
the heap and is skipped when it comes up. Randomness comes from one seeded generator
owned by the kernel, so a run is a pure function of its inputs and seed.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(order=True)
class Event:
    """A scheduled callback. Compare by (time, priority, seq); ``cancel()`` to drop it."""

    time: float
    priority: int
    seq: int
    action: Callable[[], None] = field(compare=False, repr=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class Kernel:
    """The event heap and the simulated clock.

    >>> k = Kernel(seed=1)
    >>> seen = []
    >>> _ = k.at(2.0, lambda: seen.append("b"))
    >>> _ = k.at(1.0, lambda: seen.append("a"))
    >>> k.run()
    >>> seen, k.now
    (['a', 'b'], 2.0)
    """

    def __init__(self, seed: int = 0, start: float = 0.0) -> None:
        self.now = float(start)
        self.rng = random.Random(seed)
        self._heap: list[Event] = []
        self._seq = 0
        self.processed = 0

    def at(self, time: float, action: Callable[[], None], priority: int = 0) -> Event:
        """Run ``action`` at simulated ``time`` (not before now)."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time} before now ({self.now})")
        ev = Event(float(time), priority, self._seq, action)
        self._seq += 1
        heapq.heappush(self._heap, ev)
        return ev

    def after(self, delay: float, action: Callable[[], None], priority: int = 0) -> Event:
        """Run ``action`` ``delay`` seconds from now."""
        return self.at(self.now + max(0.0, delay), action, priority)

    def peek(self) -> float | None:
        """Time of the next live event, or None when nothing is scheduled."""
        heap = self._heap
        while heap and heap[0].cancelled:
            heapq.heappop(heap)
        return heap[0].time if heap else None

    def step(self) -> bool:
        """Run the next live event; False when there is none."""
        if self.peek() is None:
            return False
        ev = heapq.heappop(self._heap)
        self.now = ev.time
        self.processed += 1
        ev.action()
        return True

    def run(self, until: float | None = None) -> None:
        """Run events in order until none is left or the next is later than ``until``
        (then the clock stops at ``until``)."""
        while True:
            t = self.peek()
            if t is None or (until is not None and t > until):
                break
            self.step()
        if until is not None and until > self.now:
            self.now = until

    def __len__(self) -> int:
        """Live events still scheduled."""
        return sum(1 for ev in self._heap if not ev.cancelled)
