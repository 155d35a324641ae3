"""Binding through ``pods/binding`` and deleting pods, safely under API errors.

A bind either succeeds, fails for sure (:class:`~gangsched.scheduler.backend.BindError`),
or — after every retry failed in a way that may have applied — fails *uncertainly*
(:class:`UncertainBind`). The scheduler rolls the decision back in both failure cases;
the backend deletes an uncertain pod if the API later shows it bound.

* ``201`` (the reply is a ``Status``): bound.
* ``409``: the pod is bound already (maybe by our own earlier attempt whose reply was
  lost), being deleted, or was replaced. The pod is read back: bound to the node we
  asked for means success; anything else is a failure naming what happened.
* ``404``: the pod is gone. ``400``/``403``/``422``: refused. No retry.
* ``429``, ``5xx``, no response: retried with capped, jittered backoff (``Retry-After``
  respected up to the cap, 0.1 s by default: the rest of the gang is waiting); when
  the retries run out, the pod is read back to settle it.

Deletes (rollbacks, preemption, eviction) carry the pod's uid as a precondition and are
retried in the background until the pod is gone: a rollback that is not carried out
would leave a partial gang running.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gangsched.api.types import Pod
from gangsched.k8s.api import PODS, KubeAPI, KubeError, Obj
from gangsched.scheduler.backend import BindError

log = logging.getLogger("gangsched.k8s.binder")


class UncertainBind(BindError):
    """The bind may have applied although every attempt failed."""

    uncertain = True


@dataclass
class BindStats:
    binds: int = 0
    retries: int = 0
    conflicts_resolved: int = 0  # 409 where our earlier attempt had applied
    failures: dict[str, int] = field(default_factory=dict)  # reason -> count
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                  compare=False)

    def fail(self, reason: str) -> None:
        with self._lock:
            self.failures[reason] = self.failures.get(reason, 0) + 1

    def count(self, name: str) -> None:
        """One more ``binds``, ``retries`` or ``conflicts_resolved`` (binds run on
        several threads)."""
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)


def _delay(attempt: int, base: float, cap: float, retry_after: float | None) -> float:
    d = random.uniform(base / 2, min(cap, base * 2.0 ** attempt))
    if retry_after:
        d = max(d, min(retry_after, cap))
    return d


class Binder:
    """Binds pods; callable as ``binder(pod, node)`` (what :class:`KubeBackend` wants)."""

    def __init__(self, api: KubeAPI, *, attempts: int = 6, backoff: float = 0.02,
                 backoff_cap: float = 0.1, sleep: Callable[[float], None] = time.sleep
                 ) -> None:
        self.api = api
        self.attempts = attempts
        self.backoff = backoff
        self.backoff_cap = backoff_cap
        self.sleep = sleep
        self.stats = BindStats()

    def __call__(self, pod: Pod, node: str) -> None:
        self.bind(pod, node)

    def bind(self, pod: Pod, node: str) -> None:
        key = pod.key
        ambiguous = False
        last: KubeError | None = None
        for attempt in range(self.attempts):
            if attempt:
                self.stats.count("retries")
                self.sleep(_delay(attempt - 1, self.backoff, self.backoff_cap,
                                  last.retry_after if last else None))
            try:
                self.api.bind(pod.namespace, pod.name, node, pod.uid)
            except KubeError as err:
                last = err
                if err.status == 409:
                    self._settle_conflict(pod, node, err)
                    self.stats.count("conflicts_resolved")
                    self.stats.count("binds")
                    return
                if err.status == 404:
                    self.stats.fail("not_found")
                    raise BindError(f"pod {key} not found") from None
                if not err.retriable:
                    self.stats.fail("refused")
                    raise BindError(f"bind of {key} to {node} refused: {err}") from None
                ambiguous = ambiguous or err.ambiguous
                continue
            self.stats.count("binds")
            return
        if ambiguous:
            bound = self._read_back(pod)
            if bound is None:
                self.stats.fail("uncertain")
                raise UncertainBind(f"bind of {key} to {node} failed {self.attempts} times "
                                    f"(last: {last}) and the pod cannot be read back")
            if bound == node:
                self.stats.count("binds")
                self.stats.count("conflicts_resolved")
                return
        self.stats.fail("api_error")
        raise BindError(f"bind of {key} to {node} failed {self.attempts} times: {last}")

    def _settle_conflict(self, pod: Pod, node: str, err: KubeError) -> None:
        """A 409: success when the pod (the same one) is bound to ``node``, else raise."""
        current = self._read(pod)
        key = pod.key
        if current is None:
            self.stats.fail("conflict")
            raise UncertainBind(f"bind of {key} to {node} conflicted ({err.message}) and the "
                                "pod cannot be read back")
        uid = str((current.get("metadata") or {}).get("uid") or "") or None
        if pod.uid and uid and uid != pod.uid:
            self.stats.fail("replaced")
            raise BindError(f"pod {key} was replaced by a new pod of the same name")
        bound = (current.get("spec") or {}).get("nodeName")
        if bound == node:
            return
        self.stats.fail("conflict")
        if bound:
            raise BindError(f"pod {key} is already bound to {bound}")
        raise BindError(f"bind of {key} to {node} refused: {err.message}")

    def _read(self, pod: Pod) -> Obj | None:
        for attempt in range(self.attempts):
            if attempt:
                self.sleep(_delay(attempt - 1, self.backoff, self.backoff_cap, None))
            try:
                return self.api.get(PODS, pod.namespace, pod.name)
            except KubeError as err:
                if err.status == 404:
                    return {"metadata": {"uid": "<gone>"}, "spec": {}}
                if not err.retriable:
                    return None
        return None

    def _read_back(self, pod: Pod) -> str | None:
        """Where the pod is bound now: a node, ``""`` for unbound or gone, None if
        unknown."""
        current = self._read(pod)
        if current is None:
            return None
        uid = str((current.get("metadata") or {}).get("uid") or "") or None
        if pod.uid and uid != pod.uid:
            return ""
        return str((current.get("spec") or {}).get("nodeName") or "")


@dataclass(frozen=True)
class BindResult:
    """A bind done by :class:`BindPool`: ``error`` is None when the pod is bound."""

    pod: Pod
    node: str
    error: BindError | None


class BindPool:
    """Binds on ``workers`` threads, over the client's kept-alive connections.

    :meth:`submit` hands a bind over and returns at once, unless ``max_pending`` binds
    are unfinished already (then it waits: the API server sets the pace); the outcomes
    are collected by :meth:`results` on the caller's thread, and ``on_done`` is called
    (from a worker) after each one, to wake the caller up.
    """

    def __init__(self, bind: Callable[[Pod, str], None], *, workers: int = 16,
                 max_pending: int | None = None,
                 on_done: Callable[[], None] = lambda: None) -> None:
        if workers < 1:
            raise ValueError("a BindPool needs at least one worker")
        self._bind = bind
        self.workers = workers
        self._todo: queue.SimpleQueue[tuple[Pod, str] | None] = queue.SimpleQueue()
        self._slots = threading.BoundedSemaphore(max_pending or workers * 4)
        self._done: queue.SimpleQueue[BindResult] = queue.SimpleQueue()
        self._on_done = on_done
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False
        self.pending = 0  # submitted, not finished
        self._threads: list[threading.Thread] = []  # started with the first bind

    def submit(self, pod: Pod, node: str) -> None:
        self._slots.acquire()
        with self._lock:
            self.pending += 1
            closed = self._closed
            if not self._threads and not closed:
                self._threads = [threading.Thread(target=self._work, name=f"bind-{i}",
                                                  daemon=True) for i in range(self.workers)]
                for t in self._threads:
                    t.start()
        if closed:
            self._finish(BindResult(pod, node, BindError("the binder is shut down")))
        else:
            self._todo.put((pod, node))

    def _work(self) -> None:
        while True:
            item = self._todo.get()
            if item is None:
                return
            self._run(*item)

    def _run(self, pod: Pod, node: str) -> None:
        error: BindError | None = None
        try:
            self._bind(pod, node)
        except BindError as err:
            error = err
        except Exception as err:  # a bug must not leave a bind unaccounted for
            log.exception("bind of %s to %s raised", pod.key, node, extra={"pod": pod.key})
            error = UncertainBind(f"bind of {pod.key} to {node} raised {err!r}")
        self._finish(BindResult(pod, node, error))

    def _finish(self, result: BindResult) -> None:
        self._done.put(result)
        with self._lock:
            self.pending -= 1
            if not self.pending:
                self._idle.notify_all()
        self._slots.release()
        self._on_done()

    def results(self) -> list[BindResult]:
        """The binds finished since the last call, in the order they finished."""
        out: list[BindResult] = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                return out

    def wait_idle(self, timeout: float) -> bool:
        """Until no bind is unfinished (or ``timeout``); whether none is."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self) -> None:
        """Stop the workers once the binds queued so far are done (without waiting)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for _ in self._threads:
            self._todo.put(None)


@dataclass
class _PendingDelete:
    pod: Pod
    reason: str
    attempts: int = 0
    next_try: float = 0.0


class Deleter:
    """Deletes pods with a uid precondition; callable as ``deleter(pod, reason)``.

    A delete that fails is retried by :meth:`flush` (called by the main loop) with
    capped backoff until the pod is gone (``404``, or ``409``: a different pod now has
    the name). ``inline`` attempts are made at once, before queueing.
    """

    def __init__(self, api: KubeAPI, *, inline: int = 3, backoff: float = 0.05,
                 backoff_cap: float = 10.0, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.inline = inline
        self.backoff = backoff
        self.backoff_cap = backoff_cap
        self.sleep = sleep
        self.clock = clock
        self.pending: dict[str, _PendingDelete] = {}
        self.deleted = 0
        self.errors = 0

    def __call__(self, pod: Pod, reason: str) -> None:
        self.delete(pod, reason)

    def delete(self, pod: Pod, reason: str) -> bool:
        """Whether the pod is gone now (else it is queued for retries)."""
        item = _PendingDelete(pod, reason)
        for attempt in range(self.inline):
            if attempt:
                self.sleep(_delay(attempt - 1, self.backoff, 0.5, None))
            if self._try(item):
                return True
        self.pending[pod.key + "@" + (pod.uid or "")] = item
        item.next_try = self.clock() + _delay(item.attempts, self.backoff, self.backoff_cap,
                                              None)
        log.warning("delete of %s failed; retrying in the background", pod.key,
                    extra={"pod": pod.key, "reason": reason})
        return False

    def flush(self) -> None:
        now = self.clock()
        for key, item in list(self.pending.items()):
            if item.next_try > now:
                continue
            if self._try(item):
                del self.pending[key]
            else:
                item.next_try = now + _delay(min(item.attempts, 20), self.backoff,
                                             self.backoff_cap, None)

    def next_due(self) -> float | None:
        return min((i.next_try for i in self.pending.values()), default=None)

    def _try(self, item: _PendingDelete) -> bool:
        item.attempts += 1
        pod = item.pod
        try:
            self.api.delete(PODS, pod.namespace, pod.name, uid=pod.uid)
        except KubeError as err:
            if err.status in (404, 409):  # gone, or the name is another pod's now
                self.deleted += 1
                return True
            self.errors += 1
            if not err.retriable:
                log.error("cannot delete %s: %s", pod.key, err, extra={"pod": pod.key})
            return False
        self.deleted += 1
        return True
