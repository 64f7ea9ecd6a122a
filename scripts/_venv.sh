# Sourced by scripts/run and scripts/test: make .venv with the project and its dev
# extras installed, reinstalling only when pyproject.toml changed.
VENV="${VYRE_ASYNC_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
stamp="$VENV/.vyre-async-installed"
want="$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())')"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[dev]'
    echo "$want" > "$stamp"
fi
