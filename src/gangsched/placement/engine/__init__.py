"""The hierarchical placement engine (DESIGN.md sections 2-3): ``place(unit, state)``
decides where one scheduling unit goes, all-or-nothing. It reads as its phases, one
module each:

0. **Facts** (:mod:`.facts`). What the search asks about the tree on this cluster,
   computed once and shared read only: pod shapes, per-shape lower bounds on the pods
   each node's minimum needs (and on all it asks for), sizes, weights, required levels.
1. **Attempts** (:mod:`.attempts`). When the unit asks for more than its minimum, the
   tree is first searched with every gang's minimum raised to the same fraction of what
   it asks (100%, 75%, 50%): equal fractions are the proportional split, so the extras
   stay fair while the full search (with backtracking) places them. Then the minimum
   itself. Each tree is searched packing pods onto the fullest nodes, then once more
   spreading them onto the emptiest. The first attempt that places wins; each returns
   placed, or unschedulable with its notes.
2. **Minimum** (:mod:`.search`, :mod:`.domains`, :mod:`.pods`). Recursively place every
   gang's minimum: for a node with a topology constraint, enumerate candidate domains of
   its level inside the parent's domain, prune them with vectorized fit-count sums,
   dry-run the best few in the transaction, keep the best by score (room for the extras
   the node wants, then tight fit, then fewest nodes) and recurse. Siblings go most
   constrained first (narrowest level), then largest pods first (a last attempt puts
   sets that per-node caps spread over several nodes before larger pods); they are
   searched depth-first, and when a later sibling fails, earlier siblings' alternatives
   are tried within a bounded budget (backtracking).
3. **Extras** (:mod:`.extras`). With the minimum held, the rest is added by
   water-filling: repeatedly grow the child with the lowest placed/asked ratio, each
   extra child placed all-or-nothing inside its parent's domain (spilling to wider scopes
   only for preferred constraints).
4. **Decide** (:mod:`.attempts`, :mod:`.explain`). Commit the transaction, or discard it
   and explain the blocking group with a coded :class:`~.values.Status`.

**Fast path** (:mod:`.fast`). A unit of the common shape (replicas of one pod kind under
at most one required level, each perhaps requiring a level of its own, every pod
required) that fits is decided before phase 0, in a few numpy calls on the cached
capacities, with the decision phases 0-4 would make; anything else, and any unit that
does not fit, goes through the phases (``Options.fast=False``: always; so does every unit
decided against a mix of pod shapes, ``Options.mix``, which orders domains differently).

**First choice** (:mod:`.direct`). A unit every node of which is required whole is
walked down by phase 2's own steps, its first candidate at every node, after phase 0 and
before any attempt; the first node whose first candidate does not hold it hands the unit
to phases 1-4 from the start (the same decision, without the machinery only a failure
needs).

**Minimum alone** (:mod:`.minimum`). For minimum-first callers: a unit's minimum placed
in the domain the whole unit would take, so its extras find room beside it later.

Parameters are the frozen :class:`Options`; the per-decision state (transaction, budget,
notes) belongs to one attempt's :class:`~.search.Search`. Everything is a pure function
of (tree, state); ties break by stable order.
"""

from gangsched.placement.engine.attempts import place, place_all, raised
from gangsched.placement.engine.minimum import place_minimum
from gangsched.placement.engine.options import RAISE_STEPS, Mix, Options

__all__ = ["RAISE_STEPS", "Mix", "Options", "place", "place_all", "place_minimum", "raised"]
