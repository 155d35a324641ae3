"""The pure placement engine: gang tree + cluster state in, placement or reasons out."""

from gangsched.placement.decision import Decision, GroupOutcome
from gangsched.placement.engine import Options, place, place_all

__all__ = ["Decision", "GroupOutcome", "Options", "place", "place_all"]
