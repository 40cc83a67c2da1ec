"""The command line: every command's arguments, their help, and the checks argparse runs on them.

A usage error raises :class:`~idemflow.cli.errors.CliError` (exit status 2) instead of exiting.
"""

from __future__ import annotations

import argparse
import urllib.parse
from typing import Any, NoReturn

from idemflow.cli.errors import EXIT_USAGE, PROG, CliError
from idemflow.contract import SAMPLE_EVENT
from idemflow.engine.state import DEFAULT_RETAINED_EXECUTIONS
from idemflow.workflow import default_template

DESCRIPTION = "``idemflow``: run the idempotent workflow locally, serve it, or drive a deployed one."
SERVED = {
    "stepfunctions": "Step Functions",
    "dynamodb": "DynamoDB",
    "lambda": "Lambda",
    "sqs": "SQS",
    "sns": "SNS",
    "kinesis": "Kinesis",
    "s3": "S3",
    "events": "EventBridge",
    "pipes": "EventBridge Pipes",
    "apigateway": "API Gateway",
    "cloudformation": "CloudFormation",
    "iam": "IAM",
    "logs": "CloudWatch Logs",
}
"""The services ``serve`` answers on its endpoint, by the engine's name for each (idemflow.engine.catalog.SERVICES,
not imported here: the CLI parses its arguments without loading the engine), as its help names them."""
DEFAULT_PORT = 8083  # Step Functions Local's


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see: {self.prog} --help)", EXIT_USAGE)


# -- argument types -----------------------------------------------------------------------------------
def _scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _retained(text: str) -> int | None:
    """A count of executions to keep, or ``all`` (None: no bound)."""
    if text == "all":
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a count of executions (0 or more) or 'all', got {text!r}")
    return int(text)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {text!r}")
    return int(text)


# -- options shared by several commands -----------------------------------------------------------------
def _add_payload(parser: argparse.ArgumentParser, default: str) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--payload",
        metavar="JSON",
        help=f"the payload as inline JSON, or @FILE to read it from a file (default: the payload of {default})",
    )
    group.add_argument("--payload-file", metavar="PATH", help="read the payload's JSON from PATH")


def _add_deploy(parser: argparse.ArgumentParser, wait_time_scale: float, scale_help: str) -> None:
    parser.add_argument(
        "--template",
        default=str(default_template()),
        metavar="PATH",
        help="the SAM template to deploy (default: ./template.yaml, as sam looks for it, else the packaged workflow)",
    )
    parser.add_argument(
        "--parameter-overrides",
        nargs="+",
        metavar="KEY=VALUE",
        help="template parameters, as for sam deploy (e.g. InProgressMaxPolls=30 WorkflowType=EXPRESS)",
    )
    parser.add_argument("--wait-time-scale", type=_scale, default=wait_time_scale, metavar="SCALE", help=scale_help)
    parser.add_argument(
        "--workflow",
        metavar="PATH",
        help="which workflow to act on when the template holds several: a nested application's logical id "
        "(App, or App.Inner), or '' for the template's own (default: the only one)",
    )
    parser.add_argument(
        "--retain-executions",
        type=_retained,
        default=DEFAULT_RETAINED_EXECUTIONS,
        metavar="N",
        help=f"keep the N most recently closed executions, and let older ones go as AWS does after 90 days: "
        f"ExecutionDoesNotExist, their names free (default {DEFAULT_RETAINED_EXECUTIONS}; 'all' keeps every one; "
        "StartSyncExecution's are never kept, as on AWS)",
    )
    parser.add_argument(
        "--retain-for",
        type=_scale,
        default=None,
        metavar="SECONDS",
        help="also let a closed Standard execution go SECONDS after it closed (default: no age limit)",
    )
    parser.add_argument(
        "--no-iam",
        action="store_true",
        help="run every call whatever the roles allow (default: each call of a function, state machine or pipe is "
        "decided against its role's policies, and refused with AccessDeniedException as AWS refuses it)",
    )
    parser.add_argument(
        "--mock-config",
        metavar="PATH",
        help="a Step Functions Local MockConfigFile.json (e.g. statemachine/MockConfigFile.json): executions "
        "started on <state machine arn>#<TestCase> use its mocked responses",
    )


