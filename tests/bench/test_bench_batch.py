"""The exact optimum of ``bench batch``: its capacity model per rack and pod size."""

from __future__ import annotations

from gangsched.bench.batch import Gang, Instance, best_fit, gangsched_admitted, optimum

BLOCK_NODES = 128  # one block of 8 racks of 16 nodes


def instance(free: list[int], *gangs: Gang) -> Instance:
    return Instance(0, 0.0, tuple(free), gangs)


def test_a_pod_needs_one_node_with_room_not_room_summed_over_nodes() -> None:
    # every node has 4 free GPUs: 8-GPU pods fit nowhere, 4-GPU pods fill racks
    inst = instance([4] * BLOCK_NODES, Gang("big", "rack", 1, 8), Gang("half", "rack", 16, 4),
                    Gang("too-many", "rack", 17, 4))
    opt = optimum(inst, time_limit=10)
    assert opt.optimal
    assert (opt.gpus, opt.pods) == (64, 16)
    assert best_fit(inst) == [False, True, False]
    assert gangsched_admitted(inst)[0] == [False, True, False]


def test_mixed_sizes_share_nodes_exactly_when_the_larger_fit_first() -> None:
    # a rack of 16 nodes with 6 free GPUs each: 16 pods of 4 fill 16 nodes, then 16 pods of
    # 2 fit beside them; a 17th pod of 4 would not fit although 8 GPUs stay free
    free = [6] * 16 + [0] * (BLOCK_NODES - 16)
    inst = instance(free, Gang("fours", "rack", 16, 4), Gang("twos", "rack", 16, 2),
                    Gang("one-more-four", "rack", 1, 4))
    opt = optimum(inst, time_limit=10)
    assert opt.optimal and (opt.gpus, opt.pods) == (96, 32)


def test_a_block_gang_spans_racks_of_its_block() -> None:
    inst = instance([8] * BLOCK_NODES, Gang("wide", "block", 100, 8), Gang("rest", "rack", 16, 8),
                    Gang("over", "rack", 16, 8))
    opt = optimum(inst, time_limit=10)
    # 100 nodes for the block gang leave 28: one whole rack of 16 for one of the rack gangs
    assert opt.optimal and opt.gpus == 8 * (100 + 16)
    admitted, _ = gangsched_admitted(inst)
    assert sum(admitted) == 2
