"""Job files: TOML/JSON/YAML decoding, refusals naming the path, `vyre-async validate`."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vyre_async as va
from vyre_async.cli import main
from vyre_async.errors import ConfigurationError
from vyre_async.jobs import JobSpec, RandomSources, load_job

QUICKSTART = Path(__file__).resolve().parents[1] / "configs" / "quickstart.toml"


def _quickstart() -> dict[str, object]:
    return tomllib.loads(QUICKSTART.read_text())


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    if name.endswith(".toml"):
        raise ValueError("write TOML by hand")
    text = json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data)
    path.write_text(text)
    return path


def test_shipped_quickstart_decodes_into_the_documented_shape() -> None:
    """configs/quickstart.toml decodes with the issue's fields and defaults."""
    spec = load_job(QUICKSTART)
    assert spec.job.name == "rmat-bfs"
    assert (spec.graph.kind, spec.graph.scale, spec.graph.seed) == ("rmat", 16, 7)
    assert spec.workload[0].sources == RandomSources(random=2000, seed=3, min_out_degree=1)
    assert spec.output.dir == "runs/rmat-bfs"
    assert spec.limits.retries == 2


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_json_and_yaml_give_the_same_spec_as_toml(tmp_path: Path, suffix: str) -> None:
    """The same job written as JSON or YAML decodes to an equal spec."""
    path = _write(tmp_path, f"job{suffix}", _quickstart())
    assert load_job(path) == load_job(QUICKSTART)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d["workload"][0].update(sources="all"), "$.workload[0].sources"),
        (lambda d: d["workload"][0].update(colour="red"), "$.workload[0]"),
        (lambda d: d["graph"].update(scale=99), "$.graph.scale"),
        (lambda d: d["job"].update(backend="tpu"), "$.job.backend"),
        (lambda d: d["output"].update(dir="runs\x00x"), "$.output.dir"),
        (lambda d: d["graph"].update(kind="mtx"), "$.graph.path"),
        (
            lambda d: d["workload"][0].update(kind="khop"),
            "$.workload[0]: Object missing required field `k`",
        ),
        (
            lambda d: (d["workload"][0].update(kind="pagerank"), d["workload"][0].pop("readback")),
            "$.workload[0].sources",
        ),
        (lambda d: d["workload"].clear(), "$.workload"),
        (lambda d: d.setdefault("batching", {}).update(in_flight=0), "$.batching.in_flight"),
    ],
)
def test_bad_files_name_the_path_and_a_fix(tmp_path: Path, change: object, where: str) -> None:
    """Each kind of mistake raises ConfigurationError naming the file and the path."""
    data = _quickstart()
    change(data)  # type: ignore[operator]
    path = _write(tmp_path, "job.json", data)
    with pytest.raises(ConfigurationError) as info:
        load_job(path)
    message = str(info.value)
    assert str(path) in message
    assert where in message
    assert "Fix:" in message


def test_batching_section_becomes_the_session_batching(tmp_path: Path) -> None:
    """[batching] sets the session's max_batch, max_delay and in_flight (default 2)."""
    data = _quickstart()
    data["batching"] = {"max_batch": 512, "max_delay_ms": 2.0}
    config = load_job(_write(tmp_path, "job.json", data)).batching.session_config()
    assert (config.max_batch, config.max_delay, config.in_flight) == (512, 0.002, 2)
    data["batching"]["in_flight"] = 3  # type: ignore[index]
    assert load_job(_write(tmp_path, "job.json", data)).batching.session_config().in_flight == 3


def test_syntax_errors_and_unknown_types_are_configuration_errors(tmp_path: Path) -> None:
    """Broken TOML, a missing file and an unknown extension each raise one clear error."""
    broken = tmp_path / "job.toml"
    broken.write_text("[job\nname = 1\n")
    for path in (broken, tmp_path / "absent.toml", tmp_path / "job.ini"):
        with pytest.raises(ConfigurationError, match="Fix:"):
            load_job(path)


