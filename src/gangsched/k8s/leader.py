"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go does it.

Every ``retry_period`` each candidate reads the Lease. It takes it when it does not
exist (create), when it holds it already (renew), or when the holder has not renewed
it for ``leaseDurationSeconds`` *as observed locally* (the time the record last changed
on this candidate's clock, not the timestamps in the record, so clock skew between
machines does not matter). Every write is an update with the resourceVersion that was
read, so of two candidates racing for an expired lease one gets ``409 Conflict``.

The leader counts as leader only while its last successful renewal is younger than
``renew_deadline`` (shorter than the lease duration): a leader cut off from the API
stops binding before anyone else may take over. On graceful shutdown it releases the
lease (empty holder, duration 1 s) so that a standby takes over at once.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gangsched.k8s.api import LEASES, KubeAPI, KubeError, Obj

log = logging.getLogger("gangsched.k8s.leader")

MAX_LEASE_SECONDS = 2**31 - 1  # leaseDurationSeconds is an int32


def micro_time(t: float | None = None) -> str:
    """``metav1.MicroTime`` text: RFC 3339 with microseconds, UTC."""
    when = dt.datetime.fromtimestamp(time.time() if t is None else t, dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str = "kube-system"
    name: str = "gangsched"
    identity: str = ""
    lease_duration: float = 15.0  # seconds a standby waits after the last renewal it saw
    renew_deadline: float = 10.0  # a leader that could not renew for this long steps down
    retry_period: float = 2.0  # seconds between attempts

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election needs an identity")
        if not all(math.isfinite(t) for t in (self.retry_period, self.renew_deadline,
                                               self.lease_duration)):
            raise ValueError("lease timings must be finite numbers of seconds, got "
                             f"{self.retry_period}, {self.renew_deadline}, "
                             f"{self.lease_duration}")
        if self.lease_duration > MAX_LEASE_SECONDS:
            raise ValueError(f"lease_duration must be at most {MAX_LEASE_SECONDS} seconds "
                             "(leaseDurationSeconds is an int32)")
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need 0 < retry_period < renew_deadline < lease_duration, got "
                             f"{self.retry_period}, {self.renew_deadline}, "
                             f"{self.lease_duration}")


