"""Binding and deleting under API errors (an in-memory API, no server)."""

from __future__ import annotations

import pytest
from k8s_fakes import FakeAPI, err, pod_obj

from gangsched.api.types import Pod
from gangsched.k8s.api import PODS
from gangsched.k8s.binder import Binder, Deleter, UncertainBind
from gangsched.scheduler import BindError


def setup(*names: str) -> tuple[FakeAPI, dict[str, Pod]]:
    api = FakeAPI()
    pods = {}
    for name in names:
        obj = api.put(PODS, pod_obj(name))
        pods[name] = Pod(name=name, uid=obj["metadata"]["uid"])
    return api, pods


def binder(api: FakeAPI) -> Binder:
    return Binder(api, sleep=lambda _s: None)


def node_of(api: FakeAPI, name: str) -> str | None:
    return api.objects[(PODS.id, f"default/{name}")]["spec"].get("nodeName")


def test_bind_sets_the_node() -> None:
    api, pods = setup("a")
    binder(api).bind(pods["a"], "n1")
    assert node_of(api, "a") == "n1"


def test_server_errors_are_retried() -> None:
    api, pods = setup("a")
    api.fail[("bind", "a")] = [err(500), err(429), err(None)]
    b = binder(api)
    b.bind(pods["a"], "n1")
    assert node_of(api, "a") == "n1"
    assert (api.count("bind"), b.stats.retries) == (4, 3)


def test_a_conflict_after_our_own_applied_bind_is_success() -> None:
    api, pods = setup("a")

    def applied_then_lost(ns: str, name: str, node: str) -> None:
        if api.count("bind") == 1:
            raise err(500, "reply lost after the write")

    api.on_bind = applied_then_lost
    b = binder(api)
    b.bind(pods["a"], "n1")  # 500 (applied) -> retry -> 409 -> read back: ours
    assert node_of(api, "a") == "n1"
    assert b.stats.conflicts_resolved == 1


def test_bound_elsewhere_is_a_bind_error() -> None:
    api, pods = setup("a")
    api.objects[(PODS.id, "default/a")]["spec"]["nodeName"] = "n2"
    with pytest.raises(BindError, match="already bound to n2"):
        binder(api).bind(pods["a"], "n1")


def test_a_replaced_pod_is_not_bound() -> None:
    api, pods = setup("a")
    api.objects[(PODS.id, "default/a")]["metadata"]["uid"] = "someone-else"
    with pytest.raises(BindError, match="replaced"):
        binder(api).bind(pods["a"], "n1")


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_refusals_are_not_retried(status: int) -> None:
    api, pods = setup("a")
    api.fail[("bind", "a")] = [err(status)]
    with pytest.raises(BindError) as info:
        binder(api).bind(pods["a"], "n1")
    assert not isinstance(info.value, UncertainBind)
    assert api.count("bind") == 1


def test_exhausted_retries_are_settled_by_reading_the_pod() -> None:
    api, pods = setup("a", "b")
    api.fail[("bind", "a")] = [err(503)] * 6
    with pytest.raises(BindError, match="failed 6 times") as info:
        binder(api).bind(pods["a"], "n1")  # read back: not bound -> a sure failure
    assert not isinstance(info.value, UncertainBind)
    api.fail[("bind", "b")] = [err(None)] * 6
    api.fail[("get", "b")] = [err(None)] * 6
    with pytest.raises(UncertainBind):
        binder(api).bind(pods["b"], "n1")  # cannot know: the backend watches for it


def test_deletes_are_retried_until_the_pod_is_gone() -> None:
    api, pods = setup("a", "b", "c")
    t = [0.0]
    deleter = Deleter(api, sleep=lambda _s: None, clock=lambda: t[0])
    api.fail[("delete", "a")] = [err(500)] * 3 + [err(503)]
    assert not deleter.delete(pods["a"], "rollback")
    assert list(deleter.pending) and deleter.next_due() is not None
    t[0] += 100
    deleter.flush()  # 503 once more
    t[0] += 100
    deleter.flush()
    assert not deleter.pending
    assert (PODS.id, "default/a") not in api.objects
    assert deleter.delete(pods["b"], "x") and deleter.delete(pods["b"], "x")  # 404: gone
    api.objects[(PODS.id, "default/c")]["metadata"]["uid"] = "new"
    assert deleter.delete(pods["c"], "x")  # 409: another pod has the name now
    assert (PODS.id, "default/c") in api.objects
