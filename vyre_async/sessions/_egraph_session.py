"""E-graph sessions: an image uploaded once, canonicalized on the device to a fixed point.

Made by ``vyre_async.egraph_session(backend, snapshot)`` and used with ``async with``,
like a resident-graph session: the image and the scratch buffers (union-find
parents, canonical children, signatures, the signature table, the state block) are
allocated on entry and freed on exit, also on error or cancellation. The work itself
is :mod:`vyre_async.algorithms.egraph`'s; the session keeps its buffers and order.
"""

from __future__ import annotations

from typing import Self

import anyio
import numpy as np

from .._lifecycle import AsyncLifecycle, LifecycleState
from ..algorithms.egraph import (
    MAX_ROUNDS_LIMIT,
    BorrowedEGraphUploadPlan,
    Canonicalization,
    EGraphDeviceView,
    EGraphHostView,
    EGraphSnapshot,
    EGraphSource,
    EGraphUploadPlan,
    ResidentEGraph,
    canonicalize,
    egraph_view,
    round_steps,
    scratch_words,
    upload_egraph,
)
from ..backends import Backend, ResidentBuffer, SequenceStep
from ..errors import ConfigurationError, LifecycleError


class EGraphSession(AsyncLifecycle):
    """An e-graph image resident on one backend, canonicalized by structural equivalence.

    Args:
        backend: An open backend.
        source: An :class:`~vyre_async.algorithms.egraph.EGraphSnapshot` or an upload
            plan of one.
        chunk_bytes: Bytes per upload write (see ``upload_egraph``; ``None``: its default).
    """

    _noun = "e-graph session"
    _make_fix = "open a new one with vyre_async.egraph_session(backend, snapshot)."
    _use_fix = (
        "use it inside `async with vyre_async.egraph_session(backend, snapshot) as session:`."
    )

    def __init__(
        self, backend: Backend, source: EGraphSource, *, chunk_bytes: int | None = None
    ) -> None:
        if not isinstance(source, EGraphSnapshot | EGraphUploadPlan | BorrowedEGraphUploadPlan):
            raise TypeError(
                f"egraph_session takes an EGraphSnapshot or an upload plan, got "
                f"{type(source).__name__}"
            )
        self._backend = backend
        self._source: EGraphSource | None = source
        self._chunk_bytes = chunk_bytes
        self._resident: ResidentEGraph | None = None
        self._view: EGraphDeviceView | EGraphHostView | None = None
        self._scratch: dict[str, ResidentBuffer] = {}
        self._round: list[SequenceStep] = []
        self._canonicalized = False
        self._lock = anyio.Lock()

    @property
    def resident(self) -> ResidentEGraph:
        """The resident image and its layout."""
        self._require_open()
        if self._resident is None:
            raise LifecycleError("the e-graph session is still opening", fix="await entry.")
        return self._resident

    @property
    def view(self) -> EGraphDeviceView | EGraphHostView:
        """The image's columns, checked: device pointers (CUDA) or NumPy views (CPU)."""
        self._require_open()
        if self._view is None:
            raise LifecycleError("the e-graph session is still opening", fix="await entry.")
        return self._view

    async def __aenter__(self) -> Self:
        self._enter_open()
        source, self._source = self._source, None  # the session need not keep host data
        if source is None:  # only the first entry finds it; _enter_open refused the rest
            raise LifecycleError("this e-graph session lost its source", fix=self._make_fix)
        try:
            await self._open(source)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def aclose(self) -> None:
        """Free the image and the scratch buffers. Idempotent; runs even when cancelled."""
        if not self._enter_closed():
            return
        buffers = list(self._scratch.values())
        if self._resident is not None:
            buffers.append(self._resident.buffer)
        self._scratch.clear()
        self._round.clear()
        self._resident = self._view = None
        if self._backend.state is not LifecycleState.OPEN:
            return  # the backend freed everything when it closed
        with anyio.CancelScope(shield=True):
            # A cancelled canonicalization's sequence may still run on these buffers.
            await self._backend.settle(buffers)
            for buffer in buffers:
                await self._backend.free(buffer)

    async def _open(self, source: EGraphSource) -> None:
        backend = self._backend
        resident = await upload_egraph(backend, source, chunk_bytes=self._chunk_bytes)
        self._resident = resident
        # Resolving the view checks every column span against the buffer, so the
        # word offsets handed to the kernels below are known to be in bounds.
        self._view = egraph_view(backend, resident)
        for name, (words, dtype) in scratch_words(resident).items():
            self._scratch[name] = await backend.alloc(4 * words, dtype)
        self._round = round_steps(resident, self._scratch)

    async def canonicalize(self, *, max_rounds: int | None = None) -> Canonicalization:
        """Merge congruent e-classes until a round merges nothing (the fixed point).

        Rows with the same operator and the same canonical children are congruent,
        so their e-classes merge; merges make more children equal, so rounds repeat
        on the device, with only the eight state words read back between batches.
        Calls on one session run one after another.

        Args:
            max_rounds: Round limit; default ``num_classes + 1``, which every e-graph
                meets (each round but the last merges at least one pair of classes).

        Returns:
            The canonical e-class of every e-class, the rounds and the merges.

        Raises:
            ConfigurationError: ``max_rounds`` ran out before the fixed point.
        """
        self._require_open()
        resident = self.resident
        limit = min(resident.num_classes + 1, MAX_ROUNDS_LIMIT)
        if max_rounds is not None:
            if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
                raise ValueError(f"max_rounds must be a positive int, got {max_rounds!r}")
            limit = min(max_rounds, MAX_ROUNDS_LIMIT)
        async with self._lock:
            self._require_open()
            try:
                result = await canonicalize(
                    self._backend, self._scratch, self._round, limit, self._require_open
                )
            except ConfigurationError:
                self._canonicalized = True  # it ran to its limit: the signatures are there
                raise
            self._canonicalized = True
        return result

    async def read_signatures(self) -> np.ndarray:
        """Each row's signature over its canonical children, from the last canonicalization.

        Raises:
            LifecycleError: No canonicalization has run in this session yet.
        """
        self._require_open()
        if not self._canonicalized:
            raise LifecycleError(
                "this e-graph session has no signatures yet",
                fix="await session.canonicalize() first.",
            )
        async with self._lock:
            return await self._backend.read(self._scratch["signatures"])
