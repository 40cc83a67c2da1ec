"""The CLI's arguments and input errors: no engine, no network (the client's helpers: test_client.py).

Every input error here is caught before an engine starts or a request is sent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from idemflow import cli
from idemflow.cli import inputs
from idemflow.contract import MAX_KEY_LENGTH, MAX_PAYLOAD_JSON_CHARS, PAYLOAD_TOO_LARGE, WorkflowError, sample_payload
from tests.paths import TEMPLATE_PATH

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:idemflow-IdempotentStateMachine"
ENDPOINT = ["--endpoint-url", "http://127.0.0.1:9", "--state-machine-arn", ARN]  # never reached
PAYLOAD = sample_payload(TEMPLATE_PATH)


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("idemflow: error: ")
    assert "Traceback" not in err
    return lines[0]


# -- --help ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("command", "options"),
    [
        (
            "run",
            [
                "--key",
                "--payload",
                "--payload-file",
                "--repeat",
                "--concurrency",
                "--json",
                "--wait-time-scale",
                "--parameter-overrides",
                "--template",
            ],
        ),
        ("serve", ["--host", "--port", "--region", "--wait-time-scale", "--parameter-overrides", "--template"]),
        (
            "start",
            [
                "--endpoint-url",
                "--region",
                "--state-machine-arn",
                "--stack-name",
                "--key",
                "--payload",
                "--payload-file",
                "--name",
                "--fresh",
                "--wait",
                "--sync",
                "--json",
            ],
        ),
        ("record", ["--endpoint-url", "--table", "--scope", "--key", "--json"]),
        ("history", ["--endpoint-url", "--execution-arn"]),
        ("demo", ["--timeout"]),
        ("diagram", ["--write"]),
    ],
)
def test_every_command_has_help_naming_its_options(
    command: str, options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert f"usage: idemflow {command}" in text
    for option in options:
        assert option in text, f"{command} --help does not mention {option}"


def test_every_option_of_every_command_says_what_it_is() -> None:
    import argparse

    from idemflow.cli.parser import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    silent = [
        f"{name} {action.option_strings[0]}"
        for name, parser in commands.choices.items()
        for action in parser._actions
        if action.option_strings and not action.help
    ]
    assert silent == []


def test_serve_help_names_every_service_the_engine_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from idemflow.cli.parser import SERVED
    from idemflow.engine.catalog import SERVICES

    assert set(SERVED) == {service.name for service in SERVICES}
    assert cli.main(["serve", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(f" {shown}," in text or f" {shown} on one endpoint" in text for shown in SERVED.values())


def test_top_level_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    for command in ("run", "serve", "start", "record", "history", "demo", "diagram"):
        assert command in text


def test_run_help_states_the_demo_wait_time_scale(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["run", "--help"])
    assert "default 0.1" in " ".join(capsys.readouterr().out.split())


def test_diagram_prints_the_block_of_the_protocol_page(capsys: pytest.CaptureFixture[str]) -> None:
    from idemflow import diagram

    assert cli.main(["diagram"]) == 0
    assert capsys.readouterr().out == diagram.diagram_block() + "\n"


def test_diagram_write_replaces_the_block_in_docs_protocol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from idemflow import diagram

    page = tmp_path / "docs" / "protocol.md"
    page.parent.mkdir()
    page.write_text(f"# The protocol\n\n{diagram.BEGIN}\nstale\n{diagram.END}\n\nafter\n")
    monkeypatch.chdir(tmp_path)

    assert cli.main(["diagram", "--write"]) == 0
    assert capsys.readouterr().out == "docs/protocol.md: diagram updated\n"
    assert page.read_text() == f"# The protocol\n\n{diagram.diagram_block()}\n\nafter\n"
    assert cli.main(["diagram", "--write"]) == 0
    assert capsys.readouterr().out == "docs/protocol.md: diagram already up to date\n"


def test_the_default_payload_is_the_sample_event_beside_the_template(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "event.json").write_text('{"idempotencyKey": "k", "payload": {"to": "x"}}')
    assert cli.sample_payload(tmp_path / "template.yaml") == {"to": "x"}


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (None, "no sample event at"),
        ("{not json", "cannot be read as JSON"),
        ('{"idempotencyKey": "k"}', "has no payload"),
    ],
)
def test_a_missing_or_broken_sample_event_is_a_usage_error(tmp_path: Path, event: str | None, message: str) -> None:
    if event is not None:
        (tmp_path / "events").mkdir()
        (tmp_path / "events" / "event.json").write_text(event)
    with pytest.raises(cli.CliError, match=message) as raised:
        cli.sample_payload(tmp_path / "template.yaml")
    assert raised.value.code == 2


# -- usage and input errors: exit 2, one line ----------------------------------------------------------------
def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "command" in one_error_line(capsys).lower()


def test_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["start", "--key", "k", "--bogus"]) == 2
    assert "--bogus" in one_error_line(capsys)


@pytest.mark.parametrize("command", [["start", *ENDPOINT], ["run"]])
def test_payload_that_is_not_json_exits_2_naming_the_problem(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([*command, "--key", "k", "--payload", "{amount: 1"]) == 2
    line = one_error_line(capsys)
    assert "--payload is not valid JSON" in line and "line 1, column 2" in line


@pytest.mark.parametrize("option", ["--payload-file", "--payload"])
def test_missing_payload_file_exits_2_naming_the_file(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.json"
    value = str(missing) if option == "--payload-file" else f"@{missing}"
    assert cli.main(["start", *ENDPOINT, "--key", "k", option, value]) == 2
    line = one_error_line(capsys)
    assert "no such file" in line and str(missing) in line


def test_payload_file_that_is_not_json_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"amount": }')
    assert cli.main(["run", "--key", "k", "--payload-file", str(bad)]) == 2
    assert str(bad) in one_error_line(capsys)


@pytest.mark.parametrize(
    "command", [["start", *ENDPOINT], ["run"], ["record", "--endpoint-url", "http://127.0.0.1:9", "--table", "t"]]
)
def test_key_too_long_exits_2_before_anything_starts(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*command, "--key", "k" * (MAX_KEY_LENGTH + 1)]) == 2
    line = one_error_line(capsys)
    assert WorkflowError.KEY_INVALID in line and f"1 to {MAX_KEY_LENGTH} characters" in line


def test_empty_key_and_null_payload_are_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["start", *ENDPOINT, "--key", ""]) == 2
    assert WorkflowError.KEY_INVALID in one_error_line(capsys)
    assert cli.main(["run", "--key", ""]) == 2  # refused like start, not run with a random key
    assert WorkflowError.KEY_INVALID in one_error_line(capsys)
    assert cli.main(["start", *ENDPOINT, "--key", "k", "--payload", "null"]) == 2
    assert WorkflowError.PAYLOAD_INVALID in one_error_line(capsys)


def test_payload_too_large_to_fingerprint_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--key", "k", "--payload", json.dumps({"note": "x" * MAX_PAYLOAD_JSON_CHARS})]) == 2
    assert one_error_line(capsys).startswith(f"idemflow: error: {PAYLOAD_TOO_LARGE}: ")  # the doors' name too


def test_payload_and_payload_file_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["start", *ENDPOINT, "--key", "k", "--payload", "{}", "--payload-file", "x.json"]) == 2
    assert "not allowed with" in one_error_line(capsys)


def test_parameter_override_without_equals_sign_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--key", "k", "--parameter-overrides", "InProgressMaxPolls"]) == 2
    assert "Key=Value" in one_error_line(capsys)


def test_missing_template_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--key", "k", "--template", str(tmp_path / "template.yaml")]) == 2
    assert "--template: no such file" in one_error_line(capsys)


def test_start_without_a_state_machine_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["start", "--endpoint-url", "http://127.0.0.1:9", "--key", "k"]) == 2
    assert "--state-machine-arn" in one_error_line(capsys)


def test_invalid_execution_name_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["start", *ENDPOINT, "--key", "k", "--name", "has spaces"]) == 2
    assert "execution name" in one_error_line(capsys)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["serve", "--port", "70000"], "--port"),
        (["serve", "--port", "-1"], "--port"),
        (["run", "--wait-time-scale", "-1"], "--wait-time-scale"),
        (["run", "--wait-time-scale", "nan"], "--wait-time-scale"),
    ],
)
def test_out_of_range_numbers_exit_2(argv: list[str], named: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    assert named in one_error_line(capsys)


def test_repeat_below_one_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--key", "k", "--repeat", "0"]) == 2
    assert "--repeat" in one_error_line(capsys)


def test_payload_argument_forms(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(PAYLOAD))
    parser = cli.build_parser()
    for argv in (["--payload", json.dumps(PAYLOAD)], ["--payload", f"@{path}"], ["--payload-file", str(path)], []):
        args = parser.parse_args(["start", "--key", "k", *argv])
        assert inputs.read_payload(args, TEMPLATE_PATH) == PAYLOAD


def test_start_on_aws_without_a_region_exits_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    assert cli.main(["start", "--state-machine-arn", ARN, "--key", "k"]) == 2
    assert "no AWS region" in one_error_line(capsys)


@pytest.mark.parametrize("command", [["start", "--state-machine-arn", "arn:x"], ["record", "--table", "t"]])
@pytest.mark.parametrize("url", ["not-a-url", "127.0.0.1:8083", "ftp://127.0.0.1"])
def test_an_endpoint_that_is_not_a_url_exits_2_in_one_line(
    command: list[str], url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([*command, "--endpoint-url", url, "--key", "k"]) == 2
    line = one_error_line(capsys)
    assert f"{url!r} is not a URL: give http://HOST:PORT" in line and "Traceback" not in line


def test_a_lambda_errors_cause_is_shown_by_its_message_without_the_stack_trace() -> None:
    from idemflow.cli.output import readable_cause

    cause = json.dumps({"errorType": "E", "errorMessage": "payload must be a JSON object", "stackTrace": ["x"]})
    assert readable_cause(cause) == "payload must be a JSON object"
    assert readable_cause("the condition failed") == "the condition failed"
    assert readable_cause('{"not": "a lambda error"}') == '{"not": "a lambda error"}'
    assert readable_cause(None) is None


def test_another_moto_is_refused_in_one_line_before_moto_is_imported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As under a Python whose moto is not the pinned one (moto 5.2.1 fails to import the engine's server).
    from idemflow.engine.core import moto_version

    monkeypatch.setattr(moto_version, "installed_moto", lambda: "5.2.1")
    # ... and whose internals the engine's modules cannot import: None in sys.modules fails the import.
    monkeypatch.setitem(sys.modules, "idemflow.engine.engine", None)

    assert cli.main(["run", "--key", "k"]) == 1
    line = one_error_line(capsys)
    assert "moto 5.2.1 is installed: install the pinned version" in line


# -- serve's start hint ----------------------------------------------------------------------------------------
def test_serves_start_hint_names_a_served_templates_own_payload_as_start_reads_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shlex

    from idemflow.cli.commands import start_payload
    from idemflow.cli.parser import build_parser

    monkeypatch.chdir(tmp_path)  # no ./template.yaml: start sends the packaged workflow's sample payload
    assert start_payload(PAYLOAD) == ""  # what start sends already
    own = {"example": True, "note": "it's"}  # a project's own, a quote in it
    hint = start_payload(own)
    args = build_parser().parse_args(["start", "--key", "k", *shlex.split(hint)])
    assert inputs.read_payload(args, TEMPLATE_PATH) == own
