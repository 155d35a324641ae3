"""Lease-based leader election with a fake clock and an in-memory API."""

from __future__ import annotations

import pytest
from k8s_fakes import FakeAPI, err

from gangsched.k8s.api import LEASES
from gangsched.k8s.leader import LeaderElector, LeaseConfig


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def elector(api: FakeAPI, clock: Clock, identity: str) -> LeaderElector:
    cfg = LeaseConfig(namespace="kube-system", name="gangsched", identity=identity,
                      lease_duration=15, renew_deadline=10, retry_period=2)
    return LeaderElector(api, cfg, clock=clock)


def lease(api: FakeAPI) -> dict:
    return api.objects[(LEASES.id, "kube-system/gangsched")]


def test_the_first_candidate_creates_the_lease_and_leads() -> None:
    api, clock = FakeAPI(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.try_acquire_or_renew() and a.is_leader()
    assert not b.try_acquire_or_renew() and not b.is_leader()
    spec = lease(api)["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == (
        "a", 15, 0)
    clock.t += 5
    assert a.try_acquire_or_renew()  # renewal keeps acquireTime
    assert lease(api)["spec"]["acquireTime"] == spec["acquireTime"]


def test_a_standby_takes_over_once_the_lease_expires_on_its_own_clock() -> None:
    api, clock = FakeAPI(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b first sees the record now
    clock.t += 9
    assert a.is_leader()
    clock.t += 2  # a has not renewed for 11s > renew_deadline: it stops leading
    assert not a.is_leader()
    assert not b.try_acquire_or_renew()  # 11s < 15s since b saw the record change
    clock.t += 5
    assert b.try_acquire_or_renew() and b.is_leader()
    assert lease(api)["spec"]["holderIdentity"] == "b"
    assert lease(api)["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()  # a comes back: b holds it


def test_racing_writers_conflict_and_only_one_wins() -> None:
    api, clock = FakeAPI(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.try_acquire_or_renew()
    real_get = api.get

    def get_then_a_renews(kind, ns, name):  # type: ignore[no-untyped-def]
        current = real_get(kind, ns, name)
        api.get = real_get  # type: ignore[method-assign]
        assert a.try_acquire_or_renew()  # a writes between b's read and b's write
        return current

    assert not b.try_acquire_or_renew()  # b sees a's record
    clock.t += 20  # a silent for 20s: expired as far as b can tell... but a renews now
    api.get = get_then_a_renews  # type: ignore[method-assign]
    assert not b.try_acquire_or_renew()  # 409 on the stale resourceVersion
    assert ("replace", LEASES.id, "gangsched") in api.calls[-1:]
    assert lease(api)["spec"]["holderIdentity"] == "a"


def test_release_lets_a_standby_take_over_at_once() -> None:
    api, clock = FakeAPI(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    a._leader = True
    assert a.release() and not a.is_leader()
    assert lease(api)["spec"]["holderIdentity"] == ""
    assert b.try_acquire_or_renew()


def test_api_errors_are_not_leadership() -> None:
    api, clock = FakeAPI(), Clock()
    a = elector(api, clock, "a")
    api.fail[("get", "gangsched")] = [err(500)]
    assert not a.try_acquire_or_renew()
    assert a.try_acquire_or_renew()
    api.fail[("replace", "gangsched")] = [err(503)]
    clock.t += 1
    assert not a.try_acquire_or_renew()
    assert a.is_leader()  # still within the renew deadline


def test_lease_timings_must_nest() -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        LeaseConfig(identity="x", lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError, match="identity"):
        LeaseConfig(identity="")
