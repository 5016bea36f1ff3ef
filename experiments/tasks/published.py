"""Published MinAtar returns to read gradlab's against (Young & Tian, 2019), with their frames.

MinAtar's authors publish their DQN and actor-critic results as plots only, no table: the
figures below were read off the plots in the MinAtar README (``img/learning_curves.gif``,
github.com/kenjyoung/MinAtar at commit 87c2bc8, 2020-02-14, "Updated AC_lambda.py and the
results in README.md to be consistent with most recent paper"), so they are approximate: about
+-0.3 on Breakout's and Asterix's axes, +-2 on Space Invaders'. Their setting differs from
gradlab's in ways that matter for a comparison, written next to every use:

* the y axis is "moving average of returns over 100 episodes" of the *training* episodes (DQN
  acting epsilon-greedy at 0.1, actor-critic sampling its policy), each curve the mean of 30
  runs; gradlab reports greedy evaluation episodes;
* one frame is one agent step (no frame skip); sticky actions 0.1 and difficulty ramping on, as
  gradlab's adapter; but the *full* action set of 6 actions (gradlab: each game's minimal set)
  and no time limit (gradlab: 1000 agent steps);
* DQN: replay 100k, batch 32, one update per frame, RMSProp; AC(lambda): online, no replay.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping

__all__ = ["PUBLISHED", "PUBLISHED_SOURCE", "Published"]

PUBLISHED_SOURCE = (
    "Young & Tian (2019), MinAtar README learning curves (kenjyoung/MinAtar@87c2bc8), "
    "read off the plot: approximate"
)


@dataclasses.dataclass(frozen=True)
class Published:
    """One published learning-curve value.

    Attributes:
      algorithm: as the source names it (``DQN``, ``AC(0.8)``).
      frames: agent steps of training at which the value is read.
      value: the curve's value there (approximate: read off a plot).
    """

    algorithm: str
    frames: int
    value: float


PUBLISHED: Mapping[str, tuple[Published, ...]] = types.MappingProxyType(
    {
        "breakout": (
            Published("DQN", 1_000_000, 9.1),
            Published("DQN", 5_000_000, 10.0),
            Published("AC(0.8)", 1_000_000, 9.8),
            Published("AC(0.8)", 5_000_000, 17.2),
        ),
        "asterix": (
            Published("DQN", 1_000_000, 6.3),
            Published("DQN", 5_000_000, 17.0),
            Published("AC(0.8)", 1_000_000, 0.8),
            Published("AC(0.8)", 5_000_000, 19.0),
        ),
        "space_invaders": (
            Published("DQN", 1_000_000, 32.0),
            Published("DQN", 5_000_000, 43.0),
            Published("AC(0.8)", 1_000_000, 48.0),
            Published("AC(0.8)", 5_000_000, 185.0),
        ),
    }
)
"""Per MinAtar game: DQN's and AC(0.8)'s curve at 1M frames (the plot's first marked point)
and at 5M (its end); see the module docstring for how they were read and what they measure."""
