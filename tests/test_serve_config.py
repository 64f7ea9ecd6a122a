"""The serve config, the token, and the command's refusals before it serves."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from graph_references import scipy_levels
from serve_fixtures import BOUND_S, random_graph, reached, serving, write_config

from vyre_async.cli import main
from vyre_async.errors import ConfigurationError
from vyre_async.graphs import rmat
from vyre_async.serve import AuthSection, load_serve_config, read_token

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "t0ken-for-the-tests-0123456789"  # noqa: S105 (a test token, not a secret)
VARIABLE = "T"
KEY_FILE = "token"
MISSING_FILE = "missing"


def test_the_shipped_serve_config_loads_as_a_cpu_rmat_server() -> None:
    """configs/serve.toml decodes: loopback, the CPU backend, one R-MAT graph, batched."""
    config = load_serve_config(ROOT / "configs" / "serve.toml")
    assert (config.server.host, config.server.backend) == ("127.0.0.1", "cpu")
    assert [g.name for g in config.graphs] == ["social"]
    assert config.graphs[0].graph.kind == "rmat"
    assert config.graphs[0].batching.session_config() is not None


def test_a_bad_serve_config_names_each_field_at_fault_with_a_fix(tmp_path: Path) -> None:
    """Every error of the file, one per line, each with the file and its path inside it:
    a bound, a misspelt field, a name taken twice, a graph section's own rule."""
    path = tmp_path / "serve.toml"
    path.write_text(
        textwrap.dedent(
            """
            [server]
            port = 70000
            bakend = "cpu"

            [[graphs]]
            name = "g"
            graph = { kind = "rmat", scale = 8 }

            [[graphs]]
            name = "g"
            graph = { kind = "edges" }
            """
        )
    )
    with pytest.raises(ConfigurationError) as info:
        load_serve_config(path)
    lines = str(info.value).splitlines()
    assert f"{path}: $.server.port: Expected `int` <= 65535" in lines
    assert any("$.server: Object contains unknown field `bakend`" in line for line in lines)
    assert any("did you mean `backend`" in line for line in lines)
    assert any("$.graphs[1].graph.path: kind 'edges' needs a path" in line for line in lines)
    assert str(info.value).endswith("Fix: correct each field named above.")


def test_two_graphs_of_one_name_are_refused(tmp_path: Path) -> None:
    """A name is an endpoint's path segment: the second graph of a name is refused."""
    path = tmp_path / "serve.json"
    path.write_text(
        '{"graphs": [{"name": "g", "graph": {"kind": "rmat", "scale": 4}},'
        ' {"name": "g", "graph": {"kind": "rmat", "scale": 5}}]}'
    )
    with pytest.raises(ConfigurationError, match=r"\$\.graphs\[1\]\.name: the name 'g' is taken"):
        load_serve_config(path)


def test_the_token_comes_from_its_variable_or_its_file(tmp_path: Path) -> None:
    """token_env reads the variable; token_file the file beside the config, whitespace
    around it dropped; neither: no token."""
    (tmp_path / "token").write_text(f"  {TOKEN}\n")
    config_file = tmp_path / "serve.toml"
    assert read_token(AuthSection(token_env=VARIABLE), config_file, {"T": TOKEN}) == TOKEN
    assert read_token(AuthSection(token_file=KEY_FILE), config_file) == TOKEN
    assert read_token(AuthSection(), config_file) is None


@pytest.mark.parametrize(
    ("auth", "environ", "message"),
    [
        (AuthSection(token_env=VARIABLE), {}, "T, which is unset or empty"),
        (AuthSection(token_env=VARIABLE), {"T": "short"}, "has 5 characters, fewer than 16"),
        (AuthSection(token_env=VARIABLE), {"T": "a token with spaces!"}, "whitespace"),
        (AuthSection(token_file=MISSING_FILE), {}, "cannot be read"),
    ],
)
def test_a_missing_short_or_unreadable_token_is_refused_with_a_fix(
    tmp_path: Path, auth: AuthSection, environ: dict[str, str], message: str
) -> None:
    """An unset variable, a short or spaced token and a missing file: ConfigurationError."""
    with pytest.raises(ConfigurationError, match=message) as info:
        read_token(auth, tmp_path / "serve.toml", environ)
    assert "Fix: " in str(info.value)


def test_the_token_may_not_sit_in_the_config_itself(tmp_path: Path) -> None:
    """[auth] has no field for the token's value: a `token = ...` is an unknown field."""
    path = tmp_path / "serve.json"
    path.write_text(
        '{"auth": {"token": "x"}, "graphs": [{"name": "g", "graph": {"kind": "rmat", "scale": 4}}]}'
    )
    with pytest.raises(ConfigurationError, match=r"\$\.auth: Object contains unknown field"):
        load_serve_config(path)


