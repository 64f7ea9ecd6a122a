# Sourced by scripts/run and scripts/test: make .venv with the project, its test and
# lint tools and one CUDA extra, reinstalling only when pyproject.toml or the choice
# of extra changed. VYRE_ASYNC_CUDA picks the extra: cu13 (default; NVIDIA driver 580
# or newer) or cu12 (driver 525 or newer). Either also works without a GPU: the
# tests compile kernels with its NVRTC, and the CPU backend runs everything else.
VENV="${VYRE_ASYNC_VENV:-.venv}"
CUDA_EXTRA="${VYRE_ASYNC_CUDA:-cu13}"
case "$CUDA_EXTRA" in
    # The other major's NVRTC goes when switching: cuda-bindings 12 would load NVRTC 13.
    cu12) OTHER_NVRTC=nvidia-cuda-nvrtc ;;
    cu13) OTHER_NVRTC=nvidia-cuda-nvrtc-cu12 ;;
    *)
        echo "VYRE_ASYNC_CUDA must be cu12 or cu13, got '$CUDA_EXTRA'" >&2
        exit 2
        ;;
esac
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
stamp="$VENV/.vyre-async-installed"
want="$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())') $CUDA_EXTRA"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip uninstall --quiet --yes "$OTHER_NVRTC" >/dev/null 2>&1 || true
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[test,lint,$CUDA_EXTRA]"
    echo "$want" > "$stamp"
fi
