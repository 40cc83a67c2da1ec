"""``idemflow``: run the idempotent workflow locally, serve it, or drive a deployed one.

``run``, ``serve`` and ``demo`` deploy ``template.yaml`` into the embedded engine (no AWS account, no
Docker); ``start``, ``record`` and ``history`` talk to any endpoint: AWS, Step Functions Local, or
``idemflow serve``. Expected errors are one line on stderr and exit status 2 (usage, input) or 1
(failed executions, runtime errors).
"""

from __future__ import annotations

import argparse
import json
import logging
import queue
import signal
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from idemflow import client, keys
from idemflow.contract import PROJECT_ROOT, TEMPLATE_PATH, RecordStatus, WorkflowError
from idemflow.template import TemplateError

if TYPE_CHECKING:
    from idemflow.engine.engine import Engine, ExecutionOutcome

PROG = "idemflow"
NEW_PAYMENT_EVENT = PROJECT_ROOT / "events" / "new-payment.json"
DEFAULT_SCOPE = "payments"
DEFAULT_PORT = 8083  # Step Functions Local's
EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130
# The demo's deployment: with waits scaled by 0.05, duplicates poll the owner's record every 50 ms for
# up to 1.5 s (30 polls) before failing with IdempotencyInProgress.
DEMO_OVERRIDES = {"InProgressPollSeconds": "1", "InProgressMaxPolls": "30"}
DEMO_WAIT_TIME_SCALE = 0.05
DEMO_DUPLICATES = 20
RECORD_FIELDS = "status owner lockToken fingerprint startedAt leaseExpiresAt expiresAt ttl completedAt resultStored"


def _default_payload() -> dict[str, Any]:
    """The payload of ``events/new-payment.json`` (where the project's files are), else the same payment."""
    try:
        payload = json.loads(NEW_PAYMENT_EVENT.read_text(encoding="utf-8"))["payload"]
    except (OSError, ValueError, KeyError, TypeError):
        payload = None
    return payload if isinstance(payload, dict) else {"customerId": "cust-1", "amount": 4200, "currency": "EUR"}


DEFAULT_PAYLOAD = _default_payload()


class CliError(Exception):
    """An expected error: printed as one line, exit status ``code``."""

    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see: {self.prog} --help)", EXIT_USAGE)


# -- input --------------------------------------------------------------------------------------------
def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", EXIT_USAGE
        ) from None


def _read_file(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{what}: no such file: {path}", EXIT_USAGE) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{what}: cannot read {path}: {exc}", EXIT_USAGE) from None


def _payload(args: argparse.Namespace) -> Any:
    if args.payload_file is not None:
        return _json_arg(_read_file(args.payload_file, "--payload-file"), f"--payload-file {args.payload_file}")
    if args.payload is None:
        return dict(DEFAULT_PAYLOAD)
    if args.payload.startswith("@"):
        return _json_arg(_read_file(args.payload[1:], "--payload"), f"--payload {args.payload}")
    return _json_arg(args.payload, "--payload")


def _checked_input(key: str, payload: Any) -> None:
    try:
        keys.check_input(key, payload)
    except (keys.IdempotencyKeyInvalidError, keys.IdempotencyPayloadInvalidError) as exc:
        raise CliError(f"{exc.error_name}: {exc}", EXIT_USAGE) from None


def _overrides(items: Sequence[str] | None) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CliError(f"--parameter-overrides: expected Key=Value, got {item!r}", EXIT_USAGE)
        result[name] = value
    return result


def _template(path: str) -> Path:
    template = Path(path)
    if not template.is_file():
        raise CliError(f"--template: no such file: {path}", EXIT_USAGE)
    return template


