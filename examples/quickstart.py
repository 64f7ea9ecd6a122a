"""A tour of the dispatch API: every built-in kernel, real dispatches, checked against NumPy.

Runs on CUDA when a GPU answers, else on the CPU backend. It dispatches every
built-in kernel on random data and checks each result against float64 NumPy, keeps
buffers resident across a repeated sequence, runs many concurrent dispatches from
one event loop, and prints the device and a line of the backend's telemetry (all of
it in Prometheus' text format with ``--prometheus``). Where the backend cannot open
(``--backend cuda`` without a GPU) it prints the reason and its fix on one line and
exits 1, as ``vyre-async run`` does.

Usage: ``python examples/quickstart.py [--backend auto|cuda|cpu] [--log-format json]
[--prometheus]``
"""

from __future__ import annotations

import argparse
import sys
import time

import anyio
import numpy as np

import vyre_async as va
from vyre_async.kernels import axpy, histogram256, sum_reduce


def check(name: str, got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    """Stop the job when a result disagrees with its float64 reference."""
    if not np.allclose(got, want, rtol=rtol, atol=rtol):
        worst = float(np.max(np.abs(got.astype(np.float64) - want)))
        sys.exit(f"quickstart: {name} disagrees with float64 NumPy (max abs error {worst})")
    print(f"  {name:<28} ok  ({got.size} values match float64 NumPy)")


async def main(kind: va.backends.BackendKind, prometheus: bool = False) -> None:
    """Open a backend and exercise it; ``prometheus``: print its telemetry in full."""
    rng = np.random.default_rng()
    n = 1_000_003
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    data = rng.integers(0, 256, n, dtype=np.uint8)
    async with va.open_backend(kind) as backend:
        print(f"backend: {backend.kind}  device: {backend.device_name}")
        print("dispatches:")
        out = await backend.dispatch(axpy, {"x": x, "y": y}, a=2.5)
        check("axpy", out["y"], 2.5 * x.astype(np.float64) + y, 1e-5)
        out = await backend.dispatch(sum_reduce, {"x": x})
        check("sum", out["out"], np.array([x.astype(np.float64).sum()]), 1e-3)
        out = await backend.dispatch(histogram256, {"data": data})
        check("histogram256", out["counts"], np.bincount(data, minlength=256), 0)

        print("resident buffers and a repeated sequence (one host sync):")
        xb, yb = await backend.upload(x), await backend.upload(y)
        total = await backend.alloc(4, np.float32)
        repeats = 20
        step = va.SequenceStep(axpy, {"x": xb, "y": yb}, {"a": 0.25})
        reduce = va.SequenceStep(sum_reduce, {"x": yb, "out": total})
        (head,) = await backend.submit_repeated(
            [], [step], repeat_count=repeats, reads=[va.ReadRange(yb, 0, 1000)]
        )
        summed = (await backend.submit_sequence([reduce], reads=[va.ReadRange(total)]))[0]
        model = y.astype(np.float64) + 0.25 * repeats * x.astype(np.float64)
        check(f"axpy x{repeats} resident", head, model[:1000], 1e-4)
        check("sum of resident result", summed, np.array([model.sum()]), 1e-3)

        print("many concurrent dispatches from one event loop:")
        small_x = rng.standard_normal(1024).astype(np.float32)
        count = 2000
        start = time.perf_counter()
        pendings = [backend.submit(axpy, {"x": small_x, "y": small_x}, a=1.0) for _ in range(count)]
        for pending in pendings:
            await pending
        rate = count / (time.perf_counter() - start)
        print(f"  {count} dispatches of 4 KiB awaited at {rate:,.0f} dispatches/s")
        for buf in (xb, yb, total):
            await backend.free(buf)
        figures = backend.telemetry()
        print(
            f"telemetry: {figures.dispatches} dispatches, {figures.kernel_launches} kernel "
            f"launches, {figures.bytes_uploaded:,} bytes uploaded, "
            f"{figures.bytes_downloaded:,} downloaded"
        )
        if prometheus:
            print(va.to_prometheus_text(figures), end="")


def cli() -> None:
    """Parse arguments and run :func:`main`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument(
        "--prometheus", action="store_true", help="print the telemetry in Prometheus' format"
    )
    args = parser.parse_args()
    va.configure_logging(args.log_format)
    try:
        anyio.run(main, args.backend, args.prometheus)
    except va.VyreError as exc:  # no GPU for --backend cuda, most often
        here = " Here: --backend cpu." if args.backend == "cuda" else ""
        sys.exit(f"quickstart: {exc}{here}")
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    cli()
