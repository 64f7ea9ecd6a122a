#!/usr/bin/env bash
# One device-tool call: install the carried wheels, run the GPU tests, the GPU job
# and the benchmarks, writing every log under $OUT/r and packing it into
# $OUT/results.tgz after each stage (the tool returns at most 8 files).
# BENCH selects benchmarks (default "resident jobs"); "breakdown" is bfs_breakdown.py.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 VYRE_ASYNC_CACHE_DIR=/tmp/vyre-cache
OUT=${OUT:-/tmp/out}
R="$OUT/r"
mkdir -p "$R"
pack() { tar czf "$OUT/results.tgz" -C "$OUT" r; }
{ nvidia-smi; python3 -c "import cuda.bindings, numpy; print('cuda-bindings', cuda.bindings.__version__, 'numpy', numpy.__version__)"; python3 -m vyre_async.cli info; } > "$R/env.txt" 2>&1
python3 -m pytest tests/gpu -m gpu -p no:cacheprovider -q -rs ${PYTEST_ARGS:-} > "$R/pytest-gpu.log" 2>&1
tail -n 3 "$R/pytest-gpu.log"; pack
python3 -m vyre_async.cli run configs/quickstart.toml --out /tmp/job-quickstart > "$R/job-quickstart.log" 2>&1
echo "quickstart job: exit $?"; tail -n 3 "$R/job-quickstart.log"
if [ -n "${GPU_JOB:-}" ]; then
    python3 -m vyre_async.cli run "$GPU_JOB" --out /tmp/job-gpu > "$R/job-gpu.log" 2>&1
    echo "gpu job: exit $?"; tail -n 3 "$R/job-gpu.log"; cp /tmp/job-gpu/summary.json "$R/job-gpu-summary.json"
fi
pack
for bench in ${BENCH:-resident jobs}; do
    case "$bench" in
        breakdown) python3 bench/bfs_breakdown.py --json "$R/breakdown.json" > "$R/breakdown.log" 2>&1 ;;
        jobs) python3 bench/jobs.py --backend cuda ${JOBS_ARGS:-} --out "$R/jobs.json" > "$R/jobs.log" 2>&1 ;;
        *) python3 "bench/$bench.py" --out "$R/$bench.json" > "$R/$bench.log" 2>&1 ;;
    esac
    echo "$bench: exit $?"; tail -n 25 "$R/$bench.log"; pack
done
