"""Fault injection: error responses, added latency and dropped watches, from one seeded
random generator.

Configure at start (``TestAPIServer(faults=FaultConfig(...))``), at run time through
:meth:`Faults.configure` or over HTTP (``GET|PUT|PATCH|DELETE /_faults``, JSON).
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.testing.apiserver.errors import INJECTABLE

SCOPES = ("all", "mutating", "read")
DROP_MODES = ("abort", "clean")
MUTATING_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True)
class FaultConfig:
    """What to inject. Every rate is a probability in [0, 1]."""

    error_rate: float = 0.0
    """Fraction of the requests in ``error_scope`` answered with an error Status."""
    error_scope: str = "mutating"
    """``mutating`` (create/update/patch/delete), ``read`` (get/list/watch) or ``all``."""
    error_codes: tuple[int, ...] = (500,)
    """Codes to answer with, chosen uniformly: 500, 429 (with Retry-After), 503, 504."""
    error_resources: tuple[str, ...] = ()
    """Only these resources (``pods``, ``pods/binding``, ``leases``, ...); empty: all."""
    error_names: tuple[str, ...] = ()
    """Only requests naming these objects (a bind names its pod); empty: any."""
    error_limit: int | None = None
    """Inject at most this many errors under these settings, then none; null: no
    limit."""
    error_after_apply: float = 0.0
    """Fraction of injected errors on mutating requests given *after* the change was
    applied: the client sees a failure although the write happened (as with a timeout)."""
    latency_ms: float = 0.0
    """Added to every API request before it is handled."""
    latency_jitter_ms: float = 0.0
    """Up to this much more, uniformly."""
    watch_drop_after: int | None = None
    """Close every watch stream after it sent this many events."""
    watch_drop_probability: float = 0.0
    """Close a watch stream after an event with this probability."""
    watch_max_seconds: float | None = None
    """Close every watch stream after this long."""
    watch_drop_mode: str = "abort"
    """``abort``: cut the connection mid-stream (the client sees a protocol error);
    ``clean``: end the chunked response normally (the client sees the stream end)."""
    seed: int | None = 0
    """Seed of the generator (``None``: unseeded). Setting it reseeds."""

    def __post_init__(self) -> None:
        for name in ("error_rate", "error_after_apply", "watch_drop_probability"):
            value = getattr(self, name)
            if not _number(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1], not {value!r}")
        for name in ("latency_ms", "latency_jitter_ms"):
            value = getattr(self, name)
            if not _number(value) or value < 0:
                raise ValueError(f"{name} must be a number >= 0, not {value!r}")
        if self.error_scope not in SCOPES:
            raise ValueError(f"error_scope must be one of {', '.join(SCOPES)}, "
                             f"not {self.error_scope!r}")
        if self.watch_drop_mode not in DROP_MODES:
            raise ValueError(f"watch_drop_mode must be one of {', '.join(DROP_MODES)}, "
                             f"not {self.watch_drop_mode!r}")
        codes = tuple(self.error_codes)
        if not codes or any(c not in INJECTABLE for c in codes):
            raise ValueError(f"error_codes must be taken from {sorted(INJECTABLE)}, "
                             f"not {list(codes)!r}")
        object.__setattr__(self, "error_codes", codes)
        object.__setattr__(self, "error_resources", tuple(self.error_resources))
        object.__setattr__(self, "error_names", tuple(self.error_names))
        limit = self.error_limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise ValueError(f"error_limit must be an integer >= 0 or null, not {limit!r}")
        after = self.watch_drop_after
        if after is not None and (isinstance(after, bool) or not isinstance(after, int)
                                  or after < 1):
            raise ValueError(f"watch_drop_after must be an integer >= 1 or null, "
                             f"not {after!r}")
        seconds = self.watch_max_seconds
        if seconds is not None and not (_number(seconds) and seconds > 0):
            raise ValueError(f"watch_max_seconds must be > 0 or null, not {seconds!r}")
        if self.seed is not None and (isinstance(self.seed, bool)
                                      or not isinstance(self.seed, int)):
            raise ValueError(f"seed must be an integer or null, not {self.seed!r}")

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["error_codes"] = list(self.error_codes)
        data["error_resources"] = list(self.error_resources)
        data["error_names"] = list(self.error_names)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: FaultConfig | None = None) -> FaultConfig:
        """``base`` (default: all off) with the fields in ``data`` changed."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown fault settings: {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(known))})")
        changes = dict(data)
        for name in ("error_codes", "error_resources", "error_names"):
            if name in changes:
                if not isinstance(changes[name], list | tuple):
                    raise ValueError(f"{name} must be a list")
                changes[name] = tuple(changes[name])
        return dataclasses.replace(base or cls(), **changes)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class Decision:
    """What to do to one request."""

    code: int | None = None  # inject this error, or None
    after_apply: bool = False  # ... after applying the change


