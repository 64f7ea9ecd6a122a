"""Repeated sequence bodies replayed as CUDA graphs: one launch instead of hundreds.

A resident traversal enqueues its body (three kernels per BFS level, sixteen levels
per submission at first) again and again with the same buffers and scalars. Each
``cuLaunchKernel`` from Python costs microseconds of host time, which for a
millisecond-long traversal was most of its host overhead. The first time a body
(kernels, pointers, scalars, launch shapes, clears, repeat count) is seen it is
captured from the stream into a graph and instantiated; later submissions of the
same body are one ``cuGraphLaunch``.

Kernel parameters are captured by value, so a graph stays right for as long as its
pointers mean the same allocation; a freed buffer whose address comes back for
another buffer gives a graph of the same key, which is what the same launches
would do anyway. Graphs are kept least recently used first, a bounded number;
destroying one that is still running is safe (the driver frees it when it ends).
If capturing fails, graphs are switched off for the backend and bodies go back to
plain launches.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ...cuda import CudaDevice
from ...errors import VyreError
from ...kernels import BoundCall
from ...logging import get_logger

_log = get_logger("vyre_async.backends")

#: Repeated bodies of at least this many launches are captured (fewer: not worth it).
GRAPH_MIN_LAUNCHES = 16
#: Instantiated graphs kept per backend.
GRAPH_CACHE_SIZE = 64

Step = tuple[BoundCall[Any], dict[str, int], list[tuple[int, int]]]


def _step_key(step: Step) -> Hashable:
    """What makes two launches of a step the same graph node."""
    call, pointers, clears = step
    return (
        id(call.kernel),
        tuple(sorted(pointers.items())),
        tuple((name, value.item()) for name, value in call.scalars.items()),
        call.launch,
        tuple(clears),
    )


class StepPlans:
    """Each bound sequence step's pointers, output clears and graph key, made once.

    A backend hands out the same bound call for the same step (see
    ``BackendCore._bind_step``), so what a launch needs besides the call (device
    pointers, the outputs to clear) and the key of the graph it may be part of are
    worked out on first sight and found by identity afterwards: building a body's
    key from its contents cost about 10 us per submission. A pointer stays right for
    as long as its buffer lives, and a submission's buffers were checked to be live
    (reserved) before their steps are planned.

    Args:
        capacity: Plans kept at most; all are dropped when it is reached.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._plans: dict[int, Step] = {}  # id(call) -> its step (holding the call)
        self._numbers: dict[int, int] = {}  # id(call) -> number of its step's key
        self._by_key: dict[Hashable, int] = {}  # step key -> number
        self._next = itertools.count()

    def plan(self, call: BoundCall[Any], pointer_of: Callable[[Any], int]) -> Step:
        """The step of ``call``, its buffers' pointers from ``pointer_of(buffer)``."""
        step = self._plans.get(id(call))
        if step is not None and step[0] is call:
            return step
        pointers = {name: pointer_of(b) for name, b in call.buffers.items()}
        clears = [
            (pointers[p.name], call.lengths[p.name] * p.dtype.itemsize)
            for p in call.kernel.buffer_params
            if p.role == "out"
        ]
        step = (call, pointers, clears)
        if len(self._plans) >= self._capacity:
            # Numbers are never reused, so graphs keyed by dropped ones just miss.
            self._plans.clear()
            self._numbers.clear()
            self._by_key.clear()
        self._plans[id(call)] = step
        return step

    def body_key(self, steps: Sequence[Step], repeat_count: int) -> Hashable:
        """What makes two submissions of a body (planned steps) the same graph."""
        return (repeat_count, tuple(self._number(step) for step in steps))

    def _number(self, step: Step) -> int:
        number = self._numbers.get(id(step[0]))
        if number is None:
            key = _step_key(step)
            number = self._by_key.get(key)
            if number is None:
                number = self._by_key[key] = next(self._next)
            if self._plans.get(id(step[0])) is step:  # held: its id stays its own
                self._numbers[id(step[0])] = number
        return number


class BodyGraphs:
    """Captured bodies of one device, least recently used first.

    Args:
        device: The device whose streams the graphs run on.
        capacity: Graphs kept at most.
    """

    def __init__(self, device: CudaDevice, capacity: int = GRAPH_CACHE_SIZE) -> None:
        self._device = device
        self._capacity = capacity
        self._graphs: OrderedDict[Hashable, Any] = OrderedDict()
        self.enabled = True
        #: Bodies captured, and launches that replayed a captured body.
        self.captured = 0
        self.replayed = 0

    def launch(self, key: Hashable, record: Callable[[Any], None], stream: Any) -> bool:
        """Replay the body ``key`` on ``stream``, capturing it with ``record`` first if new.

        Returns:
            False when graphs are off (or capturing just failed): the caller then
            enqueues the body itself.
        """
        if not self.enabled:
            return False
        device = self._device
        driver = device.driver
        graph_exec = self._graphs.get(key)
        if graph_exec is None:
            graph_exec = self._capture(record, stream)
            if graph_exec is None:
                return False
            self._graphs[key] = graph_exec
            while len(self._graphs) > self._capacity:
                _, old = self._graphs.popitem(last=False)
                device.call(driver.cuGraphExecDestroy, old)
        else:
            self._graphs.move_to_end(key)
            self.replayed += 1
        device.call(driver.cuGraphLaunch, graph_exec, stream)
        return True

    def _capture(self, record: Callable[[Any], None], stream: Any) -> Any:
        device = self._device
        driver = device.driver
        relaxed = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        try:
            device.call(driver.cuStreamBeginCapture, stream, relaxed)
        except VyreError as exc:
            return self._give_up(exc)
        try:
            record(stream)
        except BaseException:
            self._endwait_quietly(stream)
            raise
        try:
            graph = device.call(driver.cuStreamEndCapture, stream)
        except VyreError as exc:
            return self._give_up(exc)
        try:
            graph_exec = device.call(driver.cuGraphInstantiate, graph, 0)
        except VyreError as exc:
            return self._give_up(exc)
        finally:
            device.call(driver.cuGraphDestroy, graph)
        self.captured += 1
        return graph_exec

    def _endwait_quietly(self, stream: Any) -> None:
        driver = self._device.driver
        result = driver.cuStreamEndCapture(stream)
        graph = result[1] if isinstance(result, tuple) and len(result) > 1 else None
        if graph is not None and int(result[0]) == 0:
            driver.cuGraphDestroy(graph)

    def _give_up(self, exc: VyreError) -> None:
        self.enabled = False
        _log.warning("cuda_graphs_disabled", reason=exc.what)

    def close(self) -> None:
        """Destroy every graph (backend close)."""
        driver = self._device.driver
        while self._graphs:
            _, graph_exec = self._graphs.popitem()
            self._device.call(driver.cuGraphExecDestroy, graph_exec)
