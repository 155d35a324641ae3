"""Fixtures: a test API server on an ephemeral loopback port, stopped after each test, and
the official client pointed at it (imported lazily: only the client tests need it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gangsched.testing.apiserver import TestAPIServer


@pytest.fixture
def server() -> Iterator[TestAPIServer]:
    with TestAPIServer(port=0, seed=0, bookmark_interval=0.1) as srv:
        yield srv


@pytest.fixture
def kubeconfig(server: TestAPIServer, tmp_path: Path) -> Path:
    return server.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def api_client(kubeconfig: Path) -> Iterator[Any]:
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.config.new_client_from_config(str(kubeconfig))
    yield client
    client.close()
