"""Each definition parsed once (``parse_cache.py``): ``parse-cache``, a speedup. For each change, moto 5.2.5's
behaviour without it and the engine's with it."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from idemflow.engine import registry
from idemflow.engine.services.stepfunctions.clock import recorded_delays
from idemflow.engine.services.stepfunctions.executions import wait_for_execution
from idemflow.engine.services.stepfunctions.parse_cache import parse_cache_info
from tests.unit.changes.machines import (
    create_state_machine,
    failing_parallel,
    run,
    start,
)

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------------------------------------
# parse-cache (a speedup)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    calls: list[str] = []
    original = AmazonStateLanguageParser.parse

    def counting_parse(definition: str) -> Any:
        calls.append(definition)
        return original(definition)

    monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(counting_parse))
    return calls


def _unique_pass_machine() -> dict[str, Any]:
    # A fresh definition text per test, so that whatever an earlier test cached does not count.
    return {
        "Comment": uuid.uuid4().hex,
        "StartAt": "A",
        "States": {
            "A": {"Type": "Pass", "Parameters": {"n.$": "States.MathAdd($.n, 1)"}, "Next": "B"},
            "B": {"Type": "Pass", "Parameters": {"n.$": "States.MathAdd($.n, 1)"}, "End": True},
        },
    }


def test_unpatched_moto_5_2_5_parses_the_definition_for_every_execution(
    unpatched: None, sfn: Any, parse_calls: list[str]
) -> None:
    arn = create_state_machine(sfn, _unique_pass_machine())
    parse_calls.clear()  # create_state_machine parses once to validate

    for n in range(5):
        assert json.loads(run(sfn, arn, {"n": n})["output"]) == {"n": n + 2}

    assert len(parse_calls) == 5


def test_patched_parses_each_definition_once(patched: None, sfn: Any, parse_calls: list[str]) -> None:
    before = parse_cache_info()
    arn = create_state_machine(sfn, _unique_pass_machine())  # validated: parsed once, and kept

    for n in range(5):
        assert json.loads(run(sfn, arn, {"n": n})["output"]) == {"n": n + 2}

    assert len(parse_calls) == 1
    after = parse_cache_info()
    assert (after["misses"] - before["misses"], after["hits"] - before["hits"]) == (1, 5)


def test_patched_a_definition_parsed_for_one_engine_serves_the_next(sfn: Any, parse_calls: list[str]) -> None:
    # Removed and installed again (one engine stopped, the next started in the same process), the change
    # keeps what it parsed: the same text is not parsed again.
    definition = _unique_pass_machine()
    registry.apply()
    try:
        create_state_machine(sfn, definition)
    finally:
        registry.remove()
    assert len(parse_calls) == 1
    registry.apply()
    try:
        arn = create_state_machine(sfn, definition)
        assert json.loads(run(sfn, arn, {"n": 1})["output"]) == {"n": 3}
    finally:
        registry.remove()

    assert len(parse_calls) == 1


@pytest.fixture
def program_dir(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Programs kept in a folder of the test's own."""
    from idemflow.engine.services.stepfunctions import parse_cache

    monkeypatch.setenv(parse_cache.CACHE_DIR_VARIABLE, str(tmp_path))
    folder = parse_cache.program_cache_dir()
    assert folder is not None and folder.is_relative_to(tmp_path)
    return folder


