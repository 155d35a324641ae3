"""The wire format, checked with the standard library's HTTP client: discovery, Status
objects, lists and paging, tables, patches, watches and the /_faults endpoint."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from apiserver_helpers import node, pod

from gangsched.testing.apiserver import TestAPIServer

TIMEOUT = 5


class Http:
    def __init__(self, server: TestAPIServer) -> None:
        self.netloc = urlsplit(server.url).netloc

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json",
                headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
        conn = http.client.HTTPConnection(self.netloc, timeout=TIMEOUT)
        try:
            data = None if body is None else (body if isinstance(body, bytes)
                                              else json.dumps(body).encode())
            conn.request(method, path, body=data,
                         headers={"Content-Type": content_type, **(headers or {})})
            resp = conn.getresponse()
            raw = resp.read()
            text = raw.decode()
            chunked = resp.getheader("Transfer-Encoding") == "chunked"
            parsed = json.loads(text) if text.startswith(("{", "[")) and not chunked else text
            return resp.status, parsed, dict(resp.getheaders())
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        code, body, _ = self.request("GET", path, **kw)
        return code, body

    def lines(self, path: str) -> list[dict[str, Any]]:
        """A watch's events until the server ends the stream."""
        code, body, headers = self.request("GET", path)
        assert code == 200 and headers.get("Transfer-Encoding") == "chunked"
        return [json.loads(line) for line in body.splitlines() if line.strip()]


@pytest.fixture
def web(server: TestAPIServer) -> Http:
    return Http(server)


PODS = "/api/v1/namespaces/default/pods"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"


def test_discovery(web: Http) -> None:
    code, versions = web.get("/api")
    assert code == 200 and versions["kind"] == "APIVersions" and versions["versions"] == ["v1"]
    _, core = web.get("/api/v1")
    names = {r["name"]: r for r in core["resources"]}
    assert names["pods"]["namespaced"] and not names["nodes"]["namespaced"]
    assert names["pods/binding"]["verbs"] == ["create"]
    assert "watch" in names["pods"]["verbs"] and "pods/status" in names
    _, groups = web.get("/apis")
    assert groups["kind"] == "APIGroupList"
    by_name = {g["name"]: g for g in groups["groups"]}
    for group in ("coordination.k8s.io", "scheduling.volcano.sh", "topology.volcano.sh",
                  "scheduling.k8s.io", "workload.serving.volcano.sh"):
        assert group in by_name
    assert [v["version"] for v in by_name["scheduling.k8s.io"]["versions"]] == \
        ["v1", "v1beta1", "v1alpha3"]
    _, group = web.get("/apis/scheduling.k8s.io")
    assert group["kind"] == "APIGroup"
    _, alpha = web.get("/apis/scheduling.k8s.io/v1alpha3")
    assert {r["name"] for r in alpha["resources"]} >= {"compositepodgroups", "podgroups",
                                                       "workloads"}
    _, hyper = web.get("/apis/topology.volcano.sh/v1alpha1")
    assert hyper["resources"][0]["namespaced"] is False
    code, version = web.get("/version")
    assert code == 200 and version["major"] == "1"
    assert web.get("/healthz") == (200, "ok")
    assert web.get("/apis/nothing.example.com/v1")[0] == 404


def test_error_statuses(web: Http) -> None:
    code, status = web.get(f"{PODS}/missing")
    assert code == 404
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                      "status": "Failure", "message": 'pods "missing" not found',
                      "reason": "NotFound", "details": {"name": "missing", "kind": "pods"},
                      "code": 404}
    assert web.get("/api/v1/nothings")[1]["reason"] == "NotFound"
    code, status, _ = web.request("PUT", PODS, pod("p"))
    assert (code, status["reason"]) == (405, "MethodNotAllowed")
    code, status, _ = web.request("POST", PODS, b"{not json")
    assert (code, status["reason"]) == (400, "BadRequest")
    web.request("POST", PODS, pod("p"))
    code, status, _ = web.request("POST", PODS, pod("p"))
    assert (code, status["reason"]) == (409, "AlreadyExists")
    code, status, _ = web.request("POST", PODS, pod("Bad_Name"))
    assert (code, status["reason"]) == (422, "Invalid")


def test_create_update_with_optimistic_concurrency(web: Http, server: TestAPIServer) -> None:
    code, created, _ = web.request("POST", PODS, pod("p"))
    assert code == 201
    first_rv = created["metadata"]["resourceVersion"]
    created["metadata"]["labels"] = {"a": "1"}
    code, updated, _ = web.request("PUT", f"{PODS}/p", created)
    assert code == 200 and int(updated["metadata"]["resourceVersion"]) > int(first_rv)
    code, status, _ = web.request("PUT", f"{PODS}/p", created)  # created carries first_rv
    assert (code, status["reason"]) == (409, "Conflict")
    assert "the object has been modified" in status["message"]
    # A no-op update stores nothing new.
    before = server.store.resource_version
    code, _, _ = web.request("PUT", f"{PODS}/p", updated)
    assert code == 200 and server.store.resource_version == before


