"""A job file with several mistakes: every one reported, each with its $.path and a hint."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import numpy as np
import pytest

from vyre_async.cli import main
from vyre_async.errors import ConfigurationError
from vyre_async.jobs import JobSpec, load_job
from vyre_async.jobs.spec._document_errors import document_errors

QUICKSTART = Path(__file__).resolve().parents[1] / "configs" / "quickstart.toml"


def _quickstart() -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads(QUICKSTART.read_text())
    data["workload"].append({"kind": "pagerank"})
    return data


def _errors(tmp_path: Path, data: object) -> list[str]:
    """The lines of load_job's error for ``data`` written as JSON, without the file name."""
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigurationError) as info:
        load_job(path)
    lines = info.value.what.removesuffix(".").splitlines()
    assert all(line.startswith(f"{path}: ") for line in lines), lines
    return [line.removeprefix(f"{path}: ") for line in lines]


def test_validate_reports_every_error_of_a_file_each_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Five mistakes in four sections: validate and run both name all five, exit 2."""
    data = _quickstart()
    data["job"]["backend"] = "gpu"
    data["graph"]["scale"] = 99
    data["workload"][0]["readbak"] = "levels"
    data["workload"][0]["sources"] = [0, -1]
    data["output"]["format"] = "csv"
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    wanted = [
        "$.job.backend: Invalid enum value 'gpu'; expected one of 'auto', 'cuda', 'cpu'",
        "$.graph.scale: Expected `int` <= 30",
        "$.workload[0]: Object contains unknown field `readbak`; did you mean `readback`?",
        "$.workload[0].sources[1]: Expected `int` >= 0",
        "$.output.format: Invalid enum value 'csv'; expected one of 'jsonl', 'parquet'",
    ]
    for command in ("validate", "run"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        for line in wanted:
            assert f"{path}: {line}" in err, (command, line)
        assert "Fix:" in err
        assert "Traceback" not in err


def test_an_unknown_field_far_from_every_name_lists_the_fields_there(tmp_path: Path) -> None:
    """An unknown field like no known one: the message lists the section's fields."""
    data = _quickstart()
    data["batching"] = {"colour": "red"}
    (error,) = _errors(tmp_path, data)
    assert error == (
        "$.batching: Object contains unknown field `colour`; the fields here are "
        "`max_batch`, `max_delay_ms`, `in_flight`"
    )


@pytest.mark.parametrize("name", ["my job", "", "x" * 201, "job/../../etc"])
def test_a_bad_job_name_states_the_rule_in_words_not_the_regex(tmp_path: Path, name: str) -> None:
    """name = 'my job' (or empty, too long, a path): the rule in words, no regex."""
    data = _quickstart()
    data["job"]["name"] = name
    (error,) = _errors(tmp_path, data)
    assert error.startswith("$.job.name: ")
    assert "a name of 1 to 200 characters, each a letter, a digit, '_', '.' or '-'" in error
    assert "regex" not in error
    assert "\\w" not in error


def test_every_broken_rule_of_every_section_is_reported(tmp_path: Path) -> None:
    """Rules across fields: each broken one, in the graph and in two workloads, named."""
    data = _quickstart()
    data["graph"] = {"kind": "mtx", "src_column": "a"}
    data["workload"] = [{"kind": "khop", "sources": [1]}, {"kind": "pagerank", "sources": [1]}]
    assert _errors(tmp_path, data) == [
        "$.graph.path: kind 'mtx' needs a path to the file",
        "$.graph.src_column: only kind 'table' reads columns",
        "$.workload[0]: Object missing required field `k`",
        "$.workload[1].sources: pagerank takes no sources",
    ]


def test_missing_sections_are_each_named(tmp_path: Path) -> None:
    """A file with only [job]: both required sections named as missing."""
    assert _errors(tmp_path, {"job": {"name": "x"}}) == [
        "$: Object missing required field `graph`",
        "$: Object missing required field `workload`",
    ]


def test_a_file_with_hundreds_of_errors_reports_a_bounded_list(tmp_path: Path) -> None:
    """400 bad workloads: 50 errors named, then a line saying how many more."""
    data = _quickstart()
    data["workload"] = [{"kind": "pagerank", "tol": 5.0}] * 400
    errors = _errors(tmp_path, data)
    assert len(errors) == 51
    assert errors[49] == "$.workload[49].tol: Expected `float` <= 1.0"
    assert errors[50] == "... and 350 more error(s)"


