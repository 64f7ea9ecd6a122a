#!/usr/bin/env bash
# One device-tool call: install the carried wheels, run the GPU tests, the dispatch
# benchmark and the quickstart, writing every log under $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 VYRE_ASYNC_CACHE_DIR=/tmp/vyre-cache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{ nvidia-smi; python3 -c "import cuda.bindings, numpy, anyio; print('cuda-bindings', cuda.bindings.__version__, 'numpy', numpy.__version__, 'anyio', anyio.__version__)"; } 2>&1 | tee "$OUT/env.txt"
python3 -m pytest tests/gpu -m gpu -p no:cacheprovider -q -rs ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest-gpu.log"
if [ "${RUN_BENCH:-1}" = 1 ]; then
    python3 bench/dispatch.py --out "$OUT/dispatch.json" 2>&1 | tee "$OUT/dispatch.log"
fi
python3 examples/quickstart.py --backend cuda 2>&1 | tee "$OUT/quickstart.log" | tail -40