def _endpoint_url(value: str) -> str:
    """An endpoint URL as botocore takes it (http or https, and a host), refused in one line otherwise."""
    parsed = urllib.parse.urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise argparse.ArgumentTypeError(f"{value!r} is not a URL: give http://HOST:PORT, e.g. http://127.0.0.1:8083")
    return value


def _add_endpoint(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint-url",
        metavar="URL",
        type=_endpoint_url,
        help="e.g. http://127.0.0.1:8083 for idemflow serve or Step Functions Local "
        "(default: AWS, with the usual credentials and region)",
    )
    parser.add_argument(
        "--region", help="AWS region (default: AWS_REGION or the profile's; us-east-1 with --endpoint-url)"
    )


def _add_record_of_key(parser: argparse.ArgumentParser) -> None:
    """Where a key's record is: the endpoint, the table (or the stack naming it), the scope, the key."""
    _add_endpoint(parser)
    parser.add_argument("--table", help="the idempotency table's name")
    parser.add_argument(
        "--stack-name",
        help="read the table and scope from this stack's outputs IdempotencyTableName, WorkflowScope (else from "
        "those of its one nested stack that has them: a project nesting the workflow)",
    )
    parser.add_argument(
        "--scope",
        help="the workflow's WorkflowScope parameter (default: the stack's, else the project template's default)",
    )
    parser.add_argument("--key", required=True, help="the idempotency key")


def _add_timeout(parser: argparse.ArgumentParser, default: float, what: str) -> None:
    parser.add_argument(
        "--timeout", type=float, default=default, metavar="SECONDS", help=f"{what} (default {default:g})"
    )


