"""tests/prewarmed.py: a console script forked from a server that has imported it answers as the script does:
the AWS CLI, and the project's own ``idemflow``, whose ``serve`` a reader stops with a signal."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import PROJECT_ROOT
from tests.prewarmed import IDEMFLOW_PRELOAD, prewarmed, prewarmed_aws

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
    "aws --version",  # its botocore's version too: awscli's vendored one, whatever a test imported first
    # The request read from stdin (its DelaySeconds refused by name: "soon" is only there), the region from
    # the command's own environment (the server's has none), the answer through a pipe read to its end (a
    # reader that stops early makes the CLI's "Broken pipe" a race, the real CLI's too).
    # (stdin a file: awscli opens file:///dev/stdin twice, and reads nothing the second time from a pipe)
    """set -o pipefail; R=$(mktemp); echo '{"QueueUrl": "q", "MessageBody": "b", "DelaySeconds": "soon"}' > $R; """
    "AWS_DEFAULT_REGION=eu-west-1 aws sqs send-message --cli-input-json file:///dev/stdin < $R 2>&1 | cat",
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
    assert "Error parsing parameter" not in answers[0].stdout + answers[0].stderr  # what it reads, it can read
    if "DelaySeconds" in command:
        assert "value: soon" in answers[0].stdout, answers[0]


def ask(address: Path, env: dict[str, str]) -> bytes:
    """What the server answers a launcher with ``env`` asking for ``aws --version`` (its output thrown away)."""
    with open(os.devnull, "r+b") as null, socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as server:
        server.connect(str(address))
        request = {"argv": ["--version"], "env": env, "cwd": "/", "fds": [0, 1, 2]}
        socket.send_fds(server, [json.dumps(request).encode()], [null.fileno()] * 3)
        answer = server.recv(64)
        return server.recv(64) if answer.startswith(b"pid ") else answer  # a fork's pid, then its exit code


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


@pytest.fixture(scope="module")
def idemflow(
    shells: tuple[dict[str, str], dict[str, str], Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The launcher of a prewarmed ``idemflow``, its server started with the real shell's environment."""
    real, _, _ = shells
    with prewarmed(tmp_path_factory.mktemp("idemflow"), real, "idemflow", IDEMFLOW_PRELOAD) as launcher:
        yield launcher


IDEMFLOW_COMMANDS = [
    "{idemflow}",  # no command: a usage error, exit code 2
    # The payload read from the shell's stdin, the region from the command's own environment.
    "echo 'not json' | AWS_DEFAULT_REGION=eu-west-1 {idemflow} start --endpoint-url http://127.0.0.1:9 "
    "--stack-name x --key k --payload-file /dev/stdin",
]


@pytest.mark.parametrize("command", IDEMFLOW_COMMANDS)
def test_an_idemflow_command_answers_with_the_real_ones_exit_code_stdout_and_stderr(
    shells: tuple[dict[str, str], dict[str, str], Path], idemflow: Path, command: str
) -> None:
    real, _, _ = shells
    answers = [
        subprocess.run(
            ["bash", "-c", command.format(idemflow=script)],
            env=real,
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        for script in (Path(sys.executable).parent / "idemflow", idemflow)
    ]

    assert [(a.returncode, a.stdout, a.stderr) for a in answers[1:]] == [
        (answers[0].returncode, answers[0].stdout, answers[0].stderr)
    ]
    assert answers[0].returncode != 0 and answers[0].stderr.startswith("idemflow: error: "), answers[0]


def test_a_terminated_serve_stops_as_the_real_one_does_and_its_port_closes(
    shells: tuple[dict[str, str], dict[str, str], Path], idemflow: Path
) -> None:
    real, _, _ = shells
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve = subprocess.Popen(
        [str(idemflow), "serve", "--port", str(port)],
        env=real,
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert serve.stdout is not None
        banner: list[str] = []
        for line in serve.stdout:  # until its last line: it is up
            banner.append(line)
            if line.startswith("Ctrl-C to stop."):
                break
    finally:
        serve.terminate()  # the launcher's: it sends it on to the forked serve
        rest, _ = serve.communicate(timeout=30)

    assert any(f":{port}" in line for line in banner), banner
    # What serve does on SIGTERM (idemflow/cli/app.py stops on it as on Ctrl-C): it says so, and exits 0.
    assert (serve.returncode, rest) == (0, "idemflow serve: stopping\n")
    with socket.socket() as client, pytest.raises(ConnectionRefusedError):
        client.connect(("127.0.0.1", port))  # the forked serve is gone, with its socket


SHARED_READS = """
import json
import botocore.loaders, botocore.session
from tests.prewarmed import WARMED_SERVICES, share_botocore_data

reads = []
load_file = botocore.loaders.JSONFileLoader.load_file
botocore.loaders.JSONFileLoader.load_file = lambda self, path: reads.append(path) or load_file(self, path)
share_botocore_data()
warmed, reads[:] = len(reads), []
keys = {"region_name": "us-east-1", "aws_access_key_id": "a", "aws_secret_access_key": "b"}
for service in WARMED_SERVICES:  # as a forked command makes its clients: a session of its own each
    botocore.session.Session().create_client(service, **keys)
after, reads[:] = list(reads), []
botocore.session.Session().create_client("lambda", **keys)
print(json.dumps([warmed, after, len(reads)]))
"""


def test_a_forked_commands_clients_parse_nothing_the_server_read_and_the_rest_as_a_new_interpreter_does() -> None:
    # In a new interpreter: the server's botocore is only what its script imports (this process shares its own).
    answer = subprocess.run(
        [sys.executable, "-c", SHARED_READS], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60
    )
    assert answer.returncode == 0, answer.stderr

    warmed, after, unwarmed = json.loads(answer.stdout)
    assert warmed > 0 and after == []  # a client of each warmed service: its session's loader had it all
    assert unwarmed > 0  # a service the server did not read: the command reads its model itself
