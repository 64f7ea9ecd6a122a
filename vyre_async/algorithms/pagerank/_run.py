"""Running pull PageRank on a resident graph, two power iterations per repeat.

The body is ``[pr_dangling, pr_gather, pr_update, pr_check]`` from rank buffer A to B
and the same from B to A; it repeats until ``pr_check`` sees the L1 change fall
below ``tol`` (or ``max_iter``), with only the state words read back between
submissions. The shares ``pr_gather`` reads at random are stored in an order of the
caller's choice (:func:`shares_order` puts hubs first) with the in-lists renumbered
to match (``pr_renumber``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np

from ...backends import Backend, ResidentBuffer, SequenceStep
from .._repeat import run_until_done
from ._kernels import pr_check, pr_dangling, pr_gather, pr_init, pr_update
from ._state import STATE_DONE, STATE_ITERATIONS


def shares_order(out_degree: np.ndarray) -> np.ndarray:
    """Where PageRank stores each vertex's share: by falling out-degree, ties by number.

    A vertex's share is read once per out-edge, so this puts the most-read shares
    together in a few cache lines (measured: ``bench/pr_locality.py``).

    Returns:
        int32 ``rank_of``: vertex ``u``'s share is stored at ``rank_of[u]``.
    """
    order = np.argsort(-out_degree.astype(np.int64), kind="stable")
    rank_of = np.empty(len(order), np.int32)
    rank_of[order] = np.arange(len(order), dtype=np.int32)
    return rank_of


class PagerankInputs(NamedTuple):
    """What PageRank's kernels read besides the graph.

    Attributes:
        in_indices: The in-lists' sources, renumbered by ``rank_of``.
        rank_of: Where each vertex's share is stored.
    """

    in_indices: ResidentBuffer
    rank_of: ResidentBuffer


class PagerankScratch(NamedTuple):
    """One run's buffers: two rank vectors, the shares, the state words (float32)."""

    rank_a: ResidentBuffer
    rank_b: ResidentBuffer
    contrib: ResidentBuffer
    state: ResidentBuffer

    @property
    def buffers(self) -> tuple[ResidentBuffer, ...]:
        """All four."""
        return tuple(self)

    @property
    def nbytes(self) -> int:
        """Their bytes."""
        return sum(buffer.nbytes for buffer in self)


def _half(
    graph: Mapping[str, ResidentBuffer],
    inputs: PagerankInputs,
    scratch: PagerankScratch,
    src: ResidentBuffer,
    dst: ResidentBuffer,
    damping: float,
) -> list[SequenceStep]:
    """One power iteration from ranks ``src`` into ``dst`` (which arrives zeroed)."""
    state = scratch.state
    return [
        SequenceStep(
            pr_dangling, {"rank": src, "out_degree": graph["out_degree"], "pr_state": state}
        ),
        SequenceStep(
            pr_gather,
            {
                "in_offsets": graph["in_offsets"],
                "in_indices": inputs.in_indices,
                "contrib": scratch.contrib,
                "sums": dst,
                "pr_state": state,
            },
        ),
        SequenceStep(
            pr_update,
            {
                "rank_in": src,
                "rank_out": dst,
                "out_degree": graph["out_degree"],
                "rank_of": inputs.rank_of,
                "contrib": scratch.contrib,
                "pr_state": state,
            },
            {"damping": damping},
        ),
        SequenceStep(pr_check, {"pr_state": state}),
    ]


async def run_pagerank(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    inputs: PagerankInputs,
    scratch: PagerankScratch,
    params: tuple[float, float, int],
    check: Callable[[], None],
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, int, int]:
    """Pull PageRank (``params`` = damping, tol, max_iter) into a host array (or ``out``).

    Args:
        backend: The backend holding the graph, the inputs and the scratch.
        graph: The resident graph: ``in_offsets`` and ``out_degree``.
        inputs: The renumbered in-lists and the shares order.
        scratch: The run's buffers (any contents: ``pr_init`` sets them).
        params: Damping in (0, 1), the L1 tolerance, and the iteration limit.
        check: Called before each submission (a closed session raises there).
        out: Read the ranks into this float32 array (see ``Backend.read``).

    Returns:
        The ranks, the iterations run and the device time in nanoseconds.
    """
    damping, tol, max_iter = params
    prefix = [
        SequenceStep(
            pr_init,
            {
                "rank": scratch.rank_a,
                "other": scratch.rank_b,
                "contrib": scratch.contrib,
                "out_degree": graph["out_degree"],
                "rank_of": inputs.rank_of,
                "pr_state": scratch.state,
            },
            {"tol": tol, "max_iter": max_iter},
        )
    ]
    a, b = scratch.rank_a, scratch.rank_b
    body = _half(graph, inputs, scratch, a, b, damping) + _half(
        graph, inputs, scratch, b, a, damping
    )
    words, device_ns = await run_until_done(
        backend, prefix, body, scratch.state, STATE_DONE, check=check
    )
    iterations = int(words[STATE_ITERATIONS])
    ranks = await backend.read(b if iterations % 2 else a, out=out)
    return ranks, iterations, device_ns
