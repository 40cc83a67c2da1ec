"""tests/prewarmed_aws.py: the AWS CLI forked from a server that has imported it answers as the AWS CLI does."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.prewarmed_aws import prewarmed_aws

pytestmark = pytest.mark.functional


@pytest.fixture(scope="module")
def shells(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], dict[str, str], Path]]:
    """A shell's environment with the real AWS CLI first on PATH, the same with the launcher first, and the
    server's socket."""
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTEST_"))}
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    folder = tmp_path_factory.mktemp("prewarmed")
    with prewarmed_aws(folder, env) as launched:
        yield env, launched, folder / "aws.sock"


COMMANDS = [
    "aws --version",
    "aws no-such-command",  # a usage error: exit 2, the usage and every command on stderr
    # A refused connection, tried once: exit 255 and botocore's message; the region and credentials from the
    # command's own environment, not the server's.
    "AWS_MAX_ATTEMPTS=1 AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b AWS_DEFAULT_REGION=eu-west-1 "
    "aws --endpoint-url http://127.0.0.1:9 sqs list-queues",
    # stdin read through a file:// parameter, and output through a pipe (one read to its end: a reader that
    # stops early makes the CLI's "Broken pipe" a race, the real CLI's too)
    "echo body | aws sqs send-message --region us-east-1 --queue-url q --message-body file:///dev/stdin "
    "--generate-cli-skeleton input | cat",
    "cd / && aws configure list",  # the folder and HOME of the command: no config file there
    # A parameter read from a process substitution: /dev/fd/63 is the launcher's, handed over with 0, 1 and 2.
    "AWS_MAX_ATTEMPTS=1 AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b aws --region us-east-1 "
    "--endpoint-url http://127.0.0.1:9 kinesis put-record --stream-name s --partition-key p "
    "--data fileb://<(printf hello)",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_answers_with_the_real_clis_exit_code_stdout_and_stderr(
    shells: tuple[dict[str, str], dict[str, str], Path], command: str
) -> None:
    real, launched, _ = shells
    answers = [
        subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60)
        for env in (real, launched)
    ]

    assert [(a.returncode, a.stdout, a.stderr) for a in answers[1:]] == [
        (answers[0].returncode, answers[0].stdout, answers[0].stderr)
    ]
    assert answers[0].stdout or answers[0].stderr  # each says something to compare


def ask(address: Path, env: dict[str, str]) -> bytes:
    """What the server answers a launcher with ``env`` asking for ``aws --version`` (its output thrown away)."""
    with open(os.devnull, "r+b") as null, socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as server:
        server.connect(str(address))
        request = {"argv": ["--version"], "env": env, "cwd": "/", "fds": [0, 1, 2]}
        socket.send_fds(server, [json.dumps(request).encode()], [null.fileno()] * 3)
        return server.recv(64)


def test_a_command_whose_environment_differs_on_what_the_import_read_is_left_to_a_new_interpreter(
    shells: tuple[dict[str, str], dict[str, str], Path], tmp_path: Path
) -> None:
    real, _, address = shells

    assert ask(address, real) == b"0"  # forked: its exit code
    # awscli's import reads HOME (its cache folders are class attributes), AWS_DATA_PATH and the locale.
    assert ask(address, {**real, "HOME": str(tmp_path)}) == b"new"
    assert ask(address, {**real, "AWS_DATA_PATH": str(tmp_path)}) == b"new"
    assert ask(address, {**real, "PYTHONHASHSEED": "7"}) == b"new"  # read by the interpreter at its start
    assert ask(address, {**real, "AWS_PROFILE": "other"}) == b"0"  # read later, by the command itself


def test_the_launcher_runs_the_real_cli_when_the_server_says_new(
    shells: tuple[dict[str, str], dict[str, str], Path], tmp_path: Path
) -> None:
    _, launched, _ = shells
    other_home = {**launched, "HOME": str(tmp_path)}

    answer = subprocess.run(["bash", "-c", "aws --version"], env=other_home, capture_output=True, text=True)

    assert answer.returncode == 0 and answer.stdout.startswith("aws-cli/"), answer
