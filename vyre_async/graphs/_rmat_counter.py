"""R-MAT's edge stream as a counter-based generator: each edge a pure function of its index.

Edge ``e`` of a graph with ``2**scale`` vertices draws ``D = ceil(scale / 8)`` 64-bit
words, ``r_j = mix64(key + GOLDEN * (e * D + j + 1))`` for ``j < D`` (SplitMix64's
output function applied to a counter; ``key`` is the seed's first SplitMix64 output).
Each word picks the quadrants of 8 levels at once out of the 65536 combinations, by
Walker's alias method: bits 48-63 name a column, bits 16-47 are compared with the
column's 32-bit threshold, and the column's own combination or its alias is taken.
The first word gives the most significant levels; the ``8 * D - scale`` surplus levels
at the bottom are dropped, which leaves the others' distribution exactly R-MAT's
(levels are independent).

Vertex ids are then relabelled by a seeded bijection of ``scale``-bit integers, three
rounds of ``x = (x * m_i + k_i) mod 2**scale; x ^= x >> (scale // 2 + 1)``, so that ids
do not reveal degree.

Everything is integer arithmetic modulo ``2**64`` or ``2**32``: any implementation
that follows this description (the NumPy one here, the CUDA kernel that generates on
the device) gives the same edges, bit for bit.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError

#: Bumped whenever the edges a given set of parameters produces change.
RMAT_GENERATOR_VERSION = 2
#: Levels one 64-bit word decides, and the combinations of quadrants they have.
LEVELS_PER_DRAW = 8
TABLE_SIZE = 1 << (2 * LEVELS_PER_DRAW)
#: Rounds of the vertex relabelling; ``stream_keys`` holds a multiplier and an addend each.
PERMUTE_ROUNDS = 3

GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
_MASK64 = (1 << 64) - 1

UInt32s = npt.NDArray[np.uint32]
UInt64s = npt.NDArray[np.uint64]


def mix64_int(z: int) -> int:
    """SplitMix64's output function on a Python int (the plain reference)."""
    z &= _MASK64
    z = ((z ^ (z >> 30)) * MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * MIX2) & _MASK64
    return z ^ (z >> 31)


def mix64(z: UInt64s) -> UInt64s:
    """SplitMix64's output function on a uint64 array, in place; returns ``z``."""
    t = np.right_shift(z, np.uint64(30))
    z ^= t
    z *= np.uint64(MIX1)
    np.right_shift(z, np.uint64(27), out=t)
    z ^= t
    z *= np.uint64(MIX2)
    np.right_shift(z, np.uint64(31), out=t)
    z ^= t
    return z