def test_vyre_async_serve_exits_2_for_a_bad_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vyre-async serve` with a config that does not decode: exit 2, the error and its
    fix on standard error, no traceback."""
    path = tmp_path / "serve.toml"
    path.write_text("[[graphs]]\nname = 'g'\n")
    assert main(["serve", str(path)]) == 2
    err = capsys.readouterr().err
    assert "$.graphs[0]: Object missing required field `graph`" in err
    assert "Fix: " in err
    assert "Traceback" not in err


def test_vyre_async_serve_exits_2_for_a_port_in_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A port another socket holds: exit 2 saying so, with the fix naming --port."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = tmp_path / "serve.toml"
        path.write_text(
            f"[server]\nport = {port}\nbackend = 'cpu'\n"
            "[[graphs]]\nname = 'g'\ngraph = { kind = 'rmat', scale = 4 }\n"
        )
        assert main(["serve", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"cannot serve on 127.0.0.1 port {port}" in err
    assert "--port" in err


def _child(body: str, blocked: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(
        f"""
        import importlib.abc, sys
        BLOCKED = {set(blocked)!r}
        class Blocker(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)")
                return None
        sys.meta_path.insert(0, Blocker())
        """
    ) + textwrap.dedent(body)
    return subprocess.run(  # noqa: S603 - our own interpreter running our own script
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )


def test_importing_vyre_async_and_its_cli_imports_neither_starlette_nor_hypercorn() -> None:
    """`import vyre_async`, `vyre_async.cli` and `vyre_async.serve` leave the serve
    extra's packages unimported."""
    done = _child(
        """
        import vyre_async, vyre_async.cli, vyre_async.serve
        print(sorted(m for m in sys.modules if m.partition(".")[0] in ("starlette", "hypercorn")))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_serving_without_the_serve_extra_exits_2_naming_it() -> None:
    """Without Starlette and Hypercorn, `vyre-async serve` exits 2 with the pip command."""
    config = ROOT / "configs" / "serve.toml"
    done = _child(
        f"""
        from vyre_async.cli import main
        raise SystemExit(main(["serve", {str(config)!r}]))
        """,
        blocked=("starlette", "hypercorn"),
    )
    assert done.returncode == 2, done.stderr
    assert "serving needs starlette and hypercorn" in done.stderr
    assert "pip install 'vyre-async[serve]'" in done.stderr


async def test_a_missing_or_wrong_token_gets_401_and_liveness_asks_for_none(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a token set: no header or another token gets 401 (WWW-Authenticate) on
    queries, readiness, graphs, metrics and reload; liveness answers without one; the
    right token gets answers."""
    monkeypatch.setenv("VYRE_TEST_SERVE_TOKEN", TOKEN)
    graph = random_graph(rng, 50, 100)
    config = await write_config(tmp_path, {"g": graph}, auth={"token_env": "VYRE_TEST_SERVE_TOKEN"})
    paths = [
        ("POST", "/v1/graphs/g/reach"),
        ("GET", "/v2/health/ready"),
        ("GET", "/v1/graphs"),
        ("GET", "/metrics"),
        ("POST", "/v1/graphs/g/reload"),
    ]
    async with serving(config) as served:
        client = served.client
        refused = [
            await client.request(method, path, json={"source": 1}, headers=headers)
            for method, path in paths
            for headers in ({}, {"Authorization": f"Bearer {TOKEN}x"})
        ]
        live = await client.get("/v2/health/live")
        right = await client.post(
            "/v1/graphs/g/reach", json={"source": 1}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
    for answer in refused:
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer")
    assert "carries none" in refused[0].json()["error"]["message"]
    assert "carries another one" in refused[1].json()["error"]["message"]
    assert live.status_code == 200
    assert right.json() == {"answer": reached(graph, 1)}


def test_vyre_async_serve_runs_the_shipped_config_and_a_sigterm_ends_it_with_0() -> None:
    """`vyre-async serve configs/serve.toml --port 0` (a child process) serves the
    config's R-MAT graph: reach and khop answer as SciPy does, and SIGTERM exits 0."""
    config = str(ROOT / "configs" / "serve.toml")
    command = [sys.executable, "-m", "vyre_async", "serve", config, "--port", "0"]
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and command line
        [*command, "--log-level", "warning"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        with ThreadPoolExecutor(1) as reader:
            line = reader.submit(child.stdout.readline).result(timeout=BOUND_S)
        url = line.split(" on ")[1].strip()
        graph = rmat(12, 16, 7)
        with httpx.Client(base_url=url, timeout=BOUND_S) as client:
            deadline = time.monotonic() + BOUND_S
            while client.get("/v2/health/ready").status_code != 200:
                assert time.monotonic() < deadline, "the server never became ready"
                time.sleep(0.01)
            reach = client.post("/v1/graphs/social/reach", json={"source": 3}).json()
            khop = client.post(
                "/v1/graphs/social/khop", json={"source": 3, "params": {"k": 2}}
            ).json()
        child.send_signal(signal.SIGTERM)
        code = child.wait(timeout=BOUND_S)
    finally:
        child.kill()
        _, err = child.communicate()
    levels = scipy_levels(graph, 3)
    assert reach == {"answer": reached(graph, 3)}
    assert khop == {"answer": int(((levels >= 0) & (levels <= 2)).sum())}
    assert code == 0, err
