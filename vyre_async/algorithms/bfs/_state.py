"""The BFS state block's layout and the direction switch's thresholds."""

from __future__ import annotations

#: Words in the BFS state buffer (``int32``); the ``STATE_*`` constants index it.
STATE_WORDS = 8
#: Level of the current frontier.
STATE_LEVEL = 0
#: Vertices discovered while expanding the current frontier (the next frontier's size).
STATE_DISCOVERED = 1
#: Nonzero once the traversal has finished; every kernel then returns at once.
STATE_DONE = 2
#: Direction of the next expansion: 0 top-down, 1 bottom-up.
STATE_DIRECTION = 3
#: Vertices reached so far, the source included.
STATE_REACHED = 4
#: Stop once this level has been discovered (``BFS_UNLIMITED`` for a full traversal).
STATE_MAX_LEVEL = 5
#: Size of the current frontier.
STATE_FRONTIER = 6
#: Levels expanded so far (the last, empty expansion of a full traversal included).
STATE_LEVELS_RUN = 7
#: ``STATE_WORDS`` under a name that stays unambiguous outside this module.
BFS_STATE_WORDS = STATE_WORDS
#: ``max_level`` for a traversal limited only by the graph.
BFS_UNLIMITED = 2**31 - 1
#: Go bottom-up once the next frontier holds more than ``n / BFS_TO_BOTTOM_UP`` vertices.
BFS_TO_BOTTOM_UP = 16
#: Go back top-down once it holds fewer than ``n / BFS_TO_TOP_DOWN`` vertices.
BFS_TO_TOP_DOWN = 64
_BLOCK = 256  # a multiple of 32: the warp-cooperative paths use full-warp masks