# -- output -------------------------------------------------------------------------------------------
def _arrow(stream: TextIO) -> str:
    try:
        "→".encode(stream.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return " -> "
    return " → "


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _view(
    name: str,
    arn: str,
    status: str,
    output: Any,
    error: str | None,
    cause: str | None,
    path: list[str] | None,
    **extra: Any,
) -> dict[str, Any]:
    """One execution as printed and as written by --json."""
    replayed = output.get("replayed") if isinstance(output, dict) else None
    result = output.get("result") if isinstance(output, dict) else None
    return {
        "name": name,
        "executionArn": arn,
        "status": status,
        "replayed": replayed,
        "result": result,
        "output": output,
        "error": error,
        "cause": cause,
        "path": path,
        **extra,
    }


def _outcome_view(outcome: ExecutionOutcome, **extra: Any) -> dict[str, Any]:
    return _view(
        outcome.name, outcome.arn, outcome.status, outcome.output, outcome.error, outcome.cause, outcome.path, **extra
    )


def _description_view(description: dict[str, Any], path: list[str] | None, **extra: Any) -> dict[str, Any]:
    return _view(
        description.get("name", ""),
        description["executionArn"],
        description["status"],
        client.parse_output(description),
        description.get("error"),
        description.get("cause"),
        path,
        **extra,
    )


def _print_execution(view: dict[str, Any], label: str, out: TextIO, indent: str = "    ") -> None:
    status = view["status"]
    if status == "SUCCEEDED":
        head = f"{label}{status}  replayed={json.dumps(view['replayed'])}"
    else:
        head = f"{label}{status}  {view['error'] or '-'}: {view['cause'] or '-'}"
    if view.get("seconds") is not None:
        head += f"  ({view['seconds']:.2f} s)"
    print(head, file=out)
    output = view["output"]
    if isinstance(output, dict) and output.get("resultStored") is False:
        print(f"{indent}result: not stored (too large); the side effect ran once", file=out)
    elif status == "SUCCEEDED":
        print(f"{indent}result: {_compact(view['result'])}", file=out)
    if view["path"]:
        print(f"{indent}path:   {_arrow(out).join(view['path'])}", file=out)


def _status_counts(views: list[dict[str, Any]]) -> str:
    counts = Counter(v["status"] if v["status"] == "SUCCEEDED" else f"{v['status']} {v['error']}" for v in views)
    return ", ".join(f"{n} {status}" for status, n in counts.most_common())


# -- AWS clients ----------------------------------------------------------------------------------------
def _clients(args: argparse.Namespace, *services: str) -> list[Any]:
    """boto3 clients for --endpoint-url/--region, or AWS's defaults without them.

    With --endpoint-url, the usual credentials are used when configured (environment, profile), else
    dummy ones (local endpoints accept any); the EC2 instance metadata service is not asked, and the
    region defaults to us-east-1 (``idemflow serve``'s).
    """
    import boto3
    import botocore.session
    from botocore.config import Config

    core = botocore.session.Session()
    if args.endpoint_url:
        core.get_component("credential_provider").remove("iam-role")
        if core.get_credentials() is None:
            core.set_credentials("local", "local")
    session = boto3.session.Session(botocore_session=core, region_name=args.region)
    region = session.region_name or ("us-east-1" if args.endpoint_url else None)
    if region is None:
        raise CliError("no AWS region: pass --region or set AWS_REGION", EXIT_USAGE)
    # A local endpoint serves every operation on one host: no "sync-" prefix for StartSyncExecution.
    config = Config(inject_host_prefix=not args.endpoint_url, retries={"mode": "standard", "max_attempts": 3})
    return [session.client(s, endpoint_url=args.endpoint_url, region_name=region, config=config) for s in services]


# -- the embedded engine -----------------------------------------------------------------------------------
@contextmanager
def _engine(template: Path, overrides: dict[str, str], wait_time_scale: float, **options: Any) -> Iterator[Engine]:
    from idemflow.engine.engine import Engine

    moto_logger = logging.getLogger("moto")
    level = moto_logger.level
    moto_logger.setLevel(logging.CRITICAL)  # failed executions are reported by the CLI, not logged by moto
    try:
        with Engine(template, parameter_overrides=overrides, wait_time_scale=wait_time_scale, **options) as engine:
            yield engine
    finally:
        moto_logger.setLevel(level)


def _run_executions(
    engine: Engine, key: str, payload: Any, count: int, concurrency: int, timeout: float
) -> list[dict[str, Any]]:
    """``count`` duplicates, ``concurrency`` at a time; each gets its own name (see ``run --help``)."""
    sfn = engine.client("stepfunctions")
    arn = engine.state_machine_arn

    def one(index: int) -> dict[str, Any]:
        began = time.monotonic()
        started = client.start(sfn, arn, key, payload, name=client.execution_name(key, payload, fresh=True))
        execution_arn = started if isinstance(started, str) else started["executionArn"]
        outcome = engine.wait(execution_arn, timeout)
        return _outcome_view(outcome, index=index, seconds=round(time.monotonic() - began, 3))

    jobs: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(1, count + 1):
        jobs.put(index)
    views: dict[int, dict[str, Any]] = {}
    errors: list[BaseException] = []

    def worker() -> None:
        while not errors:
            try:
                index = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                views[index] = one(index)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

    # Daemon threads: on Ctrl-C the main thread stops the engine and exits without waiting for them.
    workers = [threading.Thread(target=worker, name=f"idemflow-run-{n}", daemon=True) for n in range(concurrency)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if errors:
        raise errors[0]
    return [views[index] for index in sorted(views)]


# -- commands -------------------------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    payload = _payload(args)
    key = args.key or f"order-{uuid.uuid4().hex[:8]}"
    _checked_input(key, payload)
    count = args.repeat if args.repeat is not None else max(1, args.concurrency)
    if count < 1 or args.concurrency < 1:
        raise CliError("--repeat and --concurrency must be at least 1", EXIT_USAGE)
    concurrency = min(args.concurrency, count)
    with _engine(_template(args.template), _overrides(args.parameter_overrides), args.wait_time_scale) as engine:
        if not args.json:
            print(
                f"{count} execution(s) of key {key!r}, {concurrency} at a time, payload {_compact(payload)}", file=out
            )
            print(
                f"engine: {args.template}, waits x{args.wait_time_scale:g}, state machine {engine.state_machine_arn}",
                file=out,
            )
        views = _run_executions(engine, key, payload, count, concurrency, args.timeout)
        runs, charges = engine.side_effect_runs(key), len(engine.ledger_rows(key))
        summary = {
            "executions": len(views),
            "byStatus": dict(Counter(v["status"] for v in views)),
            "byError": dict(Counter(v["error"] for v in views if v["error"])),
            "replayed": sum(1 for v in views if v["replayed"] is True),
            "handlerRuns": runs,
            "ledgerCharges": charges,
        }
    if args.json:
        document = {
            "key": key,
            "payload": payload,
            "stateMachineArn": engine.state_machine_arn,
            "waitTimeScale": args.wait_time_scale,
            "executions": views,
            "summary": summary,
        }
        print(json.dumps(document, indent=2, ensure_ascii=False), file=out)
    else:
        for view in views:
            _print_execution(view, f"#{view['index']:<3} ", out, indent="     ")
        print(
            f"summary: {_status_counts(views)}; {summary['replayed']} replayed; "
            f"handler runs for the key: {runs}; ledger charges: {charges}",
            file=out,
        )
    return 0 if all(v["status"] == "SUCCEEDED" for v in views) else EXIT_FAILED


def cmd_serve(args: argparse.Namespace, out: TextIO, stop: threading.Event) -> int:
    options = {"host": args.host, "port": args.port, "region": args.region}
    with _engine(
        _template(args.template), _overrides(args.parameter_overrides), args.wait_time_scale, **options
    ) as engine:
        url, arn = engine.endpoint_url, engine.state_machine_arn
        example = client.execution_input("order-1", DEFAULT_PAYLOAD)
        print(
            f"idemflow serve: {args.template} deployed (region {args.region}, waits x{args.wait_time_scale:g})",
            file=out,
        )
        print(f"  endpoint:       {url}  (Step Functions, DynamoDB, Lambda)", file=out)
        print(f"  state machine:  {arn}", file=out)
        print(f"  records table:  {engine.idempotency_table}  (scope {engine.scope})", file=out)
        print(f"  ledger table:   {engine.ledger_table}", file=out)
        print(f"  function:       {engine.side_effect_function}", file=out)
        print("try:", file=out)
        print(
            f"  aws stepfunctions start-execution --endpoint-url {url} --region {args.region} "
            f"--state-machine-arn {arn} --input '{example}'",
            file=out,
        )
        print(f"  idemflow start --endpoint-url {url} --state-machine-arn {arn} --key order-1 --wait", file=out)
        print(f"  idemflow record --endpoint-url {url} --table {engine.idempotency_table} --key order-1", file=out)
        print("Ctrl-C to stop.", file=out, flush=True)
        while not stop.wait(0.5):
            pass
        print("idemflow serve: stopping", file=out, flush=True)
    return 0


def _start_target(args: argparse.Namespace) -> tuple[Any, str]:
    sfn, cfn = _clients(args, "stepfunctions", "cloudformation")
    if args.state_machine_arn:
        return sfn, args.state_machine_arn
    if not args.stack_name:
        raise CliError(
            "pass --state-machine-arn, or --stack-name to read the stack's output StateMachineArn", EXIT_USAGE
        )
    try:
        return sfn, client.stack_output(cfn, args.stack_name, "StateMachineArn")
    except ValueError as exc:
        raise CliError(str(exc)) from None


def cmd_start(args: argparse.Namespace, out: TextIO) -> int:
    payload = _payload(args)
    _checked_input(args.key, payload)
    name = args.name or client.execution_name(args.key, payload, fresh=args.fresh)
    sfn, arn = _start_target(args)
    try:
        started = client.start(sfn, arn, args.key, payload, name=name, sync=args.sync)
    except ValueError as exc:  # a name or ARN that cannot be used, or a name taken by another input
        raise CliError(str(exc), EXIT_USAGE) from None
    if isinstance(started, str):
        execution_arn, description, existed = started, None, False
    else:  # finished (--sync), or an execution that already had this name and input
        execution_arn, description, existed = started["executionArn"], started, bool(started.get("alreadyExisted"))
    if args.wait and (description is None or description["status"] == "RUNNING"):
        description = client.wait(sfn, execution_arn, args.timeout, _progress(sys.stderr, name))
    if description is None or description["status"] == "RUNNING":
        view = {"name": name, "executionArn": execution_arn, "status": "RUNNING", "alreadyExisted": existed}
        text = f"{'running' if existed else 'started'} {name}\n  {execution_arn}"
        print(json.dumps(view, indent=2) if args.json else text, file=out)
        return 0
    path = None if args.sync else client.path(client.history(sfn, execution_arn))
    view = _description_view(description, path, alreadyExisted=existed)
    if args.json:
        print(json.dumps(view, indent=2, ensure_ascii=False), file=out)
    else:
        if existed:
            print(
                f"{name} already exists with this input: Step Functions returned it instead of starting "
                f"another (use --fresh for a new execution)",
                file=out,
            )
        print(f"arn:    {execution_arn}", file=out)
        _print_execution(view, "status: ", out, indent="")
    return 0 if view["status"] in ("SUCCEEDED", "RUNNING") else EXIT_FAILED


def _progress(stream: TextIO, name: str, every: float = 5.0) -> Callable[[float, str], None]:
    last = [0.0]

    def report(elapsed: float, status: str) -> None:
        if elapsed - last[0] >= every:
            last[0] = elapsed
            print(f"idemflow: {name} still {status} after {elapsed:.0f} s", file=stream, flush=True)

    return report


def _record_lines(record: dict[str, Any]) -> list[str]:
    lines = []
    for field in RECORD_FIELDS.split():
        value = record.get(field)
        if field == "ttl" and isinstance(value, int):
            value = f"{value} ({datetime.fromtimestamp(value, UTC):%Y-%m-%d %H:%M:%S} UTC)"
        elif isinstance(value, bool):
            value = json.dumps(value)
        lines.append(f"  {field + ':':<16}{'-' if value is None else value}")
    if "result" in record:
        result = record["result"]
        try:
            result = json.dumps(json.loads(result), indent=2, ensure_ascii=False)
        except (TypeError, ValueError):
            result = str(result)
        lines.append("  result:")
        lines.extend(f"    {line}" for line in result.splitlines())
    return lines


def cmd_record(args: argparse.Namespace, out: TextIO) -> int:
    _checked_input(args.key, {})
    ddb, cfn = _clients(args, "dynamodb", "cloudformation")
    table = args.table
    if not table:
        if not args.stack_name:
            raise CliError("pass --table, or --stack-name to read the stack's output IdempotencyTableName", EXIT_USAGE)
        try:
            table = client.stack_output(cfn, args.stack_name, "IdempotencyTableName")
        except ValueError as exc:
            raise CliError(str(exc)) from None
    record = client.record(ddb, table, args.scope, args.key)
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False), file=out)
    elif record is None:
        print(f"no record for key {args.key!r} in {table} (scope {args.scope})", file=out)
    else:
        print(f"record for key {args.key!r} ({record.get('id')})", file=out)
        print("\n".join(_record_lines(record)), file=out)
    return 0 if record is not None else EXIT_FAILED


