"""Topology keys are plain node labels (KEP-5732): the chain of levels is derived from the
keys the workloads name and how the nodes' labels nest; a key that cuts across the chain
gets its own per-node domain index."""

from __future__ import annotations

import numpy as np
import pytest

from gangsched.api.types import Node
from gangsched.cluster.state import ClusterState
from gangsched.cluster.topology import (
    HOSTNAME,
    build_topology,
    derive_levels,
    nests_in,
)

ZONE = "topology.kubernetes.io/zone"
RACK = "topology.kubernetes.io/rack"  # the upstream scheduler_perf TAS label
BLOCK = "example.com/block"
SWITCH = "example.com/switch"


def grid(zones: int = 2, blocks: int = 2, racks: int = 2, hosts: int = 2) -> list[Node]:
    """Unique rack and block names; the switch label alternates per host, across racks."""
    out = []
    for z in range(zones):
        for b in range(blocks):
            for r in range(racks):
                for h in range(hosts):
                    name = f"n-{z}{b}{r}{h}"
                    out.append(Node(name, {ZONE: f"z{z}", BLOCK: f"z{z}b{b}",
                                           RACK: f"z{z}b{b}r{r}", HOSTNAME: name,
                                           SWITCH: f"s{h}"}))
    return out


def test_keys_are_ordered_by_nesting_not_by_name() -> None:
    nodes = grid()
    assert derive_levels(nodes, {RACK, BLOCK}) == [ZONE, BLOCK, RACK, HOSTNAME]
    assert derive_levels(nodes, {RACK}) == [ZONE, RACK, HOSTNAME]
    assert derive_levels(nodes, ()) == [ZONE, HOSTNAME]  # well-known keys only


def test_a_key_that_cuts_across_levels_stays_out_of_the_chain() -> None:
    nodes = grid()
    chain = derive_levels(nodes, {RACK, SWITCH})
    assert SWITCH not in chain and chain == [ZONE, RACK, HOSTNAME]
    topo = build_topology(nodes, chain)
    assert not topo.nested(SWITCH) and topo.nested(RACK) and topo.nested(HOSTNAME)
    cross = topo.cross(SWITCH)
    assert cross.values == ["s0", "s1"]
    for d, members in enumerate(cross.members):
        assert {topo.nodes[j].labels[SWITCH] for j in members.tolist()} == {cross.values[d]}
    assert sum(len(m) for m in cross.members) == len(nodes)


def test_a_fixed_order_is_kept_and_nesting_keys_join_it() -> None:
    nodes = grid()
    assert derive_levels(nodes, {BLOCK}, fixed=[ZONE, RACK]) == [ZONE, BLOCK, RACK]
    assert derive_levels(nodes, {SWITCH}, fixed=[ZONE, RACK]) == [ZONE, RACK]


def test_repeated_rack_names_do_not_nest_by_value() -> None:
    # KEP-5732: a domain is one label value; rack "r0" in two zones is one domain
    nodes = [Node(f"n{z}{r}", {ZONE: f"z{z}", RACK: f"r{r}"}) for z in range(2) for r in range(2)]
    assert derive_levels(nodes, {RACK}) == [ZONE]
    # with a fixed order the path decides, as Kueue's Topology does
    topo = build_topology(nodes, [ZONE, RACK])
    rack = topo.level(RACK)
    assert rack is not None and len(rack) == 4


def test_nodes_missing_a_label_keep_their_host_level() -> None:
    nodes = grid(1, 1, 2, 2)
    nodes[0] = Node(nodes[0].name, {k: v for k, v in nodes[0].labels.items() if k != RACK})
    chain = derive_levels(nodes, {RACK})
    assert chain == [ZONE, RACK, HOSTNAME]
    topo = build_topology(nodes, chain)
    host = topo.level(HOSTNAME)
    rack = topo.level(RACK)
    assert host is not None and rack is not None
    assert host.valid.all()  # still a host, though in no rack
    assert (~rack.valid).sum() == 1
    assert topo.missing == {RACK: [nodes[0].name]}


@pytest.mark.parametrize(("outer", "inner", "expected"), [
    ([0, 0, 1, 1], [0, 1, 2, 3], True),
    ([0, 0, 1, 1], [0, 0, 1, 1], True),
    ([0, 0, 1, 1], [0, 1, 1, 0], False),
    ([0, -1, 1, 1], [0, 0, 1, 1], False),  # a node of inner domain 0 lacks the outer label
    ([0, 0, 1, 1], [-1, -1, 0, 0], True),  # nodes without the inner label do not matter
])
def test_nests_in(outer: list[int], inner: list[int], expected: bool) -> None:
    assert nests_in(np.asarray(outer), np.asarray(inner)) is expected


def test_state_from_nodes_uses_the_workloads_keys() -> None:
    state = ClusterState.from_nodes(grid(), None, keys={RACK, SWITCH})
    assert state.topology.keys == [ZONE, RACK, HOSTNAME]
