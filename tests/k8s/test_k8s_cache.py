"""List-then-watch reflectors against a scripted in-memory API."""

from __future__ import annotations

import time

from k8s_fakes import FakeAPI, FakeWatch, err, pod_obj

from gangsched.k8s.api import HYPERNODES, PODS
from gangsched.k8s.cache import Backoff, Delta, DeltaQueue, Reflector, wait_synced


def collect(q: DeltaQueue, n: int, timeout: float = 3.0) -> list[Delta]:
    out: list[Delta] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        q.wait(0.05)
        out.extend(q.drain())
    return out


def page(rv: str, *items: dict, cont: str | None = None) -> dict:
    meta = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return {"metadata": meta, "items": [dict(i) for i in items]}


def reflector(api: FakeAPI, q: DeltaQueue, kind=PODS) -> Reflector:  # type: ignore[no-untyped-def]
    return Reflector(api, kind, q, backoff=Backoff(base=0.01, cap=0.05), absent_retry=0.05)


def strip(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


def test_list_then_watch_with_resource_versions_and_bookmarks() -> None:
    api, q = FakeAPI(), DeltaQueue()
    a = pod_obj("a", rv="5")
    del a["apiVersion"], a["kind"]  # list items may omit them
    api.lists[PODS.id] = [page("10", a, cont="next"), page("11", pod_obj("b", rv="6"))]
    w = FakeWatch([{"type": "MODIFIED", "object": pod_obj("a", rv="12")},
                   {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}},
                   {"type": "DELETED", "object": pod_obj("b", rv="21")}], block=True)
    api.watches[PODS.id] = [w]
    r = reflector(api, q).start()
    try:
        deltas = collect(q, 4)
        assert [(x.type, x.key) for x in deltas] == [
            ("ADDED", "default/a"), ("ADDED", "default/b"), ("MODIFIED", "default/a"),
            ("DELETED", "default/b")]
        assert deltas[0].obj["kind"] == "Pod"  # filled in
        assert wait_synced([r], 1)
        time.sleep(0.1)
        assert r.resource_version == "21"
        assert ("watch", PODS.id, "11") in api.calls  # from the list's resourceVersion
        assert r.stats.bookmarks == 1
    finally:
        r.stop()


def test_410_gone_relists_and_turns_the_difference_into_deltas() -> None:
    api, q = FakeAPI(), DeltaQueue()
    api.lists[PODS.id] = [page("10", pod_obj("a", rv="1"), pod_obj("b", rv="2")),
                          page("30", pod_obj("a", rv="25"), pod_obj("c", rv="26"))]
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                         "message": "too old resource version"}}
    api.watches[PODS.id] = [FakeWatch([gone]), FakeWatch(block=True)]
    r = reflector(api, q).start()
    try:
        deltas = collect(q, 5)
        assert [(x.type, x.key) for x in deltas] == [
            ("ADDED", "default/a"), ("ADDED", "default/b"),
            ("MODIFIED", "default/a"), ("ADDED", "default/c"), ("DELETED", "default/b")]
        assert r.stats.relists_gone == 1
    finally:
        r.stop()


def test_dropped_watches_resume_from_the_last_version_and_errors_back_off() -> None:
    api, q = FakeAPI(), DeltaQueue()
    api.lists[PODS.id] = [err(500), page("10")]
    api.watches[PODS.id] = [
        FakeWatch([{"type": "ADDED", "object": pod_obj("a", rv="11")}],
                  error=err(None, "connection reset")),
        err(503), err(410, "gone"),
        FakeWatch(block=True)]
    r = reflector(api, q).start()
    try:
        deltas = collect(q, 1)
        assert [(x.type, x.key) for x in deltas] == [("ADDED", "default/a")]
        deadline = time.monotonic() + 2
        while api.count("list") < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        watches = [c for c in api.calls if c[0] == "watch"]
        assert [rv for _, _, rv in watches[:3]] == ["10", "11", "11"]  # resumed
        assert api.count("list") == 3  # the failed one, the first, the one after 410
        assert r.stats.errors >= 3
    finally:
        r.stop()


def test_a_resource_the_server_does_not_serve_is_synced_and_empty() -> None:
    api, q = FakeAPI(), DeltaQueue()
    api.lists[HYPERNODES.id] = [err(404, "the server could not find the requested resource")]
    r = reflector(api, q, HYPERNODES).start()
    try:
        assert wait_synced([r], 1)
        assert r.absent
        deadline = time.monotonic() + 2
        while api.count("list") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert api.count("list") >= 2  # it looks again now and then
    finally:
        r.stop()


def test_relist_on_request() -> None:
    api, q = FakeAPI(), DeltaQueue()
    api.lists[PODS.id] = [page("10", pod_obj("a", rv="1")), page("20", pod_obj("b", rv="2"))]
    r = reflector(api, q).start()
    try:
        collect(q, 1)
        done = r.relist()
        assert done.wait(2)
        assert [(x.type, x.key) for x in q.drain()] == [("ADDED", "default/b"),
                                                        ("DELETED", "default/a")]
    finally:
        r.stop()


def test_backoff_is_capped_and_jittered() -> None:
    b = Backoff(base=0.2, cap=1.0)
    delays = [b.next() for _ in range(20)]
    assert all(0.1 <= x <= 1.0 for x in delays)
    b.reset()
    assert b.next() <= 0.2
