#!/usr/bin/env bash
# One device-tool call: install the carried wheels, run the GPU tests and the
# benchmarks, writing every log under $OUT. BENCH selects: "dispatch resident" (default).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 VYRE_ASYNC_CACHE_DIR=/tmp/vyre-cache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{ nvidia-smi; python3 -c "import cuda.bindings, numpy; print('cuda-bindings', cuda.bindings.__version__, 'numpy', numpy.__version__)"; python3 -m vyre_async.cli info; } > "$OUT/env.txt" 2>&1
python3 -m pytest tests/gpu -m gpu -p no:cacheprovider -q -rs ${PYTEST_ARGS:-} > "$OUT/pytest-gpu.log" 2>&1
tail -n 3 "$OUT/pytest-gpu.log"
python3 examples/quickstart.py --backend cuda > "$OUT/quickstart.log" 2>&1
echo "quickstart: exit $?"
for bench in ${BENCH:-dispatch resident}; do
    python3 "bench/$bench.py" --out "$OUT/$bench.json" > "$OUT/$bench.log" 2>&1
    echo "$bench: exit $?"; tail -n 40 "$OUT/$bench.log"
done
