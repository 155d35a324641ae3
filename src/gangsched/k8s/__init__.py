"""Serve mode: gangsched as a secondary scheduler over the Kubernetes API.

The only package that imports ``kubernetes`` (in :mod:`.client`, imported when a
:class:`~gangsched.k8s.serve.Server` connects). Modules:

* :mod:`.api` — the calls gangsched makes (:class:`~gangsched.k8s.api.KubeAPI`), resources;
* :mod:`.client` — that protocol on the official client; in-cluster and kubeconfig auth;
* :mod:`.cache` — list-then-watch reflectors feeding one delta queue;
* :mod:`.backend` — the cluster view (loader + front-ends) and the ``ClusterBackend``;
* :mod:`.binder` — ``pods/binding`` and pod deletes, safe under API errors;
* :mod:`.status` — pod Events and Volcano PodGroup status;
* :mod:`.leader` — Lease-based leader election;
* :mod:`.metrics` — ``/healthz``, ``/readyz``, ``/metrics``;
* :mod:`.serve` — the main loop.
"""