# -- the commands -----------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="deploy the template into the embedded engine and run executions",
        description="Deploy the template into the embedded engine, run executions for one key and report each "
        "one and the side-effect invocations for the key. Every execution gets its own name, so duplicates are "
        "handled by the workflow itself, not by Step Functions' name deduplication.",
    )
    run.add_argument(
        "--key",
        help=f"the idempotency key (default: the idempotencyKey of {SAMPLE_EVENT} when its payload is sent, "
        "else a new order-<random hex>)",
    )
    _add_payload(run, f"{SAMPLE_EVENT} beside --template")
    run.add_argument(
        "--repeat",
        type=int,
        metavar="N",
        help="run N executions with the same key and payload (default: 1, or --concurrency)",
    )
    run.add_argument(
        "--concurrency",
        type=int,
        default=1,
        metavar="C",
        help="run C executions at a time (default 1: one after the other)",
    )
    run.add_argument(
        "--function",
        metavar="NAME",
        help="count the invocations of this function of the template (a logical id or name; default: the "
        "function the workflow wraps, its SideEffectFunctionArn)",
    )
    run.add_argument(
        "--test-case",
        metavar="NAME",
        help="start each execution on <state machine arn>#NAME, as Step Functions Local does: the test case NAME "
        "of --mock-config answers the states it mocks (needed with --mock-config, which does nothing without it)",
    )
    _add_timeout(run, 60.0, "per execution")
    run.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    _add_deploy(
        run,
        0.1,
        "multiply every Wait and retry delay by SCALE (default 0.1 for a quick demo; "
        "1 waits as AWS would, 0 not at all)",
    )

    serve = commands.add_parser(
        "serve",
        help="serve the deployed template on a local endpoint until Ctrl-C",
        description=f"Deploy the template into the embedded engine and serve {', '.join(SERVED.values())} on one "
        "endpoint (use it with the AWS CLI, boto3 or idemflow start) until SIGINT or SIGTERM.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}, like Step Functions Local; 0 picks a free one)",
    )
    serve.add_argument("--region", default="us-east-1", help="the region of the ARNs (default us-east-1)")
    _add_deploy(serve, 1.0, "multiply every Wait and retry delay by SCALE (default 1: as on AWS)")

    start = commands.add_parser(
        "start",
        help="start an execution on any endpoint (AWS, Step Functions Local, idemflow serve)",
        description="Start an execution with {idempotencyKey, payload}. The default name is derived from the key "
        "and the payload, so a repeated start returns the existing execution (Standard workflows "
        "deduplicate names for 90 days).",
    )
    _add_endpoint(start)
    start.add_argument("--state-machine-arn", metavar="ARN", help="the state machine to start (else --stack-name)")
    start.add_argument(
        "--stack-name",
        help="read the ARN from this CloudFormation stack's output StateMachineArn (when no --state-machine-arn)",
    )
    start.add_argument("--key", required=True, help="the idempotency key")
    _add_payload(start, f"the project's {SAMPLE_EVENT}")
    names = start.add_mutually_exclusive_group()
    names.add_argument("--name", help="the execution name (default: idem-<sha256(key)>-<sha256(payload)>)")
    names.add_argument(
        "--fresh",
        action="store_true",
        help="add a random suffix to the default name: start a new "
        "execution even if this key and payload ran before (the workflow still deduplicates)",
    )
    start.add_argument("--wait", action="store_true", help="poll until the execution ends (progress on stderr)")
    _add_timeout(start, 600.0, "for --wait")
    start.add_argument("--sync", action="store_true", help="StartSyncExecution (Express state machines only)")
    start.add_argument("--json", action="store_true", help="print JSON instead of text")

    record = commands.add_parser(
        "record",
        help="show the idempotency record of a key",
        description="Show the workflow's idempotency record for a key (exit 1: no record).",
    )
    _add_record_of_key(record)
    record.add_argument("--json", action="store_true", help="print JSON instead of text")

    free = commands.add_parser(
        "release",
        help="delete a key's stuck IN_PROGRESS lock once its owner has ended",
        description="Delete the IN_PROGRESS lock of a key once its owner execution has ended, conditioned on "
        "the lock's token, so that the next execution runs the side effect again (docs/runbook.md). Refused "
        "(exit 1) when there is no lock, while the owner runs, or when the record changed after it was read.",
    )
    _add_record_of_key(free)

    hist = commands.add_parser(
        "history",
        help="show an execution's events as a table",
        description="Show an execution's history: id, time, type, state and a short detail "
        "(error and cause, or the task's resource).",
    )
    _add_endpoint(hist)
    which = hist.add_mutually_exclusive_group(required=True)
    which.add_argument("--execution-arn", metavar="ARN", help="the execution to show (its ARN)")
    which.add_argument(
        "--key",
        help="the newest execution for this key, whichever door or client started it (by its name or its "
        "input), else the owner its record names",
    )
    hist.add_argument(
        "--state-machine-arn",
        metavar="ARN",
        help="with --key: where its executions are (default: the record's owner's)",
    )
    hist.add_argument(
        "--stack-name",
        help="with --key: read the state machine, table and scope from this stack's outputs (StateMachineArn, "
        "IdempotencyTableName, WorkflowScope)",
    )
    hist.add_argument("--table", help="with --key: the idempotency table, to read the key's record and its owner")
    hist.add_argument(
        "--scope",
        help="with --key: the workflow's WorkflowScope parameter (default: the stack's, else the project template's)",
    )
    hist.add_argument(
        "--scan", type=int, default=100, metavar="N", help="with --key: how many of the newest executions to search"
    )
    hist.add_argument("--width", type=int, default=100, help="cut details longer than this (default 100)")
    hist.add_argument("--json", action="store_true", help="print the raw events as JSON")

    demo = commands.add_parser(
        "demo",
        help="ten checked steps on the embedded engine: first run, replay, 20 concurrent duplicates, key reuse, "
        "the record, the HTTP, queue and topic doors",
        description="Deploy the template into the embedded engine and show, with checks: a first run, its "
        "duplicate served from the record, 20 concurrent duplicates with one side-effect invocation, a key "
        "reused with another payload rejected, and the record; then the HTTP door (a first request, its retry "
        "answered with the first answer's body and Idempotent-Replayed: true, a 422 problem for another body) "
        "the queue door (a message delivered twice, run once) and the topic door (a message published twice, "
        "run once). On a template that nests the workflow (a project of idemflow init, say), its five steps "
        "of the workflow's guarantees, counting the side effect's runs: its function's invocations or its state "
        "machine's executions. Exits 1 if an expectation fails.",
    )
    demo.add_argument(
        "--template",
        default=str(default_template()),
        metavar="PATH",
        help="the SAM template to deploy (default: ./template.yaml, as sam looks for it, else the packaged workflow); "
        "the doors' steps are shown on a template whose own parameters open them (the workflow's)",
    )
    demo.add_argument(
        "--workflow",
        metavar="PATH",
        help="which workflow to show when the template holds several: a nested application's logical id "
        "(default: the only one)",
    )
    _add_timeout(demo, 60.0, "per execution")

    init = commands.add_parser(
        "init",
        help="create a project around your own side effect (a function or a state machine): template, code, event "
        "and a test",
        description="Create DIRECTORY with a SAM template that nests this workflow (from a copy in "
        "DIRECTORY/workflow/, or from the Serverless Application Repository with --application-id) around a new "
        "function (--function-name) or state machine (--state-machine-name): its skeleton keeps the side-effect "
        "contract and writes a table under a role that allows exactly that; an event, and a pytest test on the "
        "embedded engine (a first run, a duplicate, a rejected request, and a write refused once its grant is "
        "removed from a copy of the template).",
    )
    init.add_argument("directory", metavar="DIRECTORY", help="where to create it (absent or empty)")
    side_effect = init.add_mutually_exclusive_group(required=True)
    side_effect.add_argument(
        "--function-name", metavar="NAME", help="your side effect is a Lambda function, e.g. SendWelcomeEmail"
    )
    side_effect.add_argument(
        "--state-machine-name",
        metavar="NAME",
        help="your side effect is a state machine (the workflow runs it with startExecution.sync:2), e.g. RecordSignup",
    )
    init.add_argument("--scope", help="the WorkflowScope of its keys (default: the name in lower case)")
    init.add_argument(
        "--application-id",
        metavar="ARN",
        help="nest the workflow published in the Serverless Application Repository under this ARN "
        "(arn:aws:serverlessrepo:REGION:ACCOUNT:applications/idempotent-workflow), at the installed version, "
        "instead of copying it into DIRECTORY/workflow/",
    )

    chart = commands.add_parser(
        "diagram",
        help="print the state machine as a Mermaid flowchart, or write it into docs/protocol.md",
        description="Generate the Mermaid flowchart of docs/protocol.md from the template's definition (its "
        "DefinitionUri).",
    )
    chart.add_argument(
        "--write", action="store_true", help="replace the diagram between the markers of docs/protocol.md"
    )
    _add_operators(commands)
    return parser


