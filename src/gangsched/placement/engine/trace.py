"""A read-only record of the search, for ``gangsched explain``: which candidate domains
each node of the tree was offered per topology level, which the capacity bound cut (and
how close they came), which were dry-run and whether the node's minimum fit there.

Recording is off unless a :class:`SearchLog` is made current with :func:`recording`;
the search then calls it at three points (an attempt starts, a tier of candidates is
computed, a candidate is dry-run) and never reads anything back, so a decision is the
same with or without it. The log holds plain values only (labels, counts), summed over
every time a node was searched in a level: once per candidate of its parent, and again
when backtracking.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gangsched.gang import TreeNode
from gangsched.placement.describe import level_noun

if TYPE_CHECKING:
    from gangsched.placement.engine.domains import Candidates, Seen
    from gangsched.placement.engine.search import Search
    from gangsched.placement.engine.values import Candidate

SCOPE = "(its parent's domain)"  # the label of a tier without a level


@dataclass
class DomainLog:
    """One candidate domain of a level, over every time the node was offered it."""

    label: str  # the domain's readable path (Topology.domain_path), or SCOPE
    holds: int  # most pods of the node's main kind this domain could take
    passed: bool = False  # passed the capacity bound at least once
    labelled: bool = True  # False: the pseudo-domain of nodes lacking the level's label
    holder: str | None = None  # the other exclusive owner holding it (cut for that)
    tried: int = 0  # dry runs of the node's minimum in it
    placed: int = 0  # dry runs that placed it


@dataclass
class TierLog:
    """The candidates of one level (or of the parent's domain) for one node."""

    node: str  # path in the tree
    name: str
    key: str | None  # the level's label key; None: the parent's domain as it is
    needs: str  # what the node's minimum needs, in words
    needed: int  # pods of its main kind the capacity bound asks for
    searches: int = 0  # times the node was searched in this level
    domains: dict[str, DomainLog] = field(default_factory=dict)  # by label, first seen first

    @property
    def level(self) -> str:
        return level_noun(self.key) if self.key is not None else "scope"

    @property
    def best(self) -> DomainLog | None:
        """The domain that placed, else the one that held the most."""
        placed = [d for d in self.domains.values() if d.placed]
        pool = placed or [d for d in self.domains.values() if d.labelled and not d.holder]
        return max(pool, key=lambda d: d.holds) if pool else None


@dataclass
class AttemptLog:
    number: int
    pack: bool  # pods packed onto the fullest nodes (else spread onto the emptiest)
    whole: bool  # the unit's own minimum (else a copy with raised minimums)
    implied: bool = False  # a copy with the minimums the unit's pod counts imply
    caps_first: bool = False  # sets capped per node placed before larger siblings
    deep: bool = False  # groups asked for their other ways when a later sibling fails
    exact: bool = False  # the exact solver (exact_attempt.py): no tiers; placed or not
    placed: bool = False  # (exact only) it placed the minimum
    tiers: dict[tuple[str, str | None], TierLog] = field(default_factory=dict)
    explanation: bool = False  # dry runs made to find the blocking group, after the search


@dataclass
class SearchLog:
    """Every attempt of one or more decisions, in order."""

    attempts: list[AttemptLog] = field(default_factory=list)
    _current: AttemptLog | None = None

    # -- called by the search -----------------------------------------------------------

    def attempt(self, search: Search, pack: bool, tree: TreeNode, unit: TreeNode,
                implied: bool = False) -> None:
        log = AttemptLog(len([a for a in self.attempts if not a.explanation]) + 1, pack,
                         tree is unit, implied, caps_first=search.caps_first,
                         deep=search.deep)
        self.attempts.append(log)
        self._current = log

    def stopped(self) -> None:
        """The attempt under way stopped for the exact solver to be asked first: it is
        searched again whole, or not at all, so its record goes."""
        if self._current in self.attempts:
            self.attempts.remove(self._current)
        self._current = None

    def solver(self, placed: bool) -> None:
        """The exact solver was asked for the unit's minimum (for a unit of no minimum,
        its fewest pods, one or more): after every search, or once a search ran long."""
        log = AttemptLog(len([a for a in self.attempts if not a.explanation]) + 1, True, True,
                         exact=True, placed=placed)
        self.attempts.append(log)
        self._current = None  # it records no tiers

    def explaining(self, search: Search) -> None:
        """The search is over; dry runs from here on look for the blocking group."""
        log = AttemptLog(0, True, True, explanation=True)
        self.attempts.append(log)
        self._current = log

    def tier(self, search: Search, node: TreeNode, tier: Seen, cands: Candidates) -> None:
        if self._current is None:
            return
        key = tier.level.key if tier.level is not None else None
        log = self._current.tiers.get((node.path, key))
        facts = search.facts
        dems = facts.demand(node)
        if log is None:
            log = self._current.tiers[(node.path, key)] = TierLog(
                node.path, node.name, key, search.notes.need_text(node),
                dems[0].count if dems else 0)
        log.searches += 1
        passed = {int(d) for d in cands.d}
        if tier.level is None:
            holds = (int(search.domains.capacity_in(dems[0], tier.lo, tier.hi, tier.sel).sum())
                     if dems else 0)
            self._domain(log, SCOPE, holds, bool(len(cands)), True)
            return
        valid = tier.valid
        sums = search.domains.main_sums(tier)
        topo = facts.topo
        holders = search.notes.holders(tier)
        for i in range(0 if valid is None else len(valid)):
            d = tier.d0 + i
            holds = int(sums[i]) if sums is not None else 0
            labelled = bool(valid[i]) if valid is not None else True
            self._domain(log, topo.domain_path(tier.level, d), holds, d in passed, labelled,
                         holders[i])

    def tried(self, search: Search, node: TreeNode, cand: Candidate, placed: bool) -> None:
        if self._current is None:
            return
        key = cand.level.key if cand.level is not None and cand.cross is None else None
        log = self._current.tiers.get((node.path, key))
        if log is None:
            return
        label = cand.label if key is not None else SCOPE
        entry = log.domains.get(label or SCOPE)
        if entry is not None:
            entry.tried += 1
            entry.placed += placed

    @staticmethod
    def _domain(log: TierLog, label: str, holds: int, passed: bool, labelled: bool,
                holder: str | None = None) -> None:
        entry = log.domains.get(label)
        if entry is None:
            log.domains[label] = DomainLog(label, holds, passed, labelled, holder)
            return
        entry.holds = max(entry.holds, holds)
        entry.passed = entry.passed or passed
        entry.holder = entry.holder or holder


_CURRENT: ContextVar[SearchLog | None] = ContextVar("gangsched_search_log", default=None)


def current() -> SearchLog | None:
    """The log the search records into, if any."""
    return _CURRENT.get()


@contextmanager
def recording(log: SearchLog) -> Iterator[SearchLog]:
    """Record every search started inside the block into ``log``."""
    token = _CURRENT.set(log)
    try:
        yield log
    finally:
        _CURRENT.reset(token)


@contextmanager
def unrecorded() -> Iterator[None]:
    """Record nothing of the searches inside the block (preparatory dry runs: the log
    explains the decision that follows them)."""
    token = _CURRENT.set(None)
    try:
        yield
    finally:
        _CURRENT.reset(token)