def _event_row(event: dict[str, Any], state: str) -> tuple[str, str, str, str, str]:
    details = next((v for k, v in event.items() if k.endswith("EventDetails") and isinstance(v, dict)), {})
    if "error" in details or "cause" in details:
        detail = f"{details.get('error', '')}: {details.get('cause', '')}"
    elif "resourceType" in details:
        detail = f"{details['resourceType']}:{details.get('resource', '')}"
    elif event["type"] in ("ExecutionStarted", "ExecutionSucceeded"):
        detail = str(details.get("input", details.get("output", "")))
    else:
        detail = ""
    timestamp = event["timestamp"]
    when = timestamp.astimezone(UTC).strftime("%H:%M:%S.%f")[:-3] if isinstance(timestamp, datetime) else ""
    return str(event["id"]), when, event["type"], state, detail.replace("\n", " ")


def cmd_history(args: argparse.Namespace, out: TextIO) -> int:
    (sfn,) = _clients(args, "stepfunctions")
    events = client.history(sfn, args.execution_arn)
    if args.json:
        print(json.dumps(events, indent=2, default=str, ensure_ascii=False), file=out)
        return 0
    rows, state = [], ""
    for event in events:
        entered = event.get("stateEnteredEventDetails") or event.get("stateExitedEventDetails")
        if entered:
            state = entered["name"]
        rows.append(_event_row(event, state if not event["type"].startswith("Execution") else ""))
    header = ("id", "time (UTC)", "type", "state", "detail")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    print(f"{args.execution_arn}: {len(events)} events", file=out)
    for row in [header, *rows]:
        detail = row[4] if len(row[4]) <= args.width else row[4][: max(0, args.width - 3)] + "..."
        cells = [row[0].rjust(widths[0]), *(c.ljust(w) for c, w in zip(row[1:4], widths[1:], strict=True)), detail]
        print("  ".join(cells).rstrip(), file=out)
    return 0


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    checks: list[tuple[str, bool]] = []

    def expect(what: str, ok: bool) -> None:
        checks.append((what, ok))
        print(f"      [{'ok' if ok else 'FAILED'}] {what}", file=out)

    first_key, crowd_key = "order-1001", "order-2002"
    print(
        f"idemflow demo: {TEMPLATE_PATH.name} on the embedded engine (waits x{DEMO_WAIT_TIME_SCALE:g}, "
        f"InProgressPollSeconds={DEMO_OVERRIDES['InProgressPollSeconds']}, "
        f"InProgressMaxPolls={DEMO_OVERRIDES['InProgressMaxPolls']})",
        file=out,
        flush=True,
    )
    with _engine(TEMPLATE_PATH, DEMO_OVERRIDES, DEMO_WAIT_TIME_SCALE) as engine:
        payment = dict(DEFAULT_PAYLOAD)

        print(f"[1/5] a first payment: key {first_key}, {_compact(payment)}", file=out)
        (first,) = _run_executions(engine, first_key, payment, 1, 1, args.timeout)
        _print_execution(first, "      ", out, indent="      ")
        expect(
            "charged once: handler runs 1, ledger charges 1",
            first["status"] == "SUCCEEDED"
            and first["replayed"] is False
            and engine.side_effect_runs(first_key) == 1
            and len(engine.ledger_rows(first_key)) == 1,
        )

        print("[2/5] its duplicate (same key, same payload) is served from the record", file=out)
        (duplicate,) = _run_executions(engine, first_key, payment, 1, 1, args.timeout)
        _print_execution(duplicate, "      ", out, indent="      ")
        runs = engine.side_effect_runs(first_key)
        expect(
            f"replayed=true, same result, function not invoked: handler runs still {runs}",
            duplicate["replayed"] is True and duplicate["result"] == first["result"] and runs == 1,
        )

        print(f"[3/5] {DEMO_DUPLICATES} concurrent duplicates of a new key ({crowd_key})", file=out, flush=True)
        began = time.monotonic()
        crowd = _run_executions(engine, crowd_key, payment, DEMO_DUPLICATES, DEMO_DUPLICATES, args.timeout)
        owners = [v for v in crowd if v["status"] == "SUCCEEDED" and v["replayed"] is False]
        replayed = [v for v in crowd if v["replayed"] is True]
        gave_up = [v for v in crowd if v["error"] == WorkflowError.IN_PROGRESS]
        runs, charges = engine.side_effect_runs(crowd_key), len(engine.ledger_rows(crowd_key))
        print(f"      by status: {_status_counts(crowd)}  (all done in {time.monotonic() - began:.1f} s)", file=out)
        print(
            f"      {len(owners)} ran the side effect; {len(replayed)} replayed its result "
            f"({sum(1 for v in replayed if 'WaitForOwner' in v['path'])} of them waited for the owner first); "
            f"handler runs {runs}, ledger charges {charges}",
            file=out,
        )
        if gave_up:
            print(
                f"      {len(gave_up)} gave up waiting ({WorkflowError.IN_PROGRESS}): a documented outcome when the "
                f"owner outlasts InProgressMaxPolls; a retry gets the stored result",
                file=out,
            )
        expect(
            "exactly one charge, one owner, and no other failure",
            charges == 1
            and runs == 1
            and len(owners) == 1
            and len(owners) + len(replayed) + len(gave_up) == len(crowd),
        )

        other = {**payment, "amount": 9900}
        print(f"[4/5] key {first_key} again with another amount: {_compact(other)}", file=out)
        (reused,) = _run_executions(engine, first_key, other, 1, 1, args.timeout)
        _print_execution(reused, "      ", out, indent="      ")
        amounts = [row.get("amount") for row in engine.ledger_rows(first_key)]
        expect(
            f"rejected with {WorkflowError.KEY_REUSED}; the ledger still holds one charge of {amounts}",
            reused["error"] == WorkflowError.KEY_REUSED and amounts == [payment["amount"]],
        )

        print(f"[5/5] the record of {first_key}", file=out)
        record = engine.record(first_key)
        print("\n".join(f"    {line}" for line in _record_lines(record or {})), file=out)
        expect(
            "COMPLETED, result stored",
            record is not None and record["status"] == RecordStatus.COMPLETED and record["resultStored"] is True,
        )
    failed = [what for what, ok in checks if not ok]
    if failed:
        print(f"demo FAILED: {len(failed)} of {len(checks)} expectations not met", file=out)
        return EXIT_FAILED
    print(f"demo passed: {len(checks)} of {len(checks)} expectations met", file=out)
    return 0


