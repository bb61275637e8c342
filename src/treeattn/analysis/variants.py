"""The names and defaults of the tree induction variants (``analysis.induction``), apart
from it so that the command line can offer them without importing torch."""

from __future__ import annotations

THRESHOLD = 0.8
VARIANTS = ("paper", "release", "binary")
DEFAULT_MIN_LAYER = {"binary": 0, "paper": 0, "release": 2}
