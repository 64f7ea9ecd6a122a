"""Canonicalization on the device: the round as sequence steps, its scratch, the run.

:func:`canonicalize` runs ``egraph_init`` and then rounds of
``[egraph_compress, egraph_rewrite, egraph_signatures, egraph_clear, egraph_merge,
egraph_check]`` until a round merges nothing, reading back only the state words
between submissions, then one forced ``egraph_compress`` and the class map.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...backends import Backend, ReadRange, ResidentBuffer, SequenceStep
from ...errors import ConfigurationError
from .._repeat import run_until_done
from . import _kernels as _egraph
from ._state import STATE_CONVERGED, STATE_DONE, STATE_MERGES, STATE_ROUNDS, STATE_WORDS
from ._upload import ResidentEGraph

#: Rounds may not exceed what the device's int32 state word counts.
MAX_ROUNDS_LIMIT = 2**31 - 1


@dataclass(frozen=True, eq=False)
class Canonicalization:
    """The congruence closure of an e-graph's rows.

    Attributes:
        class_map: ``uint32``, one entry per original e-class id: the smallest id of
            the e-class it was merged into (its canonical id).
        rounds: Rounds run, the last one (which merged nothing) included.
        merges: E-classes merged away: ``len(class_map)`` minus the classes left.
        device_ns: Device (CPU backend: worker) time of all rounds, in nanoseconds.
    """

    class_map: np.ndarray
    rounds: int
    merges: int
    device_ns: int

    @property
    def num_canonical_classes(self) -> int:
        """E-classes left after canonicalization."""
        return int(self.class_map.size) - self.merges


def table_words(rows: int) -> int:
    """Signature table size: a power of two at least twice the rows (probes stay short)."""
    return 1 << max(1, (2 * rows - 1).bit_length())


def scratch_words(resident: ResidentEGraph) -> dict[str, tuple[int, Any]]:
    """Words and dtype of each scratch buffer a session allocates beside the image."""
    return {
        "parent": (resident.num_classes, np.uint32),
        "canon": (resident.num_children, np.uint32),
        "signatures": (resident.num_rows, np.uint32),
        "table": (table_words(resident.num_rows), np.uint32),
        "egraph_state": (STATE_WORDS, np.int32),
    }


def round_steps(resident: ResidentEGraph, s: Mapping[str, ResidentBuffer]) -> list[SequenceStep]:
    """One canonicalization round over the image and the scratch buffers ``s``."""
    spans = resident.layout.words.spans
    at = {
        "eclass_at": spans["row_eclass_ids"].offset,
        "ops_at": spans["row_language_op_ids"].offset,
        "starts_at": spans["row_children_offsets"].offset,
        "lens_at": spans["row_children_lens"].offset,
    }
    image, parent, canon, state = resident.buffer, s["parent"], s["canon"], s["egraph_state"]
    signatures, table = s["signatures"], s["table"]
    row_at = {k: at[k] for k in ("ops_at", "starts_at", "lens_at")}
    return [
        SequenceStep(_egraph.egraph_compress, {"parent": parent, "egraph_state": state}),
        SequenceStep(
            _egraph.egraph_rewrite,
            {"image": image, "parent": parent, "canon": canon, "egraph_state": state},
            {"children_at": spans["children"].offset},
        ),
        SequenceStep(
            _egraph.egraph_signatures,
            {"image": image, "canon": canon, "signatures": signatures, "egraph_state": state},
            row_at,
        ),
        SequenceStep(_egraph.egraph_clear, {"table": table, "egraph_state": state}),
        SequenceStep(
            _egraph.egraph_merge,
            {
                "image": image,
                "parent": parent,
                "canon": canon,
                "signatures": signatures,
                "table": table,
                "egraph_state": state,
            },
            at,
        ),
        SequenceStep(_egraph.egraph_check, {"egraph_state": state}),
    ]


async def canonicalize(
    backend: Backend,
    scratch: Mapping[str, ResidentBuffer],
    rounds: list[SequenceStep],
    limit: int,
    check: Callable[[], None],
) -> Canonicalization:
    """Merge congruent e-classes on the device until a round merges nothing.

    Args:
        backend: The backend holding the image and the scratch.
        scratch: The buffers :func:`scratch_words` describes, allocated.
        rounds: :func:`round_steps` over the image and ``scratch``.
        limit: The most rounds to run (``max_rounds``), at most ``MAX_ROUNDS_LIMIT``.
        check: Called before each submission (a closed session raises there).

    Returns:
        The canonical e-class of every e-class, the rounds and the merges.

    Raises:
        ConfigurationError: ``limit`` ran out before the fixed point.
    """
    parent, state = scratch["parent"], scratch["egraph_state"]
    prefix = [
        SequenceStep(
            _egraph.egraph_init, {"parent": parent, "egraph_state": state}, {"max_rounds": limit}
        )
    ]
    words, device_ns = await run_until_done(backend, prefix, rounds, state, STATE_DONE, check=check)
    finish = SequenceStep(
        _egraph.egraph_compress, {"parent": parent, "egraph_state": state}, {"force": 1}
    )
    (class_map,) = await backend.submit_sequence([finish], reads=[ReadRange(parent)])
    ran = int(words[STATE_ROUNDS])
    if not words[STATE_CONVERGED]:
        raise ConfigurationError(
            f"canonicalization stopped at max_rounds={limit} with e-classes still "
            f"merging in round {ran}",
            fix="leave max_rounds at its default (num_classes + 1), which always suffices.",
        )
    return Canonicalization(class_map, ran, int(words[STATE_MERGES]), device_ns)