@dataclass(frozen=True, slots=True)
class RmatParams:
    """What determines an R-MAT graph's edge stream.

    Args:
        scale: log2 of the vertex count, 0 to 30.
        edge_factor: Edges generated per vertex.
        seed: Non-negative seed.
        a: Probability of the top-left quadrant at each level.
        b: Probability of the top-right quadrant.
        c: Probability of the bottom-left quadrant (``d = 1 - a - b - c``).

    Raises:
        ValidationError: A parameter is out of range.

    Attributes:
        generator_version: The version of the stream's definition; it changes whenever
            the edges a given set of parameters produces change.
    """

    generator_version: ClassVar[int] = RMAT_GENERATOR_VERSION

    scale: int
    edge_factor: int = 16
    seed: int = 0
    a: float = 0.57
    b: float = 0.19
    c: float = 0.19

    def __post_init__(self) -> None:
        check_rmat_parameters(self.scale, self.edge_factor, self.seed, self.a, self.b, self.c)

    @property
    def num_vertices(self) -> int:
        """``2**scale``."""
        return 1 << self.scale

    @property
    def num_edges(self) -> int:
        """Edges generated (before symmetrisation and dedupe): ``edge_factor * 2**scale``."""
        return self.edge_factor << self.scale

    @property
    def draws(self) -> int:
        """64-bit words drawn per edge: ``ceil(scale / 8)``."""
        return -(-self.scale // LEVELS_PER_DRAW)

    def stream_keys(self) -> UInt64s:
        """``[key, m_0, k_0, m_1, k_1, m_2, k_2]``: the seed's first SplitMix64 outputs.

        ``key`` seeds the edge words; ``m_i`` (made odd by the user) and ``k_i`` are the
        relabelling's multipliers and addends, used modulo ``2**scale``.
        """
        state = self.seed & _MASK64
        words = []
        for _ in range(1 + 2 * PERMUTE_ROUNDS):
            state = (state + GOLDEN) & _MASK64
            words.append(mix64_int(state))
        return np.array(words, dtype=np.uint64)

    def alias_table(self) -> tuple[UInt32s, UInt32s]:
        """The alias table of 8 levels' quadrant combinations (shared, read-only arrays).

        Returns:
            ``(thresholds, pairs)``, 65536 entries each. Column ``i`` keeps its own
            combination when the 32-bit uniform is below ``thresholds[i]``, else takes its
            alias. ``pairs[i]`` packs, from the low byte up: the column's source bits, its
            destination bits, then the alias's source bits and destination bits (one bit
            per level, the first level the most significant).
        """
        return _alias_table(float(self.a), float(self.b), float(self.c))


def rmat_edges(
    params: RmatParams, start: int = 0, stop: int | None = None, *, permute: bool = True
) -> tuple[UInt32s, UInt32s]:
    """Edges ``start`` to ``stop`` of the stream (vectorised; ``stop`` defaults to the end).

    Args:
        params: The graph's parameters.
        start: First edge index.
        stop: One past the last edge index.
        permute: Relabel vertex ids with the seeded bijection.

    Returns:
        ``(src, dst)`` as uint32 arrays.
    """
    stop = params.num_edges if stop is None else stop
    src, dst = kronecker_ids(params, start, stop)
    if permute:
        keys = params.stream_keys()
        src = permute_ids(src, params.scale, keys)
        dst = permute_ids(dst, params.scale, keys)
    return src, dst


def kronecker_ids(params: RmatParams, start: int, stop: int) -> tuple[UInt32s, UInt32s]:
    """Unpermuted endpoints of edges ``start`` to ``stop``, as uint32 arrays."""
    n = max(0, stop - start)
    draws, scale = params.draws, params.scale
    src = np.zeros(n, dtype=np.uint32)
    dst = np.zeros(n, dtype=np.uint32)
    if draws == 0 or n == 0:
        return src, dst
    thresholds, pairs = params.alias_table()
    key = np.uint64(int(params.stream_keys()[0]))
    counter = np.arange(start, stop, dtype=np.uint64)
    counter *= np.uint64(draws)
    word = np.empty(n, dtype=np.uint64)
    bits = np.empty(n, dtype=np.uint32)
    eight = np.uint32(LEVELS_PER_DRAW)
    for j in range(draws):
        # word = mix64(key + GOLDEN * (e * D + j + 1)), all modulo 2**64.
        np.add(counter, np.uint64(j + 1), out=word)
        word *= np.uint64(GOLDEN)
        word += key
        mix64(word)
        column = (word >> np.uint64(48)).astype(np.intp)
        uniform = (word >> np.uint64(16)).astype(np.uint32)  # keeps bits 16-47
        packed = pairs[column]
        np.copyto(bits, packed >> np.uint32(16))
        own = uniform < thresholds[column]
        np.copyto(bits, packed & np.uint32(0xFFFF), where=own)
        src <<= eight
        src |= bits & np.uint32(0xFF)
        dst <<= eight
        dst |= bits >> eight
    drop = np.uint32(LEVELS_PER_DRAW * draws - scale)
    src >>= drop
    dst >>= drop
    return src, dst


def permute_ids(ids: UInt32s, scale: int, keys: UInt64s) -> UInt32s:
    """The relabelling of ``ids`` (uint32, each below ``2**scale``), as a new array."""
    mask = np.uint32((1 << scale) - 1)
    half = np.uint32(scale // 2 + 1)
    x = ids.astype(np.uint32, copy=True)
    t = np.empty_like(x)
    for i in range(PERMUTE_ROUNDS):
        # Only the low 32 bits of m and k matter modulo 2**scale (scale <= 30).
        m = np.uint32((int(keys[1 + 2 * i]) | 1) & 0xFFFFFFFF)
        k = np.uint32(int(keys[2 + 2 * i]) & 0xFFFFFFFF)
        x *= m
        x += k
        x &= mask
        np.right_shift(x, half, out=t)
        x ^= t
    return x


def permutation_table(scale: int, keys: UInt64s) -> UInt32s:
    """The relabelling of every vertex id, ``0`` to ``2**scale - 1``."""
    return permute_ids(np.arange(1 << scale, dtype=np.uint32), scale, keys)


@functools.lru_cache(maxsize=8)
def _alias_table(a: float, b: float, c: float) -> tuple[UInt32s, UInt32s]:
    level = np.array([a, b, c, 1.0 - a - b - c], dtype=np.float64)
    probs = level
    for _ in range(LEVELS_PER_DRAW - 1):
        probs = np.outer(probs, level).ravel()  # earlier levels in the higher bits
    own = np.arange(TABLE_SIZE, dtype=np.int64)
    share, alias = _vose(probs.tolist())
    thresholds = np.empty(TABLE_SIZE, dtype=np.uint32)
    full = np.uint32(0xFFFFFFFF)
    for i, p in enumerate(share):
        t = int(p * 4294967296.0 + 0.5)
        if t > 0xFFFFFFFF:  # the column is all its own: the alias is itself
            alias[i], t = i, int(full)
        thresholds[i] = t
    alias_ids = np.array(alias, dtype=np.int64)
    pairs = _split_bits(own) | (_split_bits(alias_ids) << 16)
    thresholds.flags.writeable = False
    packed = pairs.astype(np.uint32)
    packed.flags.writeable = False
    return thresholds, packed


def _vose(probs: list[float]) -> tuple[list[float], list[int]]:
    """Walker's alias table by Vose's method: (each column's own share, its alias)."""
    n = len(probs)
    scaled = [p * n for p in probs]
    share = [1.0] * n
    alias = list(range(n))
    small = [i for i, p in enumerate(scaled) if p < 1.0]
    large = [i for i, p in enumerate(scaled) if p >= 1.0]
    while small and large:
        less, more = small.pop(), large.pop()
        share[less], alias[less] = scaled[less], more
        scaled[more] = (scaled[more] + scaled[less]) - 1.0
        (small if scaled[more] < 1.0 else large).append(more)
    # Whatever is left is 1 up to rounding: those columns keep themselves.
    return share, alias


def _split_bits(combo: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Source bits (the high bit of each 2-bit quadrant) | destination bits << 8."""
    return _compact_even_bits(combo >> 1) | (_compact_even_bits(combo) << 8)


def _compact_even_bits(x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    x = x & 0x5555
    x = (x | (x >> 1)) & 0x3333
    x = (x | (x >> 2)) & 0x0F0F
    return (x | (x >> 4)) & 0x00FF


def check_rmat_parameters(
    scale: Any, edge_factor: Any, seed: Any, a: object, b: object, c: object
) -> None:
    """Refuse R-MAT parameters out of range.

    Raises:
        ValidationError: A parameter is out of range; the message names it.
    """
    if not _is_int(scale) or not 0 <= scale <= 30:
        raise ValidationError(
            f"rmat scale is {scale!r}; expected an int from 0 to 30",
            fix="pass scale as log2 of the vertex count, e.g. scale=18 for 262144 vertices.",
        )
    if not _is_int(edge_factor) or edge_factor < 1:
        raise ValidationError(
            f"rmat edge_factor is {edge_factor!r}; expected an int >= 1",
            fix="pass edges per vertex as a positive int; Graph500 uses 16.",
        )
    if not _is_int(seed) or not 0 <= seed < 2**64:
        raise ValidationError(
            f"rmat seed is {seed!r}; expected an int from 0 to 2**64 - 1",
            fix="pass seed as a non-negative int below 2**64.",
        )
    total = 0.0
    for name, p in (("a", a), ("b", b), ("c", c)):
        if not isinstance(p, numbers.Real) or not 0.0 < float(p) < 1.0:
            raise ValidationError(
                f"rmat probability {name} is {p!r}; expected a number strictly between 0 and 1",
                fix="use the Graph500 values a=0.57, b=0.19, c=0.19 or similar.",
            )
        total += float(p)
    if not total < 1.0:
        raise ValidationError(
            f"rmat probabilities sum to a + b + c = {total:g}; "
            "they must leave d = 1 - a - b - c > 0",
            fix="lower a, b or c so that their sum is below 1.",
        )


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
