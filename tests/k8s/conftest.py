"""Fixtures for the serve-mode tests: a test API server on a loopback port and a
kubeconfig for it. The end-to-end modules skip themselves without ``kubernetes``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gangsched.testing.apiserver import TestAPIServer

NEEDS_CLIENT = ("the serve end-to-end tests need the Kubernetes client: "
                "pip install 'gangsched[k8s]'")


@pytest.fixture
def server() -> Iterator[TestAPIServer]:
    with TestAPIServer(port=0, seed=0, bookmark_interval=0.5) as srv:
        yield srv


@pytest.fixture
def kubeconfig(server: TestAPIServer, tmp_path: Path) -> Path:
    return server.kubeconfig(tmp_path / "kubeconfig")