def _forget_programs_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a new process starts: nothing parsed in memory (what other tests parsed stays theirs)."""
    import collections

    from idemflow.engine.services.stepfunctions import parse_cache

    monkeypatch.setattr(parse_cache, "_program_cache", collections.OrderedDict())


def test_patched_a_program_kept_on_disk_serves_a_process_that_never_parsed_it(
    patched: None, sfn: Any, parse_calls: list[str], program_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition = _unique_pass_machine()
    arn = create_state_machine(sfn, definition)
    first = run(sfn, arn, {"n": 1})
    assert len(parse_calls) == 1 and len(list(program_dir.glob("*.pickle"))) == 1

    _forget_programs_in_memory(monkeypatch)
    before = parse_cache_info()
    arn = create_state_machine(sfn, definition)
    second = run(sfn, arn, {"n": 1})

    assert len(parse_calls) == 1, "parsed again instead of loaded"
    after = parse_cache_info()
    assert (after["loaded"] - before["loaded"], after["misses"] - before["misses"]) == (1, 1)
    assert json.loads(second["output"]) == json.loads(first["output"]) == {"n": 3}


def test_patched_a_kept_program_that_does_not_load_is_parsed_again_and_rewritten(
    patched: None, sfn: Any, parse_calls: list[str], program_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition = _unique_pass_machine()
    create_state_machine(sfn, definition)
    (kept,) = program_dir.glob("*.pickle")
    kept.write_bytes(kept.read_bytes()[:100])  # cut short, as by a full disk

    _forget_programs_in_memory(monkeypatch)
    arn = create_state_machine(sfn, definition)

    assert len(parse_calls) == 2
    assert json.loads(run(sfn, arn, {"n": 5})["output"]) == {"n": 7}
    _forget_programs_in_memory(monkeypatch)
    create_state_machine(sfn, definition)
    assert len(parse_calls) == 2, "the rewritten program did not load"


def test_patched_an_empty_cache_dir_variable_keeps_nothing_on_disk(
    patched: None, sfn: Any, parse_calls: list[str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from idemflow.engine.services.stepfunctions import parse_cache

    monkeypatch.setenv(parse_cache.CACHE_DIR_VARIABLE, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    definition = _unique_pass_machine()
    create_state_machine(sfn, definition)
    _forget_programs_in_memory(monkeypatch)
    create_state_machine(sfn, definition)

    assert parse_cache.program_cache_dir() is None
    assert len(parse_calls) == 2 and not list(tmp_path.rglob("*.pickle"))


def test_patched_the_folder_keeps_only_the_newest_programs(
    patched: None, sfn: Any, program_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from idemflow.engine.services.stepfunctions import parse_cache

    monkeypatch.setattr(parse_cache, "MAX_KEPT_PROGRAMS", 2)
    names = []
    for n in range(4):
        definition = json.dumps(_unique_pass_machine())
        create_state_machine(sfn, json.loads(definition))
        names.append(parse_cache._program_file(definition).name)  # type: ignore[union-attr]
        os.utime(program_dir / names[-1], ns=(n * 10**9, n * 10**9))  # their order, whatever the clock's grain

    assert sorted(f.name for f in program_dir.glob("*")) == sorted(names[2:])


def test_patched_the_folder_keeps_the_programs_most_recently_used_not_written(
    patched: None, sfn: Any, program_dir: Any, parse_calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The project's definition is written once and loaded by every process after it; the definitions a run
    # makes of its own are written later. Kept by write time, it was the first pushed out.
    from idemflow.engine.services.stepfunctions import parse_cache

    monkeypatch.setattr(parse_cache, "MAX_KEPT_PROGRAMS", 2)
    used, other, new = (json.dumps(_unique_pass_machine()) for _ in range(3))
    for n, definition in enumerate((used, other)):
        create_state_machine(sfn, json.loads(definition))
        os.utime(parse_cache._program_file(definition), ns=(n * 10**9, n * 10**9))  # type: ignore[arg-type]

    _forget_programs_in_memory(monkeypatch)  # a later process loads `used` from the folder
    create_state_machine(sfn, json.loads(used))
    assert len(parse_calls) == 2, "loaded, not parsed"
    create_state_machine(sfn, json.loads(new))  # a third program: one of the first two goes

    kept = {f.name for f in program_dir.glob("*")}
    assert kept == {parse_cache._program_file(d).name for d in (used, new)}  # type: ignore[union-attr]


def test_patched_an_invalid_definition_is_refused_as_moto_refuses_it(patched: None, sfn: Any) -> None:
    with pytest.raises(ClientError) as refused:
        create_state_machine(sfn, {"StartAt": "Nowhere", "States": {"A": {"Type": "Unknown", "End": True}}})

    # What moto 5.2.5 answers without the change too (its InvalidDefinition, with an empty code): 400 and
    # the parser's message.
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert refused.value.response["Error"]["Message"].startswith("ASLParserException")


def test_patched_cached_program_is_safe_for_concurrent_executions(patched: None, sfn: Any) -> None:
    """One parsed program, many executions at once: Map, Parallel, Retry counters stay per execution."""
    definition = {
        "Comment": uuid.uuid4().hex,
        "StartAt": "Double",
        "States": {
            "Double": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "Iterator": {
                    "StartAt": "Inc",
                    "States": {"Inc": {"Type": "Pass", "Parameters": {"v.$": "States.MathAdd($, $)"}, "End": True}},
                },
                "ResultPath": "$.doubled",
                "Next": "Flaky",
            },
            **failing_parallel({"IntervalSeconds": 1, "BackoffRate": 3, "MaxAttempts": 2}, then="Done"),
            "Done": {"Type": "Pass", "End": True},
        },
    }
    arn = create_state_machine(sfn, definition)

    executions = {start(sfn, arn, {"items": list(range(i, i + 3))}): i for i in range(12)}

    for execution_arn, i in executions.items():
        assert wait_for_execution(execution_arn, 20)
        described = sfn.describe_execution(executionArn=execution_arn)
        assert described["status"] == "SUCCEEDED"
        output = json.loads(described["output"])
        assert output["doubled"] == [{"v": 2 * v} for v in range(i, i + 3)]
        assert output["error"]["Error"] == "Boom"
        retries = [(d.state_name, d.requested_seconds) for d in recorded_delays(execution_arn)]
        assert retries == [("Flaky", 1.0), ("Flaky", 3.0)]  # each execution its own attempt counter