def test_validate_exits_0_for_a_good_file_and_2_for_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vyre-async validate` prints a summary or the error, never a traceback."""
    assert main(["validate", str(QUICKSTART)]) == 0
    assert "2000 item(s)" in capsys.readouterr().out
    data = _quickstart()
    data["graph"]["edge_factor"] = 0  # type: ignore[index]
    bad = _write(tmp_path, "bad.yaml", data)
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "$.graph.edge_factor" in err
    assert "Traceback" not in err


def test_specs_are_frozen_and_round_trip_through_json() -> None:
    """A spec is immutable and encodes to JSON that decodes to an equal spec."""
    spec = load_job(QUICKSTART)
    with pytest.raises(AttributeError):
        spec.job = spec.job  # type: ignore[misc]
    assert msgspec.json.decode(msgspec.json.encode(spec), type=JobSpec) == spec


_SCALARS = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    section=st.sampled_from(["job", "graph", "workload", "output", "batching", "limits", "x"]),
    key=st.text(min_size=1, max_size=12),
    value=_SCALARS | st.lists(_SCALARS, max_size=3),
    suffix=st.sampled_from([".json", ".yaml"]),
)
def test_mutated_files_only_ever_raise_configuration_errors(
    tmp_path: Path, section: str, key: str, value: object, suffix: str
) -> None:
    """Any mutation of a valid file either still loads or raises ConfigurationError."""
    data = _quickstart()
    target = data.setdefault(section, {})
    if isinstance(target, list):
        target = target[0]
    target[key] = value  # type: ignore[index]
    path = _write(tmp_path, f"fuzz{suffix}", data)
    try:
        load_job(path)
    except ConfigurationError as exc:
        message = str(exc)
    else:
        return  # the mutation left a valid job
    assert str(path) in message
    assert "Fix:" in message


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(blob=st.binary(max_size=200), suffix=st.sampled_from([".toml", ".json", ".yaml"]))
def test_random_bytes_only_ever_raise_configuration_errors(
    tmp_path: Path, blob: bytes, suffix: str
) -> None:
    """Arbitrary bytes in a job file give ConfigurationError, never another exception."""
    path = tmp_path / f"noise{suffix}"
    path.write_bytes(blob)
    with pytest.raises(ConfigurationError, match="Fix:"):
        load_job(path)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value if v is not None) + "]"
    # A basic string: JSON's escapes of control characters, quotes and backslashes are
    # TOML's; other characters go in as they are (TOML has no surrogate-pair escapes).
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _to_toml(data: dict[str, object]) -> str:
    """The job dict as TOML (tables of scalars and arrays; [[workload]] tables)."""
    lines: list[str] = []
    for section, body in data.items():
        tables = body if isinstance(body, list) else [body]
        for table in tables:
            lines.append(f"[[{section}]]" if isinstance(body, list) else f"[{section}]")
            for key, value in table.items():  # type: ignore[attr-defined]
                if value is None:
                    continue
                if isinstance(value, dict):
                    inner = ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items())
                    lines.append(f"{_toml_value(key)} = {{ {inner} }}")
                else:
                    lines.append(f"{_toml_value(key)} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    section=st.sampled_from(["job", "graph", "workload", "output", "batching", "limits", "x"]),
    key=st.text(min_size=1, max_size=12),
    value=_SCALARS | st.lists(_SCALARS, max_size=3),
    suffix=st.sampled_from([".toml", ".json", ".yaml"]),
)
def test_validate_on_mutated_files_exits_0_or_2_naming_file_and_path(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    section: str,
    key: str,
    value: object,
    suffix: str,
) -> None:
    """`vyre-async validate` on a mutated TOML/JSON/YAML job: exit 0, or 2 naming $.path."""
    data = _quickstart()
    target = data.setdefault(section, {})
    if isinstance(target, list):
        target = target[0]
    target[key] = value  # type: ignore[index]
    path = tmp_path / f"fuzz{suffix}"
    if suffix == ".toml":
        path.write_text(_to_toml(data))
    else:
        _write(tmp_path, path.name, data)
    capsys.readouterr()
    code = main(["validate", str(path)])
    err = capsys.readouterr().err
    assert code in (0, 2)
    if code == 2:
        assert str(path) in err
        assert "$" in err, "a structural error names the path inside the file"
        assert "Fix:" in err
        assert "Traceback" not in err


def test_the_toml_writer_of_these_tests_reproduces_the_quickstart() -> None:
    """The fuzz test's TOML writer turns the quickstart dict back into an equal job."""
    assert msgspec.convert(tomllib.loads(_to_toml(_quickstart())), JobSpec) == load_job(QUICKSTART)


def test_toml_dotted_keys_quoted_keys_and_floats_within_the_limits_decode_as_tomllib_reads(
    tmp_path: Path,
) -> None:
    """The key bound refuses nothing a job file writes: dotted and quoted keys, inline
    tables, floats and comments decode to the spec tomllib's reading gives."""
    path = tmp_path / "job.toml"
    path.write_text(
        'job.name = "rmat-bfs"  # a dotted key; a comment with a.b.c = 1\n'
        '"job"."backend" = "auto"\n'
        "[graph]\n"
        'kind = "rmat"\nscale = 16\nseed = 7\n'
        "[[workload]]\n"
        'kind = "bfs"\nsources = { random = 2000, seed = 3, min_out_degree = 1 }\n'
        'readback = "levels"\n'
        "[limits]\n"
        "retry_backoff_s = 1.5e-1\n"
    )
    spec = load_job(path)
    assert spec == msgspec.convert(tomllib.loads(path.read_text()), JobSpec)
    assert (spec.job.name, spec.workload[0].params, spec.limits.retry_backoff_s) == (
        "rmat-bfs",
        va.algorithms.bfs.BfsParams(readback="levels"),
        0.15,
    )
