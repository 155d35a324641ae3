"""List-then-watch caches, one thread per resource (client-go's Reflector, small).

A :class:`Reflector` lists its resource (paged), remembers the list's resourceVersion,
then watches from it with bookmarks, keeping the resourceVersion of every event. When
the watch ends (server timeout, dropped connection) it watches again from the last
resourceVersion; when that version is too old (``410 Gone``, as an HTTP status or an
``ERROR`` event) it lists again and turns the difference from what it had into deltas.
Failures back off exponentially with jitter, capped. A resource the server does not
serve (a CRD not installed) or that it may not list (403) counts as synced and empty, and is
listed again now and then.

Reflectors never touch the scheduler: they put :class:`Delta` values on a shared
:class:`DeltaQueue`, which the main loop drains between scheduling cycles.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from gangsched.k8s.api import Kind, KubeAPI, KubeError, Obj, object_key, resource_version

log = logging.getLogger("gangsched.k8s.cache")

DeltaType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True)
class Delta:
    kind: Kind
    type: DeltaType
    key: str  # namespace/name
    obj: Obj  # the object (its last known state, for DELETED)


class DeltaQueue:
    """Deltas from every reflector, in arrival order; the main loop waits on it."""

    def __init__(self) -> None:
        self._items: list[Delta] = []
        self._cond = threading.Condition()
        self._woken = False

    def put(self, deltas: Iterable[Delta]) -> None:
        with self._cond:
            before = len(self._items)
            self._items.extend(deltas)
            if len(self._items) != before:
                self._cond.notify_all()

    def drain(self) -> list[Delta]:
        with self._cond:
            items, self._items = self._items, []
            self._woken = False
            return items

    def wait(self, timeout: float) -> bool:
        """Until something is queued or :meth:`wake` is called (or ``timeout``)."""
        with self._cond:
            if self._items or self._woken:
                return True
            self._cond.wait(timeout)
            return bool(self._items) or self._woken

    def wake(self) -> None:
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)


@dataclass
class Backoff:
    """Exponential backoff with full jitter: ``uniform(0, min(cap, base * 2**n))``,
    never below ``base / 2``."""

    base: float = 0.2
    cap: float = 30.0
    failures: int = 0

    def next(self) -> float:
        self.failures += 1
        top = min(self.cap, self.base * 2.0 ** min(self.failures - 1, 30))
        return max(self.base / 2, random.uniform(0, top))

    def reset(self) -> None:
        self.failures = 0


class _Relist(Exception):
    """The watch cannot continue from its resourceVersion: list again."""


@dataclass
class ReflectorStats:
    lists: int = 0
    watches: int = 0
    relists_gone: int = 0  # relists after 410 Gone
    errors: int = 0
    events: int = 0
    bookmarks: int = 0


class Reflector:
    """Keeps one resource in step with the API server, on its own thread."""

    def __init__(
        self,
        api: KubeAPI,
        kind: Kind,
        out: DeltaQueue,
        *,
        page_size: int = 500,
        watch_timeout: tuple[int, int] = (240, 360),
        backoff: Backoff | None = None,
        absent_retry: float = 30.0,
        field_selector: str | None = None,
        on_error: Callable[[Kind, str], None] | None = None,
    ) -> None:
        self.api = api
        self.kind = kind
        self.out = out
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self.absent_retry = absent_retry
        self.field_selector = field_selector
        self.on_error = on_error
        self.synced = threading.Event()
        self.absent = False  # the server does not serve this resource (yet)
        self.listed_at: float | None = None  # time.monotonic() when the last list began
        self.stats = ReflectorStats()
        self.resource_version = ""
        self._store: dict[str, Obj] = {}
        self._stop = threading.Event()
        self._relist_requested: list[threading.Event] = []
        self._lock = threading.Lock()
        self._stream: Any = None
        self._thread: threading.Thread | None = None

    # -- control --------------------------------------------------------------------------

    def start(self) -> Reflector:
        self._thread = threading.Thread(target=self._run, name=f"reflector:{self.kind.id}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._close_stream()
        if self._thread is not None:
            self._thread.join(timeout)

    def relist(self) -> threading.Event:
        """Ask for a fresh list now; the returned event is set once its deltas are
        queued (e.g. before a new leader builds its state from the cache)."""
        done = threading.Event()
        with self._lock:
            self._relist_requested.append(done)
        self._close_stream()
        return done

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _close_stream(self) -> None:
        with self._lock:
            stream = self._stream
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()

    # -- the loop -------------------------------------------------------------------------

    def _run(self) -> None:
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list or self._take_relist_requests(peek=True):
                    need_list = True  # until a list succeeds
                    waiting = self._take_relist_requests(peek=True)
                    self._list()
                    need_list = False
                    with self._lock:
                        self._relist_requested = [e for e in self._relist_requested
                                                  if e not in waiting]
                    for ev in waiting:
                        ev.set()
                    if self.absent:
                        self._sleep(self.absent_retry)
                        need_list = True
                        continue
                self._watch()
                self.backoff.reset()  # the watch ended cleanly (server timeout)
            except _Relist:
                self.stats.relists_gone += 1
                need_list = True
            except KubeError as err:
                self.stats.errors += 1
                if err.status == 410:
                    self.stats.relists_gone += 1
                    need_list = True
                    continue
                if self._stop.is_set():
                    break
                delay = self.backoff.next()
                if err.retry_after:
                    delay = max(delay, min(err.retry_after, self.backoff.cap))
                log.warning("%s: %s; retrying in %.2fs", self.kind.id, err, delay,
                            extra={"resource": self.kind.id, "status": err.status})
                if self.on_error is not None:
                    self.on_error(self.kind, "list" if need_list else "watch")
                self._sleep(delay)
            except Exception:  # a bug must not silently stop the cache
                self.stats.errors += 1
                log.exception("%s: reflector failed; listing again", self.kind.id)
                need_list = True
                self._sleep(self.backoff.next())
        for ev in self._take_relist_requests():
            ev.set()

    def _sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def _take_relist_requests(self, peek: bool = False) -> list[threading.Event]:
        with self._lock:
            if peek:
                return list(self._relist_requested)
            out, self._relist_requested = self._relist_requested, []
            return out

    def _list(self) -> None:
        """List every page; replace the store, queueing the differences."""
        started = time.monotonic()
        items: dict[str, Obj] = {}
        cont: str | None = None
        rv = ""
        try:
            while True:
                page = self.api.list(self.kind, limit=self.page_size, continue_=cont,
                                     field_selector=self.field_selector)
                meta = page.get("metadata") or {}
                for item in page.get("items") or []:
                    obj = self._typed(item)
                    items[object_key(obj)] = obj
                cont = meta.get("continue") or None
                if not cont:
                    rv = str(meta.get("resourceVersion") or "")
                    break
        except KubeError as err:
            if err.status in (403, 404) and not items:
                if not self.absent:
                    if err.status == 403:
                        log.warning("%s: list forbidden (%s); treating it as empty: grant "
                                    "list and watch on it to schedule these objects",
                                    self.kind.id, err.message, extra={"resource": self.kind.id})
                    else:
                        log.info("%s is not served; treating it as empty", self.kind.id,
                                 extra={"resource": self.kind.id})
                self.absent = True
                self.listed_at = started
                self._replace({}, "")
                return
            if err.status == 410 and cont:  # the continue token expired: start over
                raise _Relist() from None
            raise
        self.absent = False
        self.stats.lists += 1
        self.listed_at = started
        self._replace(items, rv)

    def _replace(self, items: dict[str, Obj], rv: str) -> None:
        deltas: list[Delta] = []
        old = self._store
        for key, obj in items.items():
            prev = old.get(key)
            if prev is None:
                deltas.append(Delta(self.kind, "ADDED", key, obj))
            elif resource_version(prev) != resource_version(obj) or not resource_version(obj):
                deltas.append(Delta(self.kind, "MODIFIED", key, obj))
        for key, obj in old.items():
            if key not in items:
                deltas.append(Delta(self.kind, "DELETED", key, obj))
        self._store = items
        self.resource_version = rv
        self.out.put(deltas)
        self.synced.set()

    def _watch(self) -> None:
        low, high = self.watch_timeout
        stream = self.api.watch(self.kind, resource_version=self.resource_version,
                                timeout_seconds=random.randint(low, high),
                                field_selector=self.field_selector)
        with self._lock:
            self._stream = stream
        if self._stop.is_set() or self._relist_requested:
            stream.close()
        self.stats.watches += 1
        try:
            for event in stream:
                if self._stop.is_set() or self._relist_requested:
                    break
                self._handle(event)
                self.backoff.reset()
        finally:
            with self._lock:
                self._stream = None
            stream.close()

    def _handle(self, event: Obj) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code") if isinstance(obj, dict) else None
            if code == 410:
                raise _Relist()
            raise KubeError(code if isinstance(code, int) else None,
                            str(obj.get("message") if isinstance(obj, dict) else obj),
                            reason=str(obj.get("reason", "")) if isinstance(obj, dict) else "")
        rv = resource_version(obj)
        if kind == "BOOKMARK":
            self.stats.bookmarks += 1
            if rv:
                self.resource_version = rv
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("%s: unknown watch event type %r", self.kind.id, kind)
            return
        obj = self._typed(obj)
        key = object_key(obj)
        self.stats.events += 1
        if kind == "DELETED":
            self._store.pop(key, None)
        else:
            self._store[key] = obj
        if rv:
            self.resource_version = rv
        self.out.put([Delta(self.kind, kind, key, obj)])

    def _typed(self, obj: Obj) -> Obj:
        """List items may omit apiVersion and kind: fill them in."""
        if obj.get("kind") and obj.get("apiVersion"):
            return obj
        return {**obj, "apiVersion": self.kind.api_version, "kind": self.kind.kind}

    # -- inspection -----------------------------------------------------------------------

    def keys(self) -> list[str]:
        return list(self._store)


def wait_synced(reflectors: Iterable[Reflector], timeout: float,
                stop: threading.Event | None = None) -> bool:
    """Whether every reflector listed once within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    for r in reflectors:
        while not r.synced.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or (stop is not None and stop.is_set()):
                return False
            r.synced.wait(min(left, 0.1))
    return True
