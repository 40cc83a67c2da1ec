"""The doors' descriptions (idemflow/cli/doors.py): what serve, the demo and the costs read of each."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from idemflow.cli import demo, doors


def test_each_door_is_described_once_with_its_opening_parameter() -> None:
    names = [door.name for door in doors.DOORS]
    assert len(set(names)) == len(names)
    assert all(door.parameter in door.opens for door in doors.DOORS if door.opens)
    assert [door.cost for door in doors.DOORS if door.cost] == [
        "queue message",
        "topic message",
        "event",
        "stream record",
        "table item",
    ]


def test_the_demo_opens_the_doors_it_shows_as_their_descriptions_say() -> None:
    assert [door.name for door in demo.DEMOED] == ["HTTP", "queue", "topic"]
    assert demo.DOORS_OVERRIDES == {
        "InProgressPollSeconds": "1",
        "InProgressMaxPolls": "30",
        "HttpFrontDoor": "true",
        "WorkflowType": "EXPRESS",
        "QueueFrontDoor": "true",
        "QueueVisibilityTimeout": "0",
        "TopicFrontDoor": "true",
    }
    assert demo.STEPS == 10


def test_a_keys_deliveries_are_shown_the_run_first_whatever_order_they_listed_in() -> None:
    run = {"sourceId": "b", "replayed": False, "outcome": "COMPLETED"}
    replay = {"sourceId": "a", "replayed": True, "outcome": "COMPLETED"}
    assert doors.in_order([replay, run]) == doors.in_order([run, replay]) == [run, replay]
    again = {"sourceId": "0", "replayed": True, "outcome": "COMPLETED"}
    assert doors.in_order([replay, again, run]) == [run, again, replay]


def test_serves_lines_name_the_venvs_scripts_unless_path_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # README: commands run from the project's root with the virtual environment's scripts, written
    # `.venv/bin/aws`: a line serve prints must run as pasted without an activated virtual environment.
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "aws"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.chdir(tmp_path)

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert doors.script("aws") == ".venv/bin/aws"  # not activated: the script, from the project's root
    assert doors.script("idemflow") == "idemflow"  # none beside the interpreter: installed elsewhere

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert doors.script("aws") == str(bin_dir / "aws")  # elsewhere: its whole path

    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert doors.script("aws") == "aws"  # activated: PATH finds this very script


def test_serves_http_lines_sign_with_curl_for_aws_iam_and_say_plainly_when_the_door_is_open() -> None:
    served = doors.Served("http://127.0.0.1:8083", "eu-west-1", {"a": 1}, "idempotencyKey", True)
    url = "http://127.0.0.1:8083/restapis/x/v1/_user_request_/requests"
    (signed,) = doors.HTTP.hints([("POST", url, "AWS_IAM")], served)
    (open_door,) = doors.HTTP.hints([("POST", url, "NONE")], served)
    assert '--aws-sigv4 "aws:amz:eu-west-1:execute-api" --user local:local ' in signed
    assert "--aws-sigv4" not in open_door and "--user" not in open_door


def test_serves_banner_names_the_doors_authorization() -> None:
    url = "http://127.0.0.1:8083/restapis/x/v1/_user_request_/requests"

    class Gateway:
        def __init__(self, authorization: str) -> None:
            self.authorization = authorization

        def authorizations(self) -> dict[tuple[str, str], str]:
            return {("POST", url): self.authorization}

    class Engine:
        def __init__(self, authorization: str) -> None:
            self.gateway = Gateway(authorization)

        def endpoints(self) -> list[tuple[str, str]]:
            return [("POST", url)]

        def service(self, kind: type) -> Gateway:
            return self.gateway

    (closed,) = doors.HTTP.listed(Engine("AWS_IAM"))  # type: ignore[arg-type]
    (open_door,) = doors.HTTP.listed(Engine("NONE"))  # type: ignore[arg-type]
    assert closed.text.endswith(
        "(AWS_IAM: SigV4-signed callers only; the engine's own user signs with the key local/local)"
    )
    assert open_door.text.endswith("(NONE: not signed, anyone who has the URL can call it)")
    assert (closed.target, open_door.target) == (("POST", url, "AWS_IAM"), ("POST", url, "NONE"))
