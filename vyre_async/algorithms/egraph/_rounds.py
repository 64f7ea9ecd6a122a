"""One canonicalization round as resident sequence steps, its scratch, and its result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends import ResidentBuffer, SequenceStep
from ..kernels import _egraph
from ..kernels._egraph_layout import STATE_WORDS
from ._upload import ResidentEGraph


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