def cmd_diagram(args: argparse.Namespace, out: TextIO) -> int:
    from idemflow import diagram

    if not args.write:
        print(diagram.readme_block(), file=out)
        return 0
    try:
        changed = diagram.write_readme()
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    print(f"{diagram.README_PATH.name}: diagram {'updated' if changed else 'already up to date'}", file=out)
    return 0


# -- the parser -----------------------------------------------------------------------------------------------
def _scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {text!r}")
    return int(text)


def _add_payload(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--payload",
        metavar="JSON",
        help=f"the payload as inline JSON, or @FILE to read it from a file (default: events/new-payment.json's, "
        f"{_compact(DEFAULT_PAYLOAD)})",
    )
    group.add_argument("--payload-file", metavar="PATH", help="read the payload's JSON from PATH")


def _add_deploy(parser: argparse.ArgumentParser, wait_time_scale: float, scale_help: str) -> None:
    parser.add_argument(
        "--template",
        default=str(TEMPLATE_PATH),
        metavar="PATH",
        help="the SAM template to deploy (default: the project's template.yaml)",
    )
    parser.add_argument(
        "--parameter-overrides",
        nargs="+",
        metavar="KEY=VALUE",
        help="template parameters, as for sam deploy (e.g. InProgressMaxPolls=30 WorkflowType=EXPRESS)",
    )
    parser.add_argument("--wait-time-scale", type=_scale, default=wait_time_scale, metavar="SCALE", help=scale_help)