def test_resource_versions_are_global_and_increasing(web: Http) -> None:
    versions = []
    for i in range(3):
        versions.append(int(web.request("POST", PODS, pod(f"p{i}"))[1]["metadata"]
                            ["resourceVersion"]))
        versions.append(int(web.request("POST", "/api/v1/nodes", node(f"n{i}"))[1]
                            ["metadata"]["resourceVersion"]))
    assert versions == sorted(versions) and len(set(versions)) == 6
    _, listed = web.get("/api/v1/nodes")
    assert listed["kind"] == "NodeList" and int(listed["metadata"]["resourceVersion"]) == \
        versions[-1]
    assert all(n["kind"] == "Node" and n["apiVersion"] == "v1" for n in listed["items"])


def test_limit_and_continue(web: Http, server: TestAPIServer) -> None:
    for i in range(5):
        server.store.create(pod(f"p{i}"))
    _, page = web.get(f"{PODS}?limit=2")
    assert [p["metadata"]["name"] for p in page["items"]] == ["p0", "p1"]
    assert page["metadata"]["remainingItemCount"] == 3
    names = []
    token = page["metadata"]["continue"]
    while token:
        _, page = web.get(f"{PODS}?limit=2&continue={token}")
        names += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue")
    assert names == ["p2", "p3", "p4"]


def test_patch_types(web: Http, server: TestAPIServer) -> None:
    server.store.create(pod("p", labels={"a": "1", "b": "2"}), api=True)  # status: Pending
    merge = "application/merge-patch+json"
    code, patched, _ = web.request("PATCH", f"{PODS}/p",
                                   {"metadata": {"labels": {"a": None, "c": "3"}}}, merge)
    assert code == 200 and patched["metadata"]["labels"] == {"b": "2", "c": "3"}
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}},
           {"op": "test", "path": "/metadata/labels/b", "value": "2"}]
    code, patched, _ = web.request("PATCH", f"{PODS}/p", ops, "application/json-patch+json")
    assert code == 200 and patched["metadata"]["annotations"] == {"x": "y"}
    code, _, _ = web.request("PATCH", f"{PODS}/p", [{"op": "test", "path": "/metadata/name",
                                                     "value": "q"}],
                             "application/json-patch+json")
    assert code == 422
    # Strategic merge: containers merge by name.
    strategic = "application/strategic-merge-patch+json"
    code, patched, _ = web.request("PATCH", f"{PODS}/p/status", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}, strategic)
    assert code == 200 and patched["status"]["conditions"][0]["reason"] == "Unschedulable"
    assert patched["status"]["phase"] == "Pending"
    # ... but not on custom resources, as on the real server.
    server.store.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": "g"}, "spec": {"minMember": 1}})
    code, status, _ = web.request("PATCH", f"{PODGROUPS}/g", {"spec": {"minMember": 2}},
                                  strategic)
    assert code == 415 and status["reason"] == "UnsupportedMediaType"
    # A resourceVersion in a patch is a precondition.
    code, status, _ = web.request("PATCH", f"{PODGROUPS}/g",
                                  {"metadata": {"resourceVersion": "1"}}, merge)
    assert code == 409


def test_apply_patch_creates_then_merges(web: Http) -> None:
    apply = "application/apply-patch+yaml"
    doc = (b"apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
           b"metadata: {name: g}\nspec: {minMember: 2}\n")
    code, created, _ = web.request("PATCH", f"{PODGROUPS}/g?fieldManager=me", doc, apply)
    assert code == 201 and created["spec"] == {"minMember": 2}
    code, applied, _ = web.request("PATCH", f"{PODGROUPS}/g?fieldManager=me",
                                   b"spec: {queue: q}", apply)
    assert code == 200 and applied["spec"] == {"minMember": 2, "queue": "q"}
    assert web.request("PATCH", f"{PODGROUPS}/g", doc, apply)[0] == 400  # no fieldManager


