"""Launch rules: how a kernel's bound sizes become a grid, a block and shared memory.

A rule is any callable from the bound size symbols to a :class:`LaunchShape`;
:func:`grid_stride` covers the usual 1-D grid-stride kernel, and the two below it
the bookkeeping kernels of resident sequences, which must launch even for zero
elements (they set state words) or need a single thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LaunchShape:
    """Grid and block dimensions plus dynamic shared memory, for one launch."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0

    @property
    def empty(self) -> bool:
        """A grid with no blocks: the launch is skipped (zero-length inputs)."""
        return 0 in self.grid

    @property
    def threads_per_block(self) -> int:
        """Threads in one block."""
        return self.block[0] * self.block[1] * self.block[2]


LaunchRule = Callable[[Mapping[str, int]], LaunchShape]


def grid_stride(
    symbol: str, *, block: int = 256, items_per_thread: int = 1, max_blocks: int = 4096
) -> LaunchRule:
    """A 1-D launch rule for grid-stride kernels over ``sizes[symbol]`` elements.

    Args:
        symbol: The size symbol the grid covers.
        block: Threads per block.
        items_per_thread: Elements one thread handles per grid pass (sizes the grid).
        max_blocks: Cap on blocks; the kernel's grid-stride loop covers the rest.

    Returns:
        A rule mapping bound sizes to a :class:`LaunchShape`.
    """

    def rule(sizes: Mapping[str, int]) -> LaunchShape:
        per_block = block * items_per_thread
        blocks = min(max_blocks, -(-sizes[symbol] // per_block))
        return LaunchShape(grid=(blocks, 1, 1), block=(block, 1, 1))

    return rule


def at_least_one_block(symbol: str, block: int) -> LaunchRule:
    """A grid-stride rule that launches even for zero elements (state words must be set)."""
    inner = grid_stride(symbol, block=block)

    def rule(sizes: Mapping[str, int]) -> LaunchShape:
        shape = inner(sizes)
        return LaunchShape(grid=(max(1, shape.grid[0]), 1, 1), block=shape.block)

    return rule


def one_thread(sizes: Mapping[str, int]) -> LaunchShape:
    """A single thread: state bookkeeping between the parallel steps."""
    return LaunchShape(grid=(1, 1, 1), block=(1, 1, 1))