# -- the operator's commands (idemflow/cli/operators.py) ----------------------------------------------------
def _since(text: str) -> Any:
    from idemflow.cli.operators import parse_since

    return parse_since(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _add_where(parser: argparse.ArgumentParser, option: str, metavar: str, output: str, what: str) -> None:
    _add_endpoint(parser)
    parser.add_argument(option, metavar=metavar, help=f"{what} (default: the stack's output {output})")
    parser.add_argument("--stack-name", help=f"read {option[2:].replace('-', ' ')} from this stack's output {output}")


def _add_listing(parser: argparse.ArgumentParser, count: int, what: str) -> None:
    parser.add_argument("--max", type=_positive, default=count, metavar="N", help=f"{what} (default {count})")
    parser.add_argument("--width", type=_positive, default=120, help="cut reasons longer than this (default 120)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")


def _add_operators(commands: Any) -> None:
    listing = commands.add_parser(
        "list",
        help="the newest executions of the workflow: key, path and outcome",
        description="List the newest executions of the workflow's state machine, newest first: each one's start "
        "time, status, idempotency key (from its input), outcome (replayed or not; error and the first line of "
        "its cause) and path (the states it entered, from its history).",
    )
    _add_where(listing, "--state-machine-arn", "ARN", "StateMachineArn", "the workflow's state machine")
    listing.add_argument(
        "--status",
        choices=["RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE"],
        help="only the executions of this status (ListExecutions' statusFilter)",
    )
    _add_listing(listing, 20, "how many executions")

    letters = commands.add_parser(
        "dead-letters",
        help="the doors' dead letters, each with its reason in one line (read, never deleted)",
        description="Show the messages of the doors' dead-letter queue without deleting them: they are received "
        "with VisibilityTimeout=0, so each stays visible on the queue (the receive counts in its "
        "ApproximateReceiveCount). Each with its key, ERROR_CODE and the first line of ERROR_MESSAGE (a Lambda "
        "error's errorMessage, not its stack trace: that is in the failed execution's history), the failed "
        "execution's ARN and the intake execution's (INTAKE_EXECUTION_ARN).",
    )
    _add_where(letters, "--queue-url", "URL", "DoorDeadLetterQueueUrl", "the dead-letter queue")
    letters.add_argument(
        "--key-attribute", default="idempotencyKey", help="the doors' DoorKeyAttribute (default idempotencyKey)"
    )
    _add_listing(letters, 100, "how many messages at most")

    delivered = commands.add_parser(
        "deliveries",
        help="the doors' recent deliveries: key, outcome, and the reason of each dead letter",
        description="Show the deliveries of the newest executions of the doors' intake state machine: each one's "
        "key, outcome (COMPLETED, DEAD_LETTERED; INTAKE_FAILED for an intake execution that could not "
        "dead-letter) and, when dead-lettered, its reason in one line.",
    )
    _add_where(delivered, "--intake-arn", "ARN", "IntakeStateMachineArn", "the intake state machine")
    _add_listing(delivered, 20, "how many intake executions")

    redrive = commands.add_parser(
        "redrive",
        help="redrive one execution, or every FAILED, TIMED_OUT or ABORTED one since a time, and wait",
        description="RedriveExecution: one execution (--execution-arn), or every FAILED, TIMED_OUT or ABORTED "
        "execution of the state machine that stopped since --since. Each refusal is printed with AWS's reason; "
        "the redriven ones are waited for (progress on stderr) and reported with their final status. Exit 1 "
        "unless every one was redriven and SUCCEEDED. Whether a redrive is safe depends on where it stopped "
        "(docs/protocol.md, Redrive).",
    )
    _add_where(redrive, "--state-machine-arn", "ARN", "StateMachineArn", "with --since: the state machine")
    which = redrive.add_mutually_exclusive_group(required=True)
    which.add_argument("--execution-arn", metavar="ARN", help="the execution to redrive (any state machine's)")
    which.add_argument(
        "--since", type=_since, metavar="TIME", help="an ISO 8601 time (UTC unless it says), or an age: 30m, 2h, 7d"
    )
    _add_timeout(redrive, 600.0, "how long to wait for the redriven executions")
    redrive.add_argument("--json", action="store_true", help="print one JSON document instead of text")

    move = commands.add_parser(
        "move-back",
        help="move the dead letters back to the request queue (StartMessageMoveTask) and wait",
        description="Move every message of the doors' dead-letter queue to the request queue with SQS "
        "StartMessageMoveTask (each keeps its attributes, so its key), wait for the task (ListMessageMoveTasks, "
        "progress on stderr) and report how many were moved. Exit 1 unless the task COMPLETED.",
    )
    _add_where(move, "--queue-url", "URL", "DoorDeadLetterQueueUrl", "the dead-letter queue to empty")
    move.add_argument(
        "--destination-url", metavar="URL", help="where to move them (default: the stack's output RequestQueueUrl)"
    )
    move.add_argument(
        "--max-per-second", type=_positive, metavar="N", help="MaxNumberOfMessagesPerSecond (default: SQS's)"
    )
    _add_timeout(move, 300.0, "how long to wait for the move task")
    move.add_argument("--json", action="store_true", help="print one JSON document instead of text")
