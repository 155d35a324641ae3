"""Why an owner of an exclusive set is rejected (explain.py): domains other owners hold are
neither room nor missing labels. Counts are never negative, the holders are named, and
when every domain is held the reason says so without blaming capacity."""

from __future__ import annotations

from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group
from gangsched.placement import place
from gangsched.placement.engine.trace import SearchLog, recording
from gangsched.testing.builders import HOST, RACK, cluster, group, podset, take

SET = "default/leaderworkerset.sigs.k8s.io/group-key"
SUB = "default/leaderworkerset.sigs.k8s.io/subgroup-key"


def owner(name: str, pods: int = 1, key: str = RACK, exclusive: str = SET) -> Group:
    return group(name, [podset(f"{name}/pods", pods, gpu=8)],
                 topology=(Constraint(key, exclusive=exclusive),))


def four_racks() -> ClusterState:
    """1 zone x 2 blocks x 2 racks x 2 hosts of 8 GPUs."""
    return cluster((("zone", 1), ("block", 2), ("rack", 2), ("host", 2)))


def racks(state: ClusterState) -> list[str]:
    return sorted({n.labels[RACK] for n in state.topology.nodes})


def test_every_rack_held_is_said_with_its_holders_and_no_capacity_account() -> None:
    state = four_racks()
    for name in "abcd":
        assert place(owner(name), state).admitted
    d = place(owner("e"), state)
    assert not d.admitted
    held = ", ".join(f"{r} by {o}" for r, o in zip(racks(state), "abcd", strict=True))
    assert d.reason == (
        "e: needs 1 pod x 8 nvidia.com/gpu, 1 cpu (pods) inside one rack; every rack is held "
        f"exclusively by other groups of its set: 4 racks, 4 held ({held})")


def test_a_free_rack_too_full_is_the_best_and_the_held_ones_are_counted_apart() -> None:
    state = four_racks()
    names = racks(state)
    for r, name in zip(names[:3], "abc", strict=True):
        state.hold([(SET, RACK, r, name, 1)])
    for n in state.topology.nodes:
        if n.labels[RACK] == names[3]:
            take(state, n.name, **{"nvidia.com/gpu": 8})
    d = place(owner("e"), state)
    assert not d.admitted
    assert "holds -1" not in d.reason
    assert f"the best rack ({names[3]}) holds 0" in d.reason
    assert (f"3 racks held exclusively by other groups of its set ({names[0]} by a, "
            f"{names[1]} by b, {names[2]} by c)") in d.reason


def test_subgroups_find_every_host_held_in_the_widest_scope_tried() -> None:
    """A group of two subgroups, each owning a host: all 8 hosts are held by others."""
    state = four_racks()
    for n in state.topology.nodes:
        state.hold([(SUB, HOST, n.labels[HOST], f"x/{n.name}", 1)])
    unit = group("g", [owner(f"g/s{i}", key=HOST, exclusive=SUB) for i in range(2)])
    d = place(unit, state)
    assert not d.admitted
    assert "holds -1" not in d.reason
    assert ("s0: needs 1 pod x 8 nvidia.com/gpu, 1 cpu (pods) inside one host; every host is held "
            "exclusively by other groups of its set: 8 hosts, 8 held (") in d.reason
    assert ", and 3 more)" in d.reason
    assert "nodes are available" not in d.reason


def test_the_search_log_marks_held_domains_with_their_holder_not_as_unlabelled() -> None:
    state = four_racks()
    for name in "abcd":
        assert place(owner(name), state).admitted
    log = SearchLog()
    with recording(log):
        assert not place(owner("e"), state).admitted
    tier = next(t for a in log.attempts for t in a.tiers.values() if t.key == RACK)
    assert {d.label: (d.labelled, d.holder, d.holds >= 0) for d in tier.domains.values()} == {
        r: (True, o, True) for r, o in zip(racks(state), "abcd", strict=True)}
    assert tier.best is None


def test_a_held_rack_too_small_is_not_named_the_best() -> None:
    # rack 0 has 2 hosts free; racks 1-3 are held by others, rack 1 with 2 free hosts too.
    # No rack passes the bound for 3 pods, so nothing was left out as held: the held racks
    # must still not be the best, and are said to be held
    state = four_racks()
    names = racks(state)
    for r, name in zip(names[1:], "abc", strict=True):
        state.hold([(SET, RACK, r, name, 1)])
    d = place(owner("e", pods=3), state)
    assert not d.admitted
    assert f"the best rack ({names[0]}) holds 2" in d.reason
    assert (f"3 racks held exclusively by other groups of its set ({names[1]} by a, "
            f"{names[2]} by b, {names[3]} by c)") in d.reason