#: Mutations of a valid job, one section each: (section, path inside it, value).
MUTATIONS: list[tuple[str, str, object]] = [
    ("job", "name", "a b"),
    ("job", "backend", "tpu"),
    ("job", "devices", [-1]),
    ("job", "nmae", "x"),
    ("graph", "scale", 0),
    ("graph", "kind", "mtx"),
    ("graph", "edge_factr", 3),
    ("graph", "seed", "seven"),
    ("workload.0", "readback", "all"),
    ("workload.0", "sources", {"random": 0}),
    ("workload.0", "sources", {"random": 5, "sed": 1}),
    ("workload.0", "kind", "khop"),
    ("workload.1", "damping", 2.0),
    ("workload.1", "sources", [1]),
    ("workload.1", "max_iters", 5),
    ("output", "format", "csv"),
    ("output", "commit_items", 0),
    ("output", "dri", "x"),
    ("batching", "max_batch", 4096),
    ("batching", "in_flight", "two"),
    ("limits", "retries", -1),
    ("limits", "item_timeout", 3),
    ("logging", "level", "verbose"),
    ("logging", "progress_interval_s", 0),
]


def _mutated(mutations: list[tuple[str, str, object]]) -> dict[str, Any]:
    data = _quickstart()
    for section, key, value in mutations:
        name, _, index = section.partition(".")
        table = data.setdefault(name, {})
        table = table[int(index)] if index else table
        table[key] = value
    return data


def _first_path(data: dict[str, Any]) -> str | None:
    """msgspec's own first error's path for ``data``, or None when it accepts it."""
    try:
        msgspec.convert(data, JobSpec)
    except msgspec.ValidationError as exc:
        text, _, where = str(exc).rpartition(" - at `")
        return where[:-1] if text else "$"
    return None


def test_random_sets_of_mistakes_report_each_mistake_as_it_is_reported_alone(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """Mistakes in different sections, several at once: exactly the errors each gives
    alone, and each alone names the path msgspec stops at."""
    alone: dict[int, list[str]] = {}
    for i, mutation in enumerate(MUTATIONS):
        first = _first_path(_mutated([mutation]))
        assert first is not None, mutation  # each mutation is refused by msgspec
        alone[i] = _errors(tmp_path, _mutated([mutation]))
        assert any(e.startswith((f"{first}:", f"{first}.")) for e in alone[i])
    sections = sorted({section for section, _, _ in MUTATIONS})
    for _ in range(60):
        chosen_sections = rng.choice(sections, size=int(rng.integers(2, 6)), replace=False)
        picks = [
            int(rng.choice([i for i, m in enumerate(MUTATIONS) if m[0] == section]))
            for section in chosen_sections
        ]
        together = _errors(tmp_path, _mutated([MUTATIONS[i] for i in picks]))
        assert sorted(together) == sorted(e for i in picks for e in alone[i])


class _Small(msgspec.Struct, forbid_unknown_fields=True, tag_field="type", tag="small"):
    size: Annotated[int, msgspec.Meta(ge=1)]


class _Large(msgspec.Struct, forbid_unknown_fields=True, tag_field="type", tag="large"):
    size: Annotated[int, msgspec.Meta(ge=100)]
    mode: Literal["fast", "slow"] = "fast"


class _Inner(msgspec.Struct, forbid_unknown_fields=True):
    code: Annotated[str, msgspec.Meta(pattern="^[A-Z]+$", description="capital letters only")]


class _Shape(msgspec.Struct, forbid_unknown_fields=True):
    parts: Annotated[list[_Small | _Large], msgspec.Meta(min_length=1)]
    inner: _Inner | None = None


def test_the_walk_follows_struct_types_it_was_not_written_for() -> None:
    """A made-up spec (tagged unions, a list, an optional struct): every error found."""
    document = {
        "parts": [
            {"type": "small", "size": 0},
            {"type": "large", "size": 5, "mode": "quick"},
            {"type": "huge"},
            {"size": 3},
            {"type": "large", "sise": 200},
        ],
        "inner": {"code": "abc"},
    }
    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.convert(document, _Shape)
    assert document_errors(document, _Shape, str(info.value)) == [
        "$.parts[0].size: Expected `int` >= 1",
        "$.parts[1].size: Expected `int` >= 100",
        "$.parts[1].mode: Invalid enum value 'quick'; expected one of 'fast', 'slow'",
        "$.parts[2].type: Invalid value 'huge'; expected one of 'small', 'large'",
        "$.parts[3]: Object missing required field `type`; expected one of 'small', 'large'",
        "$.parts[4]: Object contains unknown field `sise`; did you mean `size`?",
        "$.parts[4]: Object missing required field `size`",
        "$.inner.code: 'abc' is not capital letters only",
    ]