class LeaderElector:
    """Campaigns for the lease on its own thread; :meth:`is_leader` is cheap."""

    def __init__(self, api: KubeAPI, config: LeaseConfig, *,
                 clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[bool], None] | None = None) -> None:
        self.api = api
        self.config = config
        self.clock = clock
        self.on_change = on_change
        self._leader = False
        self._renewed_at = 0.0  # local clock of our last successful acquire/renew
        self._observed: tuple[Any, ...] | None = None  # last holder record seen
        self._observed_at = 0.0
        self._lease: Obj | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.transitions = 0  # times we became leader
        self.holder = ""  # the holder as last seen
        self.acquired_at: float | None = None  # time.monotonic() when we last became leader
        self.attempted = threading.Event()  # set after the first attempt (won or not)

    # -- state ----------------------------------------------------------------------------

    def is_leader(self) -> bool:
        with self._lock:
            return self._leader and self.clock() - self._renewed_at < self.config.renew_deadline

    def healthy(self, grace: float = 5.0) -> bool:
        """False when we think we lead but have not renewed for renew_deadline + grace
        (the thread is stuck): a liveness probe restarts us."""
        with self._lock:
            if not self._leader:
                return self._thread is None or self._thread.is_alive()
            return self.clock() - self._renewed_at < self.config.renew_deadline + grace

    def _set_leader(self, leader: bool) -> None:
        with self._lock:
            changed = leader != self._leader
            self._leader = leader
        if changed:
            if leader:
                self.transitions += 1
                self.acquired_at = time.monotonic()
            log.info("%s leadership of lease %s/%s", "acquired" if leader else "lost",
                     self.config.namespace, self.config.name,
                     extra={"identity": self.config.identity, "leader": leader})
            if self.on_change is not None:
                self.on_change(leader)

    # -- the loop -------------------------------------------------------------------------

    def start(self) -> LeaderElector:
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()
        return self

    def stop(self, release: bool = True, timeout: float = 5.0) -> None:
        """Stop campaigning; with ``release`` give the lease up if we hold it."""
        self._stop.set()
        self.attempted.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if release:
            self.release()
        self._set_leader(False)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                ok = self.try_acquire_or_renew()
            except Exception:
                log.exception("leader election attempt failed")
                ok = False
            if not ok and self._leader and not self.is_leader():
                self._set_leader(False)  # renew_deadline passed without a renewal
            self.attempted.set()
            self._stop.wait(self.config.retry_period)

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the lease afterwards."""
        cfg = self.config
        now = self.clock()
        try:
            lease = self.api.get(LEASES, cfg.namespace, cfg.name)
        except KubeError as err:
            if err.status != 404:
                log.debug("cannot read lease: %s", err)
                return False
            return self._create(now)
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"),
                  spec.get("leaseTransitions"))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        self.holder = holder
        duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
        mine = holder == cfg.identity
        if holder and not mine and now < self._observed_at + duration:
            if self._leader:
                self._set_leader(False)
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = {
            "holderIdentity": cfg.identity,
            "leaseDurationSeconds": max(1, math.ceil(cfg.lease_duration)),
            "acquireTime": spec.get("acquireTime") if mine else micro_time(),
            "renewTime": micro_time(),
            "leaseTransitions": transitions if mine else transitions + 1,
        }
        body = {**lease, "spec": new_spec}
        try:
            updated = self.api.replace(LEASES, cfg.namespace, cfg.name, body)
        except KubeError as err:
            log.debug("cannot update lease: %s", err)  # 409: someone else wrote it first
            return False
        self._took(updated, now)
        return True

    def _create(self, now: float) -> bool:
        cfg = self.config
        stamp = micro_time()
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": {"holderIdentity": cfg.identity,
                         "leaseDurationSeconds": max(1, math.ceil(cfg.lease_duration)),
                         "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0}}
        try:
            created = self.api.create(LEASES, cfg.namespace, body)
        except KubeError as err:
            if err.status != 409:
                log.debug("cannot create lease: %s", err)
            return False
        self._took(created, now)
        return True

    def _took(self, lease: Obj, now: float) -> None:
        spec = lease.get("spec") or {}
        with self._lock:
            self._lease = lease
            self._renewed_at = now
        self._observed = (spec.get("holderIdentity"), spec.get("renewTime"),
                          spec.get("leaseDurationSeconds"), spec.get("leaseTransitions"))
        self._observed_at = now
        self.holder = self.config.identity
        self._set_leader(True)

    def release(self) -> bool:
        """Give the lease up (graceful shutdown): a standby can take it at once."""
        with self._lock:
            lease = self._lease
            held = self._leader
        if lease is None or not held:
            return False
        cfg = self.config
        try:
            current = self.api.get(LEASES, cfg.namespace, cfg.name)
            if (current.get("spec") or {}).get("holderIdentity") != cfg.identity:
                return False
            stamp = micro_time()
            spec = {**(current.get("spec") or {}), "holderIdentity": "",
                    "leaseDurationSeconds": 1, "renewTime": stamp, "acquireTime": stamp}
            self.api.replace(LEASES, cfg.namespace, cfg.name, {**current, "spec": spec})
        except KubeError as err:
            log.warning("could not release lease %s/%s: %s", cfg.namespace, cfg.name, err)
            return False
        finally:
            self._set_leader(False)
        log.info("released lease %s/%s", cfg.namespace, cfg.name)
        return True


class AlwaysLeader:
    """``--leader-elect=false``: a single replica that always leads."""

    def __init__(self) -> None:
        self.acquired_at: float | None = time.monotonic()
        self.attempted = threading.Event()
        self.attempted.set()

    def is_leader(self) -> bool:
        return True

    def healthy(self, grace: float = 5.0) -> bool:
        return True

    def start(self) -> AlwaysLeader:
        return self

    def stop(self, release: bool = True, timeout: float = 5.0) -> None:
        return None