def _add_endpoint(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint-url",
        metavar="URL",
        help="e.g. http://127.0.0.1:8083 for idemflow serve or Step Functions Local "
        "(default: AWS, with the usual credentials and region)",
    )
    parser.add_argument(
        "--region", help="AWS region (default: AWS_REGION or the profile's; us-east-1 with --endpoint-url)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="deploy the template into the embedded engine and run executions",
        description="Deploy the template into the embedded engine, run executions for one key and report each "
        "one and the side effects. Every execution gets its own name, so duplicates are handled by "
        "the workflow itself, not by Step Functions' name deduplication.",
    )
    run.add_argument("--key", help="the idempotency key (default: a new order-<random hex>)")
    _add_payload(run)
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
    run.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="per execution (default 60)")
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
        description="Deploy the template into the embedded engine and serve Step Functions, DynamoDB and Lambda "
        "on one endpoint (use it with the AWS CLI, boto3 or idemflow start) until SIGINT or SIGTERM.",
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
    start.add_argument("--state-machine-arn", metavar="ARN")
    start.add_argument(
        "--stack-name",
        help="read the ARN from this CloudFormation stack's output StateMachineArn (when no --state-machine-arn)",
    )
    start.add_argument("--key", required=True, help="the idempotency key")
    _add_payload(start)
    names = start.add_mutually_exclusive_group()
    names.add_argument("--name", help="the execution name (default: idem-<sha256(key)>-<sha256(payload)>)")
    names.add_argument(
        "--fresh",
        action="store_true",
        help="add a random suffix to the default name: start a new "
        "execution even if this key and payload ran before (the workflow still deduplicates)",
    )
    start.add_argument("--wait", action="store_true", help="poll until the execution ends (progress on stderr)")
    start.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS", help="for --wait (default 600)")
    start.add_argument("--sync", action="store_true", help="StartSyncExecution (Express state machines only)")
    start.add_argument("--json", action="store_true", help="print JSON instead of text")

    record = commands.add_parser(
        "record",
        help="show the idempotency record of a key",
        description="Show the workflow's idempotency record for a key (exit 1: no record).",
    )
    _add_endpoint(record)
    record.add_argument("--table", help="the idempotency table's name")
    record.add_argument("--stack-name", help="read the table from this stack's output IdempotencyTableName")
    record.add_argument("--scope", default=DEFAULT_SCOPE, help=f"the WorkflowScope parameter (default {DEFAULT_SCOPE})")
    record.add_argument("--key", required=True, help="the idempotency key")
    record.add_argument("--json", action="store_true", help="print JSON instead of text")

    hist = commands.add_parser(
        "history",
        help="show an execution's events as a table",
        description="Show an execution's history: id, time, type, state and a short detail "
        "(error and cause, or the task's resource).",
    )
    _add_endpoint(hist)
    hist.add_argument("--execution-arn", required=True, metavar="ARN")
    hist.add_argument("--width", type=int, default=100, help="cut details longer than this (default 100)")
    hist.add_argument("--json", action="store_true", help="print the raw events as JSON")

    demo = commands.add_parser(
        "demo",
        help="five steps on the embedded engine: first run, replay, 20 concurrent duplicates, key reuse",
        description="Deploy the template into the embedded engine and show, with checks: a first payment, its "
        "duplicate served from the record, 20 concurrent duplicates charged once, a key reused with "
        "another amount rejected, and the record. Exits 1 if an expectation fails.",
    )
    demo.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="per execution (default 60)")

    chart = commands.add_parser(
        "diagram",
        help="print the state machine as a Mermaid flowchart, or write it into README.md",
        description="Generate the README's Mermaid flowchart from statemachine/idempotent.asl.json.",
    )
    chart.add_argument("--write", action="store_true", help="replace the diagram between the README's markers")
    return parser


