"""A wire-compatible Kubernetes API server for tests and ``gangsched dev-cluster``.

No real kube-apiserver runs on a development machine or in CI here, so this one speaks
enough of the Kubernetes API for the official ``kubernetes`` Python client and ``kubectl``:
discovery, get/list/watch (resourceVersions, bookmarks, 410 for expired versions), label
and field selectors, create/update (optimistic concurrency)/patch (merge, strategic,
JSON, apply)/delete, status subresources, ``pods/binding``, server-side tables for
``kubectl get``, and fault injection. It uses only the standard library (and PyYAML).

::

    from gangsched.testing.apiserver import TestAPIServer

    with TestAPIServer(port=0, seed=0) as srv:
        srv.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        kubeconfig = srv.kubeconfig(tmp_path / "kubeconfig")
        srv.faults.configure(error_rate=0.1, error_codes=[500, 429])

Not a full API server: no authentication or authorization, no admission, no field
ownership (an apply patch is a merge patch), conversion between the versions of a kind
only by apiVersion (the Workload API's versions have the same fields), no protobuf
decoding (a protobuf request is answered 415 and the client retries in JSON), no
``dryRun``, and deleting a pod removes it at once (no kubelet grace).
"""

from gangsched.testing.apiserver.errors import ApiError
from gangsched.testing.apiserver.faults import FaultConfig, Faults
from gangsched.testing.apiserver.kubelet import FakeKubelet
from gangsched.testing.apiserver.resources import RESOURCES, Resource, ResourceTable
from gangsched.testing.apiserver.server import TestAPIServer, is_loopback
from gangsched.testing.apiserver.store import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    Event,
    Store,
    Watcher,
)

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "RESOURCES",
    "STRATEGIC_PATCH",
    "ApiError",
    "Event",
    "FakeKubelet",
    "FaultConfig",
    "Faults",
    "Resource",
    "ResourceTable",
    "Store",
    "TestAPIServer",
    "Watcher",
    "is_loopback",
]
