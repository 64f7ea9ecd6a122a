"""The ``components`` kind: the whole graph's weakly connected components, one query
(one job item) per run.

The answer is one int32 label per vertex, the smallest vertex id of its component, so
equal graphs give equal labels on every backend and device. A job item's record
carries how many components there are and the size of the largest; its array is the
labels.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ...kernels import Kernel
from .._kind import Params, QueryKind, RecordField, Replica, Summary
from ._kernels import COMPONENTS_KERNELS
from ._layout import STATE_ROUNDS
from ._run import ComponentsScratch, allocate_scratch, label_components
from ._sizes import component_sizes

__all__ = ["COMPONENTS", "ComponentsParams"]


class ComponentsParams(Params, frozen=True, kw_only=True):
    """``components``: no parameters (edges join in either direction: weak components)."""


class ComponentsKind(QueryKind[ComponentsParams]):
    """Weakly connected components: int32 labels, the smallest vertex id of each."""

    name = "components"
    params = ComponentsParams
    takes_sources = False
    record_fields: ClassVar[tuple[RecordField, ...]] = (
        ("components", "int"),
        ("largest_component", "int"),
    )

    def kernels(self, params: ComponentsParams) -> tuple[Kernel, ...]:
        """Hooking, pointer jumping and the check."""
        return COMPONENTS_KERNELS

    async def run_one(
        self, replica: Replica, params: ComponentsParams, source: int | None, out: Any = None
    ) -> np.ndarray:
        """Label the components on ``replica`` (into ``out``, as ``Backend.read`` takes
        one); the measurement's levels are the rounds run."""
        num_vertices = replica.num_vertices
        async with replica.measure() as run:
            if num_vertices == 0:  # nothing to launch: no vertices, no labels
                return np.zeros(0, np.int32) if out is None else out
            key = ("components", num_vertices)
            scratch: ComponentsScratch | None = replica.pooled(key)
            if scratch is None:
                scratch = await replica.scratch(
                    key, lambda: allocate_scratch(replica.backend, num_vertices)
                )
            keep = False
            try:
                words, run.device_ns = await label_components(
                    replica.backend,
                    replica.buffers,
                    scratch,
                    replica.check,
                    skip_reverse=replica.graph.symmetric,
                )
                run.levels = int(words[STATE_ROUNDS])
                labels: np.ndarray = await replica.backend.read(scratch.parent, out=out)
                keep = True
            finally:
                await replica.release(key, scratch, keep=keep)
        return labels

    # ---------------------------------------------------------------------- jobs
    def row_bytes(self, params: ComponentsParams, num_vertices: int) -> int:
        """4 bytes per vertex."""
        return 4 * num_vertices

    def keeps_arrays(self, params: ComponentsParams) -> bool:
        """The labels are the item's array."""
        return True

    def summarize(
        self, params: ComponentsParams, sources: np.ndarray, result: np.ndarray
    ) -> Summary:
        """How many components, and the largest one's size; the labels as the array."""
        sizes = component_sizes(result).sizes
        return Summary(
            {
                "components": np.array([sizes.size], np.int64),
                "largest_component": np.array([sizes.max(initial=0)], np.int64),
            },
            [result],
        )


#: The registered connected-components kind.
COMPONENTS = ComponentsKind()