class Faults:
    """The live fault settings, the seeded generator and what was injected so far.

    ``stats`` counts ``requests``, ``injected_errors``, ``injected_<code>``,
    ``injected_after_apply``, ``delayed_requests`` and ``dropped_watches``.
    """

    def __init__(self, config: FaultConfig | None = None) -> None:
        self._lock = threading.Lock()
        self.config = config or FaultConfig()
        self.stats: Counter[str] = Counter()
        self._rng = random.Random(self.config.seed)
        self._suspended = 0
        self._injected = 0  # errors injected under the current settings

    # -- configuration ---------------------------------------------------------------------

    def configure(self, config: FaultConfig | None = None, **changes: Any) -> FaultConfig:
        """Replace the settings with ``config`` (then apply ``changes`` to it), or change
        some of the current ones: ``faults.configure(error_rate=0.1)``.

        Raises ``ValueError`` for a bad setting. A new ``seed`` (or a whole new config)
        reseeds the generator. Returns the new settings.
        """
        with self._lock:
            new = FaultConfig.from_dict(changes, config or self.config)
            if config is not None or new.seed != self.config.seed:
                self._rng = random.Random(new.seed)
            self.config = new
            self._injected = 0
            return new

    def reset(self) -> FaultConfig:
        """Everything off; the seed is kept and the generator reseeded; stats kept."""
        return self.configure(FaultConfig(seed=self.config.seed))

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """No faults inside the block (for test setup over HTTP)."""
        with self._lock:
            self._suspended += 1
        try:
            yield
        finally:
            with self._lock:
                self._suspended -= 1

    def snapshot(self) -> dict[str, Any]:
        """Settings and counters, as ``GET /_faults`` shows them."""
        with self._lock:
            return {"config": self.config.as_dict(), "stats": dict(self.stats)}

    # -- decisions (called by the server) --------------------------------------------------

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.stats[name] += n

    def delay(self) -> float:
        """Seconds to sleep before handling a request."""
        with self._lock:
            c = self.config
            if self._suspended or (not c.latency_ms and not c.latency_jitter_ms):
                return 0.0
            jitter = self._rng.uniform(0, c.latency_jitter_ms) if c.latency_jitter_ms else 0.0
            self.stats["delayed_requests"] += 1
            return (c.latency_ms + jitter) / 1000.0

    def sleep(self) -> None:
        seconds = self.delay()
        if seconds > 0:
            time.sleep(seconds)

    def decide(self, verb: str, resource: str, name: str | None = None) -> Decision:
        """Whether to fail this request (``resource``: ``pods`` or ``pods/binding``;
        ``name``: the object it names, if any)."""
        with self._lock:
            self.stats["requests"] += 1
            c = self.config
            if self._suspended or c.error_rate <= 0:
                return Decision()
            mutating = verb in MUTATING_VERBS
            if (c.error_scope == "mutating" and not mutating) or (
                    c.error_scope == "read" and mutating):
                return Decision()
            if c.error_resources and resource not in c.error_resources:
                return Decision()
            if c.error_names and name not in c.error_names:
                return Decision()
            if c.error_limit is not None and self._injected >= c.error_limit:
                return Decision()
            if self._rng.random() >= c.error_rate:
                return Decision()
            code = self._rng.choice(c.error_codes)
            after = mutating and c.error_after_apply > 0 \
                and self._rng.random() < c.error_after_apply
            self.stats[f"injected_{code}"] += 1
            self.stats["injected_errors"] += 1
            self._injected += 1
            if after:
                self.stats["injected_after_apply"] += 1
            return Decision(code, after)

    def drop_watch(self, events_sent: int, started: float, after_event: bool) -> bool:
        """Whether to close a watch stream now: it sent ``events_sent`` events, started at
        ``time.monotonic()`` ``started``, and ``after_event`` it just sent one (the drop
        probability applies only then)."""
        with self._lock:
            c = self.config
            if self._suspended:
                return False
            drop = (c.watch_drop_after is not None and events_sent >= c.watch_drop_after) or (
                c.watch_max_seconds is not None
                and time.monotonic() - started >= c.watch_max_seconds)
            if not drop and after_event and c.watch_drop_probability > 0:
                drop = self._rng.random() < c.watch_drop_probability
            if drop:
                self.stats["dropped_watches"] += 1
            return drop

    @property
    def drop_mode(self) -> str:
        return self.config.watch_drop_mode
