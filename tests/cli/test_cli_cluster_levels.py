"""``gangsched cluster show`` builds the topology levels ``place`` builds from the same
inputs: Volcano HyperNodes, and the keys the workloads constrain on."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import Run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HYPERNODES = EXAMPLES / "volcano-hypernodes.yaml"


def test_show_builds_levels_from_volcano_hypernodes(run: Run) -> None:
    result = run("cluster", "show", "-f", HYPERNODES)
    assert result.exit_code == 0, result.output
    out = result.stdout
    lines = out.splitlines()
    assert lines[0].startswith("levels: topology.volcano.sh/tier-2 > topology.volcano.sh/tier-1")
    assert "(from Volcano HyperNodes)" in lines[0]
    assert "8 nodes: 2 tier-2s, 4 tier-1s" in out
    # spine-0 holds leaf-0 and leaf-1 (4 nodes of 8 GPUs), as place puts the example there
    spine = next(line for line in lines if "tier-2 spine-0" in line)
    assert "4 nodes" in spine and "gpu 32/32" in spine
    assert any(line.startswith("    tier-1 leaf-1") for line in lines)
    assert result.stderr == ""


def test_show_and_place_agree_on_the_domains(run: Run) -> None:
    """Every domain place names for the example's pods is a domain cluster show lists."""
    wide = run("place", "-f", HYPERNODES, "-f", EXAMPLES / "volcano-podgroup.yaml",
               "-o", "wide", "--no-headers")
    assert wide.exit_code == 0, wide.output
    paths = {line.split()[5] for line in wide.stdout.splitlines() if " Pod " in line}
    shown = run("cluster", "show", "-f", HYPERNODES).stdout
    for path in paths:
        spine, leaf = path.split("/")
        assert f"tier-2 {spine} " in shown and f"tier-1 {leaf} " in shown


def test_show_places_a_key_the_workloads_constrain_on_as_place_does(
        run: Run, tmp_path: Path) -> None:
    """Node pools nest in no Topology here; an LWS that owns a pool makes place put the
    pool key in the chain, and cluster show given the same files shows that level."""
    docs = [f"apiVersion: v1\nkind: Node\nmetadata:\n  name: np{p}-h{h}\n  labels:\n"
            f"    cloud.google.com/gke-nodepool: np{p}\n    kubernetes.io/hostname: np{p}-h{h}\n"
            "status:\n  allocatable: {cpu: '16', memory: 64Gi, nvidia.com/gpu: '8'}\n"
            for p in range(2) for h in range(2)]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("---\n".join(docs))
    lws = tmp_path / "lws.yaml"
    lws.write_text(
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata:\n"
        "  name: vllm\n  annotations:\n"
        "    leaderworkerset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool\n"
        "spec:\n  replicas: 2\n  leaderWorkerTemplate:\n    size: 2\n    workerTemplate:\n"
        "      spec:\n        containers: [{name: w, image: x}]\n")
    alone = run("cluster", "show", "-f", cluster)
    assert alone.exit_code == 0, alone.output
    assert "4 nodes: 4 hosts" in alone.stdout
    both = run("cluster", "show", "-f", cluster, "-f", lws)
    assert both.exit_code == 0, both.output
    assert both.stdout.splitlines()[0].startswith(
        "levels: cloud.google.com/gke-nodepool > kubernetes.io/hostname")
    assert "4 nodes: 2 gke-nodepools, 4 hosts" in both.stdout
    placed = run("place", "-f", cluster, "-f", lws, "-o", "wide", "--no-headers")
    assert placed.exit_code == 0, placed.output
    pool = {line.split()[2]: line.split()[5] for line in placed.stdout.splitlines()
            if " Pod " in line}  # the pod's domain path: its pool, a level of the chain
    assert pool["vllm-0"] == pool["vllm-0-1"] and pool["vllm-1"] == pool["vllm-1-1"]
    assert {pool["vllm-0"], pool["vllm-1"]} == {"np0", "np1"}  # a pool each
