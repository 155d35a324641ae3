"""A real kube-apiserver (and etcd) for the tests in this directory, started once per
session by ``scripts/realkube.sh up`` from the binaries ``scripts/realkube.sh build``
left in the cache.

Without the binaries (or without the ``kubernetes`` client) every test here is skipped
with the reason, unless ``GANGSCHED_REALKUBE=require`` (what CI sets when the build
succeeded): then they fail.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from realkube_helpers import SCRIPT, RealKube

REQUIRE = os.environ.get("GANGSCHED_REALKUBE") == "require"


def _unavailable(reason: str) -> None:
    if REQUIRE:
        pytest.fail(f"GANGSCHED_REALKUBE=require but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def realkube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKube]:
    try:
        import kubernetes  # noqa: F401
    except ImportError:
        _unavailable("the real-API-server tests need the Kubernetes client: "
                     "pip install 'gangsched[k8s]'")
    found = subprocess.run(["bash", str(SCRIPT), "bin-dir"], capture_output=True, text=True,
                           check=False)
    if found.returncode != 0:
        _unavailable("no kube-apiserver/etcd build in the cache "
                     f"({found.stderr.strip()}); run scripts/realkube.sh build")
    state = tmp_path_factory.mktemp("realkube")
    env = {**os.environ, "GANGSCHED_REALKUBE_STATE": str(state)}
    up = subprocess.run(["bash", str(SCRIPT), "up"], capture_output=True, text=True,
                        env=env, check=False, timeout=600)
    try:
        if up.returncode != 0:
            raise RuntimeError(f"scripts/realkube.sh up failed ({up.returncode}):\n"
                               f"{up.stderr[-4000:]}")
        kubeconfig = Path(up.stdout.strip().splitlines()[-1])
        yield RealKube(kubeconfig=kubeconfig, state=state,
                       bin_dir=Path(found.stdout.strip().splitlines()[-1]), env=env)
    finally:
        subprocess.run(["bash", str(SCRIPT), "down"], capture_output=True, text=True,
                       env=env, check=False, timeout=120)


@pytest.fixture
def cluster(realkube: RealKube) -> Iterator[RealKube]:
    """The real API server, emptied of the previous test's nodes, pods and gang objects."""
    realkube.reset()
    yield realkube
