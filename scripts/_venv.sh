# Sourced by scripts/run and scripts/test with ROOT (the checkout), VENV_EXTRAS (the
# extras the caller needs, comma-separated, "" for none) and VENV_WHY (why, in words)
# set: make the virtual environment with the project, its VENV_EXTRAS and one CUDA
# extra, and install again only when pyproject.toml, the CUDA extra or the extras
# asked for changed. scripts/run asks for no extra (a run needs only the package and
# CUDA), scripts/test for test and lint: after a run, a test run installs what it
# lacks; after a test run, a run installs nothing. VYRE_ASYNC_CUDA picks the CUDA
# extra: cu13 (default; NVIDIA driver 580 or newer) or cu12 (driver 525 or newer).
# Either also works without a GPU: the tests compile kernels with its NVRTC, and the
# CPU backend runs everything else. VYRE_ASYNC_VENV names another environment (a
# relative path starts at the checkout).
VENV="${VYRE_ASYNC_VENV:-.venv}"
case "$VENV" in
    /*) ;;
    *) VENV="$ROOT/$VENV" ;;
esac
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
# The stamp: "<sha256 of pyproject.toml> <CUDA extra> <extras installed, comma-separated>".
stamp="$VENV/.vyre-async-installed"
project="$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$ROOT/pyproject.toml") $CUDA_EXTRA"
have_hash="" have_cuda="" have_extras=""
if [ -f "$stamp" ]; then
    read -r have_hash have_cuda have_extras < "$stamp" || true
fi
have="$have_hash $have_cuda"
missing=""
for extra in ${VENV_EXTRAS//,/ }; do
    case ",$have_extras," in
        *",$extra,"*) ;;
        *) missing="$missing $extra" ;;
    esac
done
if [ "$have" != "$project" ] || [ -n "$missing" ]; then
    # What is there stays installed while pyproject.toml and the CUDA extra are the same.
    extras="$VENV_EXTRAS"
    if [ "$have" = "$project" ] && [ -n "$have_extras" ]; then
        extras="$have_extras${VENV_EXTRAS:+,$VENV_EXTRAS}"
    fi
    extras="$(printf '%s\n' ${extras//,/ } | sort -u | paste -sd, -)"
    echo "installing vyre-async[${extras:+$extras,}$CUDA_EXTRA] into $VENV: $VENV_WHY" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip uninstall --quiet --yes "$OTHER_NVRTC" >/dev/null 2>&1 || true
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT[${extras:+$extras,}$CUDA_EXTRA]"
    echo "$project $extras" > "$stamp"
fi
