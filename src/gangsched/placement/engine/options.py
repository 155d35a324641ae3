"""The parameters of a decision, frozen (Kueue TAS keeps them apart from per-cycle state;
the per-decision state lives in :mod:`.search`: the transaction, the budgets, the notes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# a mix of pod shapes (Options.mix): per shape, its requests as sorted (resource, amount)
# pairs and its weight
Mix = tuple[tuple[tuple[tuple[str, int], ...], float], ...]

RAISE_STEPS = (1.0, 0.75, 0.5)  # fractions of what each gang asks for, tried before its minimum


@dataclass(frozen=True)
class Options:
    backtrack_budget: int = 256  # alternatives tried after a first choice failed deeper
    score_budget: int = 64  # dry runs spent on scoring candidates, per unit
    score_top: int = 3  # candidates dry-run per choice for scoring
    max_dry_runs: int = 20_000  # placement attempts per unit, its attempts together
    extras: bool = True
    raise_budget: int = 16  # backtracking for each raised-minimum attempt (extras by search)
    raise_steps: tuple[float, ...] = RAISE_STEPS  # () places extras greedily after the minimum
    # emulation switches (for comparing with other schedulers; ours are the defaults)
    child_order: Literal["size", "given"] = "size"  # biggest minimum first, or as listed
    domain_order: Literal["fit", "index"] = "fit"  # tightest fit first, or first feasible
    extras_first: bool = False  # grow each child fully before the next one's minimum
    # when a set spans nodes: fullest nodes first (best fit), or emptiest first; a unit
    # rejected with "pack" is searched once more with "spread" before it is rejected
    node_order: Literal["pack", "spread"] = "pack"
    # locality: a unit (and any group with a required level) tries the narrowest level
    # first and widens level by level up to what it requires, like a preferred constraint
    # (its whole minimum inside the narrow domain; only extras spill out of it)
    narrow: bool = True
    # fragmentation: among equally full nodes, those in the fullest lowest domains (racks)
    # first, so clean racks stay whole for the gangs that need a whole rack
    keep_whole: bool = True
    # a rejection's reason in full (the numbers of every cut, as explained to users), or
    # one short line: for callers that only need the verdict (trial runs, simulations)
    explain: bool = True
    # the common shapes (replicas of one pod shape under at most one required level) are
    # decided without the generic search, with the same result (fast.py); False: always
    # the generic search
    fast: bool = True
    # fragmentation against a mix of pod shapes (FGD, Weng et al., ATC '23): (requests as
    # sorted (resource, amount) pairs, weight) per shape. When given, candidate domains
    # with equal room for extras go by the least estimated stranding of the mix's capacity
    # (Domains.stranding), then tightest fit; such units are decided by the generic search
    # (no fast path). () keeps the plain order: only the batch (``place``) sets it
    mix: Mix = ()
    # the last attempt, for a small unit no search placed (and no capacity bound proved
    # that nothing fits): the exact MILP (exact_attempt.py), when at most this many pairs
    # of pod set and node can take a pod (0: never); its branch and bound stops after
    # ``exact_nodes`` nodes, so the decision does not depend on the machine's speed
    exact: int = 1_000
    exact_nodes: int = 2_000
    # ... and once the search of such a unit has spent this many dry runs (0: only at the
    # end): a unit the solver proves infeasible is rejected then, without the rest of
    # the search (the search goes on otherwise, as if the solver had not been asked)
    exact_after: int = 1_000


DEFAULT = Options()
