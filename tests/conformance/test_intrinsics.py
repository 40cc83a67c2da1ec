"""Intrinsic functions the product's definition uses, on edge inputs.

Sources: the Step Functions developer guide (intrinsic-functions), executions recorded on AWS in
LocalStack's AWS-validated snapshots (``LS``: tests/aws/services/stepfunctions/v2/intrinsic_functions/),
and, for hash values, the algorithms themselves (hashlib computes what FIPS 180-4 and RFC 1321 define).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from tests.conformance.harness import Run, Target
from tests.paths import PROJECT_ROOT


def _apply(target: Target, expression: str, value: Any) -> Run:
    definition = {
        "StartAt": "Apply",
        "States": {"Apply": {"Type": "Pass", "Parameters": {"out.$": expression}, "End": True}},
    }
    return target.run(definition, {"value": value})


def _out(target: Target, expression: str, value: Any) -> Any:
    run = _apply(target, expression, value)
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    return run.output["out"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # LS test_json_manipulation.py::test_json_to_string (recorded 09-02-2023): compact JSON.
        ({"Arg1": 1, "Arg2": []}, '{"Arg1":1,"Arg2":[]}'),
        ("HelloWorld", '"HelloWorld"'),
        (1.1, "1.1"),
        (None, "null"),
    ],
)
def test_json_to_string_writes_compact_json(target: Target, value: Any, expected: str) -> None:
    assert _out(target, "States.JsonToString($.value)", value) == expected


def test_json_to_string_writes_non_ascii_text_as_it_is(target: Target) -> None:
    # Not on record (no AWS recording has non-ASCII output). Inferred: Step Functions writes JSON with a
    # Java library whose default leaves non-ASCII characters as they are (the engine's `json-to-string` fix says why).
    # The product does not depend on the answer: idemflow.keys.check_input accepts only payloads that fit
    # the hash limit under both readings.
    assert _out(target, "States.JsonToString($.value)", {"name": "Zoë 東京 🚀"}) == '{"name":"Zoë 東京 🚀"}'


def test_json_to_string_escapes_quotes_and_backslashes(target: Target) -> None:
    # JSON (RFC 8259, section 7): a quotation mark and a reverse solidus must be escaped in a string.
    assert _out(target, "States.JsonToString($.value)", 'say "hi" \\ bye') == '"say \\"hi\\" \\\\ bye"'


@pytest.mark.parametrize(
    ("algorithm", "expected"),
    [
        # LS test_hash_calculations.py::test_hash (recorded 14-02-2023), input "input data": lowercase hex.
        ("MD5", "812f45842bc6d66ee14572ce20db8e86"),
        ("SHA-1", "aaff4a450a104cd177d28d18d74485e8cae074b7"),
    ],
)
def test_hash_is_lowercase_hex_as_recorded(target: Target, algorithm: str, expected: str) -> None:
    assert _out(target, f"States.Hash($.value, '{algorithm}')", "input data") == expected


@pytest.mark.parametrize("length", [0, 55, 56, 57, 64, 1000, 10_000])
def test_sha_256_of_any_length_up_to_the_limit(target: Target, length: int) -> None:
    # Docs, intrinsic-functions, States.Hash: "The data you provide must be an object string containing
    # 10,000 characters or less." Lengths around 56 bytes cross SHA-256's one-block padding boundary.
    text = ("0123456789abcdef" * 700)[:length]
    if length == 0:
        pytest.skip("an empty string: no AWS record of what States.Hash does with it")
    assert _out(target, "States.Hash($.value, 'SHA-256')", text) == hashlib.sha256(text.encode()).hexdigest()


def test_hash_over_the_limit_fails_the_execution(target: Target) -> None:
    # Docs: at most 10,000 characters. An intrinsic's failure is a States.Runtime error, which nothing
    # catches (test_errors.py), whose cause starts as AWS starts a States.Runtime cause (LS
    # scenarios/test_base_scenarios.py::test_catch_states_runtime, recorded 23-11-2023: "An error occurred
    # while executing the state 'Call' (entered at the event id #2). Invalid path ..."). The rest of AWS's
    # wording for an intrinsic is not on record: the engine names the function as the definition does, and a
    # user never sees the emulator's own class names.
    run = _apply(target, "States.Hash($.value, 'SHA-256')", "a" * 10_001)
    assert (run.status, run.error) == ("FAILED", "States.Runtime")
    assert str(run.cause).startswith("An error occurred while executing the state '"), run.cause
    assert "<class" not in str(run.cause) and "moto" not in str(run.cause)
    if target.embedded:
        assert "States.Hash" in str(run.cause) and "10000" in str(run.cause), run.cause


@pytest.mark.parametrize(
    ("text", "expected"),
    # LS test_json_manipulation.py::test_string_to_json (recorded 09-02-2023): blank text is null.
    [("", None), (" ", None), ("null", None), ("1.1", 1.1), ("true", True), ('"HelloWorld"', "HelloWorld")],
)
def test_string_to_json_as_recorded(target: Target, text: str, expected: Any) -> None:
    assert _out(target, "States.StringToJson($.value)", text) == expected


def test_format_inserts_strings_as_they_are(target: Target) -> None:
    # LS test_generic.py::test_format_1 (recorded 09-02-2023): strings are inserted as they are.
    assert _out(target, "States.Format('{}#{}', $.value, $.value)", "ab") == "ab#ab"


def test_math_add_of_integers(target: Target) -> None:
    # LS test_math_operations.py::test_math_add (recorded 13-09-2023): integer addition.
    definition = {
        "StartAt": "Add",
        "States": {"Add": {"Type": "Pass", "Parameters": {"out.$": "States.MathAdd($.value, 1)"}, "End": True}},
    }
    run = target.run(definition, {"value": 41})
    assert run.output == {"out": 42}


def test_uuid_is_a_version_4_uuid(target: Target) -> None:
    # Docs, States.UUID: "return a version 4 universally unique identifier (v4 UUID) generated using
    # random numbers"; the docs' example is lowercase 8-4-4-4-12.
    value = _out(target, "States.UUID()", None)
    assert len(value) == 36 and value[14] == "4" and json.dumps(value)


@pytest.mark.parametrize(
    ("text", "delimiters", "expected"),
    # LS test_string_operations.py::test_string_split (recorded 05-12-2024), the delimiters read from the
    # input: each of their characters splits (a line break among them), and empty pieces are dropped.
    [
        (" ", ",", [" "]),
        (" , ", ",", [" ", " "]),
        (", , ,", ",", [" ", " "]),
        (",,,,", ",", []),
        ("1,2,3,4,5", ",", ["1", "2", "3", "4", "5"]),
        ("This.is+a,test=string", ".+,=", ["This", "is", "a", "test", "string"]),
        ("split on T and \nnew line", "T\n", ["split on ", " and ", "new line"]),
    ],
)
def test_string_split_as_recorded(target: Target, text: str, delimiters: str, expected: list[str]) -> None:
    definition = {
        "StartAt": "Split",
        "States": {"Split": {"Type": "Pass", "Parameters": {"out.$": "States.StringSplit($.text, $.by)"}, "End": True}},
    }
    run = target.run(definition, {"text": text, "by": delimiters})
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    assert run.output == {"out": expected}


def test_a_line_break_in_an_intrinsics_text_splits_as_recorded(target: Target) -> None:
    # LS test_generic.py::test_escape_sequence (recorded 30-11-2023): the definition's JSON
    # "States.StringSplit('Hello\\nWorld', '\\n')" holds a line feed in each quoted text, and splits.
    assert _out(target, "States.StringSplit('Hello\nWorld', '\n')", None) == ["Hello", "World"]


def _intake_first_line() -> str:
    """The intake's first line of a cause (statemachine/intake.asl.json, the dead letter's failure), on $.value."""
    definition = json.loads((PROJECT_ROOT / "statemachine" / "intake.asl.json").read_text())
    states = definition["States"]["Deliver"]["ItemProcessor"]["States"]
    expression = states["BodyAsJson"]["Parameters"]["failure"]["Cause.$"]
    assert expression.count("$.failure.Cause") == 1, expression
    return str(expression).replace("$.failure.Cause", "$.value")


# From the recorded facts above: each character of the delimiters splits, empty pieces are dropped, and a
# line break may be written in an intrinsic's quoted text; the text after the cause is the first piece of a
# cause with no line at all.
FIRST_LINE = _intake_first_line()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("card declined", "card declined"),
        ("1 validation error for Order\namount\n  Input should be positive", "1 validation error for Order"),
        ("\n\r\nfirst after blank lines\r\nsecond", "first after blank lines"),
        ("ends with a carriage return\rthen more", "ends with a carriage return"),
        ("", "(no message)"),
        ("\n", "(no message)"),
    ],
)
def test_the_first_line_of_a_cause(target: Target, text: str, expected: str) -> None:
    assert _out(target, FIRST_LINE, text) == expected