# -- main -------------------------------------------------------------------------------------------------------
def _engine_error(exc: Exception) -> CliError | None:
    engine_module = sys.modules.get("idemflow.engine.engine")
    if engine_module is None or not isinstance(exc, engine_module.EngineError):
        return None
    return CliError(str(exc), EXIT_USAGE if isinstance(exc.__cause__, TemplateError) else EXIT_FAILED)


def _aws_error(exc: ClientError | BotoCoreError) -> CliError:
    if isinstance(exc, EndpointConnectionError):
        return CliError(f"{exc} (is the endpoint running? e.g. idemflow serve)")
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return CliError(f"{exc.operation_name}: {error.get('Code', 'error')}: {error.get('Message', exc)}")
    return CliError(str(exc))


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None, *, stop: threading.Event | None = None) -> int:
    """The console script. ``stop`` ends ``serve`` when set (signals set it in the main thread)."""
    out = sys.stdout
    if hasattr(out, "reconfigure"):  # a key or result in a script the terminal cannot show is no crash
        out.reconfigure(errors="replace")
    try:
        args = build_parser().parse_args(argv)
        if args.command == "serve":
            stop = stop or threading.Event()
            with _stop_on_signals(stop):
                return cmd_serve(args, out, stop)
        command: Callable[[argparse.Namespace, TextIO], int] = {
            "run": cmd_run,
            "start": cmd_start,
            "record": cmd_record,
            "history": cmd_history,
            "demo": cmd_demo,
            "diagram": cmd_diagram,
        }[args.command]
        return command(args, out)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except CliError as exc:
        return _fail(str(exc), exc.code)
    except (ClientError, BotoCoreError) as exc:
        aws_error = _aws_error(exc)
        return _fail(str(aws_error), aws_error.code)
    except (client.ExecutionTimeoutError, TemplateError) as exc:
        return _fail(str(exc), EXIT_USAGE if isinstance(exc, TemplateError) else EXIT_FAILED)
    except Exception as exc:
        error = _engine_error(exc)
        if error is None:
            raise
        return _fail(str(error), error.code)


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
