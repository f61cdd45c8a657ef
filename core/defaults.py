"""The default budgets of an episode, in a module that imports nothing.

``core.state.Limits`` takes its field defaults from here and the command line shows them in its
``--help`` (``agent run --max-steps``...), so both say the same numbers without the command line
importing pydantic to start.
"""

from __future__ import annotations

#: Model calls (steps) per episode.
MAX_STEPS = 30
#: Prompt plus completion tokens over all of an episode's model calls.
MAX_TOKENS = 2_000_000
#: Active wall-clock seconds per episode (time while resumed counts, downtime not).
MAX_WALL_S = 3600.0
#: Spend per episode, in the pricing's currency.
MAX_COST = 10.0
#: Consecutive malformed model outputs before the episode gives up.
MAX_FORMAT_ERRORS = 5
#: Estimated prompt tokens at which old turns are compacted into one summary (0: never).
COMPACT_AT_TOKENS = 64_000
