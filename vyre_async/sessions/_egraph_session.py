"""E-graph sessions: an image uploaded once, canonicalized on the device to a fixed point.

Made by ``backend.egraph_session(snapshot)`` and used with ``async with``, like a
resident-graph session: the image and the scratch buffers (union-find parents,
canonical children, signatures, the signature table, the state block) are
allocated on entry and freed on exit, also on error or cancellation.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Self

import anyio
import numpy as np

from .._lifecycle import LifecycleState
from ..backends import ReadRange, ResidentBuffer, SequenceStep
from ..errors import ConfigurationError, LifecycleError
from ..kernels import _egraph
from ..kernels._egraph_layout import (
    STATE_CONVERGED,
    STATE_DONE,
    STATE_MERGES,
    STATE_ROUNDS,
)
from ..sessions import SessionState
from ..sessions._repeat import run_until_done
from ._plan import BorrowedEGraphUploadPlan, EGraphUploadPlan
from ._rounds import Canonicalization, round_steps, scratch_words
from ._snapshot import EGraphSnapshot
from ._upload import DEFAULT_CHUNK_BYTES, EGraphSource, ResidentEGraph
from ._view import EGraphDeviceView, EGraphHostView

if TYPE_CHECKING:
    from ..backends import Backend

#: Rounds may not exceed what the device's int32 state word counts.
_MAX_ROUNDS_LIMIT = 2**31 - 1


class EGraphSession:
    """An e-graph image resident on one backend, canonicalized by structural equivalence.

    Args:
        backend: An open backend.
        source: An :class:`EGraphSnapshot` or an upload plan of one.
        chunk_bytes: Bytes per upload write (see ``upload_egraph``).
    """

    def __init__(
        self, backend: Backend, source: EGraphSource, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES
    ) -> None:
        if not isinstance(source, EGraphSnapshot | EGraphUploadPlan | BorrowedEGraphUploadPlan):
            raise TypeError(
                f"egraph_session takes an EGraphSnapshot or an upload plan, got "
                f"{type(source).__name__}"
            )
        self._backend = backend
        self._source: EGraphSource | None = source
        self._chunk_bytes = chunk_bytes
        self._state = SessionState.UNOPENED
        self._resident: ResidentEGraph | None = None
        self._view: EGraphDeviceView | EGraphHostView | None = None
        self._scratch: dict[str, ResidentBuffer] = {}
        self._round: list[SequenceStep] = []
        self._canonicalized = False
        self._lock = anyio.Lock()

    @property
    def state(self) -> SessionState:
        """Unopened, open or closed."""
        return self._state

    @property
    def resident(self) -> ResidentEGraph:
        """The resident image and its layout."""
        self._check_open()
        if self._resident is None:
            raise LifecycleError("the e-graph session is still opening", fix="await entry.")
        return self._resident

    @property
    def view(self) -> EGraphDeviceView | EGraphHostView:
        """The image's columns, checked: device pointers (CUDA) or NumPy views (CPU)."""
        self._check_open()
        if self._view is None:
            raise LifecycleError("the e-graph session is still opening", fix="await entry.")
        return self._view

    async def __aenter__(self) -> Self:
        if self._state is not SessionState.UNOPENED or self._source is None:
            raise LifecycleError(
                f"this e-graph session is {self._state.value} and cannot be opened again",
                fix="open a new one with backend.egraph_session(snapshot).",
            )
        self._state = SessionState.OPEN
        source, self._source = self._source, None  # the session need not keep host data
        try:
            await self._open(source)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Free the image and the scratch buffers. Idempotent; runs even when cancelled."""
        if self._state is SessionState.CLOSED:
            return
        self._state = SessionState.CLOSED
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

    def _check_open(self) -> None:
        if self._state is not SessionState.OPEN:
            raise LifecycleError(
                f"this e-graph session is {self._state.value}",
                fix="use it inside `async with backend.egraph_session(snapshot) as session:`.",
            )

    async def _open(self, source: EGraphSource) -> None:
        backend = self._backend
        resident = await backend.upload_egraph(source, chunk_bytes=self._chunk_bytes)
        self._resident = resident
        # Resolving the view checks every column span against the buffer, so the
        # word offsets handed to the kernels below are known to be in bounds.
        self._view = backend.egraph_view(resident)
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
        self._check_open()
        resident = self.resident
        limit = min(resident.num_classes + 1, _MAX_ROUNDS_LIMIT)
        if max_rounds is not None:
            if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
                raise ValueError(f"max_rounds must be a positive int, got {max_rounds!r}")
            limit = min(max_rounds, _MAX_ROUNDS_LIMIT)
        async with self._lock:
            self._check_open()
            parent, state = self._scratch["parent"], self._scratch["egraph_state"]
            prefix = [
                SequenceStep(
                    _egraph.egraph_init,
                    {"parent": parent, "egraph_state": state},
                    {"max_rounds": limit},
                )
            ]
            words, device_ns = await run_until_done(
                self._backend, prefix, self._round, state, STATE_DONE, check=self._check_open
            )
            finish = SequenceStep(
                _egraph.egraph_compress, {"parent": parent, "egraph_state": state}, {"force": 1}
            )
            (class_map,) = await self._backend.submit_sequence([finish], reads=[ReadRange(parent)])
            self._canonicalized = True
        rounds = int(words[STATE_ROUNDS])
        if not words[STATE_CONVERGED]:
            raise ConfigurationError(
                f"canonicalization stopped at max_rounds={limit} with e-classes still "
                f"merging in round {rounds}",
                fix="leave max_rounds at its default (num_classes + 1), which always suffices.",
            )
        return Canonicalization(class_map, rounds, int(words[STATE_MERGES]), device_ns)

    async def read_signatures(self) -> np.ndarray:
        """Each row's signature over its canonical children, from the last canonicalization.

        Raises:
            LifecycleError: No canonicalization has run in this session yet.
        """
        self._check_open()
        if not self._canonicalized:
            raise LifecycleError(
                "this e-graph session has no signatures yet",
                fix="await session.canonicalize() first.",
            )
        async with self._lock:
            return await self._backend.read(self._scratch["signatures"])