def test_binding_status_reply_and_conflict(web: Http, server: TestAPIServer) -> None:
    server.store.create(pod("p"))
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    code, status, _ = web.request("POST", f"{PODS}/p/binding", body)
    assert (code, status) == (201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Success", "code": 201})
    code, status, _ = web.request("POST", f"{PODS}/p/binding", body)
    assert code == 409 and status["reason"] == "Conflict"
    assert status["message"] == ('Operation cannot be fulfilled on pods/binding "p": '
                                 'pod p is already assigned to node "n1"')
    # The legacy bindings collection works the same way.
    server.store.create(pod("q"))
    code, _, _ = web.request("POST", "/api/v1/namespaces/default/bindings",
                             {**body, "metadata": {"name": "q"}})
    assert code == 201 and server.store.get("pods", "q")["spec"]["nodeName"] == "n1"


def test_delete_preconditions_and_finalizers(web: Http, server: TestAPIServer) -> None:
    created = server.store.create(pod("p"))
    code, status, _ = web.request("DELETE", f"{PODS}/p", {"preconditions": {"uid": "other"}})
    assert code == 409
    code, deleted, _ = web.request("DELETE", f"{PODS}/p",
                                   {"preconditions": {"uid": created["metadata"]["uid"]}})
    assert code == 200 and deleted["kind"] == "Pod"
    # Nodes answer a Status, as the real server does.
    server.store.create(node("n1"))
    code, status, _ = web.request("DELETE", "/api/v1/nodes/n1")
    assert code == 200 and status["kind"] == "Status" and status["status"] == "Success"
    # An object with finalizers waits for them.
    held = pod("held")
    held["metadata"]["finalizers"] = ["example.com/keep"]
    server.store.create(held)
    code, pending, _ = web.request("DELETE", f"{PODS}/held")
    assert code == 202 and pending["metadata"]["deletionTimestamp"]
    web.request("PATCH", f"{PODS}/held", {"metadata": {"finalizers": None}},
                "application/merge-patch+json")
    assert server.store.find("pods", "held") is None


def test_table_output_for_kubectl(web: Http, server: TestAPIServer) -> None:
    server.store.create(pod("p", node="n1"))
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    code, table, _ = web.request("GET", PODS, headers=accept)
    assert code == 200 and table["kind"] == "Table"
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    row = table["rows"][0]
    assert row["cells"][0] == "p" and row["cells"][columns.index("Node")] == "n1"
    assert row["object"]["kind"] == "PartialObjectMetadata"


def test_watch_stream_format_and_timeout(web: Http, server: TestAPIServer) -> None:
    server.store.create(pod("p"))
    start = server.store.resource_version
    server.store.patch("pods", "p", {"metadata": {"labels": {"a": "b"}}})
    server.store.delete("pods", "p")
    events = web.lines(f"{PODS}?watch=1&resourceVersion={start}&timeoutSeconds=1")
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert events[1]["object"]["metadata"]["resourceVersion"] == \
        str(server.store.resource_version)
    # The legacy /watch/ path.
    events = web.lines(f"/api/v1/watch/namespaces/default/pods?resourceVersion={start}"
                       "&timeoutSeconds=1")
    assert len(events) == 2


def test_watch_too_old_is_an_error_event(web: Http) -> None:
    with TestAPIServer(port=0, history=2) as srv:
        for i in range(5):
            srv.store.create(pod(f"p{i}"))
        events = Http(srv).lines(f"{PODS}?watch=true&resourceVersion=1")
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")


def test_watch_initial_events_end_bookmark(web: Http, server: TestAPIServer) -> None:
    server.store.create(pod("p"))
    events = web.lines(f"{PODS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
                       "&resourceVersionMatch=NotOlderThan&timeoutSeconds=1")
    assert events[0]["type"] == "ADDED"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {
        "k8s.io/initial-events-end": "true"}


def test_faults_endpoint(web: Http, server: TestAPIServer) -> None:
    code, snapshot, _ = web.request("PATCH", "/_faults", {"error_rate": 1.0,
                                                          "error_codes": [429]})
    assert code == 200 and snapshot["config"]["error_rate"] == 1.0
    code, status, headers = web.request("POST", PODS, pod("p"))
    assert (code, status["reason"], headers["Retry-After"]) == (429, "TooManyRequests", "1")
    assert web.get(PODS)[0] == 200  # reads are not in the default scope
    assert web.request("PATCH", "/_faults", {"error_rate": 2})[0] == 400
    assert web.request("PATCH", "/_faults", {"bogus": 1})[0] == 400
    code, snapshot, _ = web.request("DELETE", "/_faults")
    assert snapshot["config"]["error_rate"] == 0.0 and snapshot["stats"]["injected_429"] == 1
    assert web.request("POST", PODS, pod("p"))[0] == 201
    _, stats = web.get("/_stats")
    assert stats["objects"]["pods"] == 1


def test_latency_and_watch_lifetime_faults(web: Http, server: TestAPIServer) -> None:
    import time

    server.faults.configure(latency_ms=100)
    started = time.monotonic()
    assert web.get(PODS)[0] == 200
    assert time.monotonic() - started >= 0.1
    server.faults.configure(latency_ms=0, watch_max_seconds=0.3, watch_drop_mode="clean")
    started = time.monotonic()
    assert web.lines(f"{PODS}?watch=1&timeoutSeconds=5") == []
    assert time.monotonic() - started < 2
    assert server.faults.stats["dropped_watches"] == 1
