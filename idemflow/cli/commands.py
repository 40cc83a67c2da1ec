"""What each command does, ``demo`` aside (see :mod:`idemflow.cli.demo`).

``run`` and ``serve`` deploy into the embedded engine; ``start``, ``record`` and ``history`` work against
any endpoint; ``diagram`` prints or writes the flowchart of ``docs/protocol.md``. Each takes the parsed
arguments and stdout, and returns the exit status.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from idemflow import client, keys
from idemflow.cli.doors import DOORS, Served, script
from idemflow.cli.embedded import deploy_from, run_executions
from idemflow.cli.endpoint import clients, given_or_stack_output
from idemflow.cli.errors import EXIT_FAILED, EXIT_USAGE, CliError
from idemflow.cli.inputs import check_input, read_payload, run_key, sample_payload, template_path
from idemflow.cli.output import (
    compact,
    description_view,
    history_table,
    print_execution,
    print_json,
    progress,
    record_lines,
    status_counts,
)
from idemflow.template import load_template
from idemflow.workflow import default_template

if TYPE_CHECKING:
    from idemflow.engine import Engine


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    payload = read_payload(args, template_path(args.template))
    key = run_key(args, template_path(args.template))  # an empty key is refused below
    check_input(key, payload)
    count = args.repeat if args.repeat is not None else max(1, args.concurrency)
    if count < 1 or args.concurrency < 1:
        raise CliError("--repeat and --concurrency must be at least 1", EXIT_USAGE)
    if (args.mock_config is None) != (args.test_case is None):
        # run starts its own executions: without #TestCase the file's responses are never used.
        raise CliError("--mock-config and --test-case go together: run starts <arn>#<test case>", EXIT_USAGE)
    concurrency = min(args.concurrency, count)
    with deploy_from(args) as engine:
        function = counted_function(engine, args.function)
        if not args.json:
            print(f"{count} execution(s) of key {key!r}, {concurrency} at a time, payload {compact(payload)}", file=out)
            print(
                f"engine: {args.template}, waits x{args.wait_time_scale:g}, "
                f"state machine {engine.workflow.state_machine_arn}",
                file=out,
            )
            print_not_served(engine, out)
        views = run_executions(engine, key, payload, count, concurrency, args.timeout, args.test_case)
        runs = side_effect_runs(engine, key, function)
        summary = {
            "executions": len(views),
            "byStatus": dict(Counter(v["status"] for v in views)),
            "byError": dict(Counter(v["error"] for v in views if v["error"])),
            "replayed": sum(1 for v in views if v["replayed"] is True),
            "function": function,
            "sideEffectInvocations": runs,
        }
        if function is None:  # a state machine side effect: its executions for the key are the runs counted
            summary["stateMachine"] = engine.workflow.side_effect_state_machine.arn
    if args.json:
        document = {
            "key": key,
            "payload": payload,
            "stateMachineArn": engine.workflow.state_machine_arn,
            "waitTimeScale": args.wait_time_scale,
            "notServed": engine.unserved(),
            "executions": views,
            "summary": summary,
        }
        print_json(document, out)
    else:
        for view in views:
            print_execution(view, f"#{view['index']:<3} ", out, indent="     ")
        print(
            f"summary: {status_counts(views)}; {summary['replayed']} replayed; "
            f"side-effect invocations for the key: {runs} "
            f"({function or engine.workflow.side_effect_description + ': its executions'})",
            file=out,
        )
    return 0 if all(v["status"] == "SUCCEEDED" for v in views) else EXIT_FAILED


def print_not_served(engine: Engine, out: TextIO) -> None:
    """The template's resources the engine accepts without running them, so none goes unnoticed."""
    lines = engine.unserved()
    if lines:
        print(f"  not served locally ({len(lines)}):", file=out)
        for line in lines:
            print(f"    {line}", file=out)


def counted_function(engine: Engine, name: str | None) -> str | None:
    """The deployed function whose invocations ``run`` counts: ``--function`` (a name, logical id or
    ARN), or the function the workflow wraps; None for a workflow whose side effect is a state machine (``run``
    counts its executions)."""
    if name is None:
        return None if engine.workflow.side_effect_is_state_machine else engine.workflow.side_effect_function
    stack = engine.stack
    function = stack.function_by_name(name) if stack is not None else None
    if function is None:
        known = ", ".join(sorted(f.logical_id for f in stack.all_functions())) if stack is not None else ""
        raise CliError(f"--function {name}: no such function in the template (its functions: {known})", EXIT_USAGE)
    return function.name


def side_effect_runs(engine: Engine, key: str, function: str | None) -> int:
    """How many times the side effect ran for ``key``: the function's invocations that ran its handler, or (``function``
    None) the executions of the workflow's side-effect state machine started for the key."""
    return engine.workflow.side_effect_runs(key, function)


def cmd_serve(args: argparse.Namespace, out: TextIO, stop: threading.Event) -> int:
    with deploy_from(args, host=args.host, port=args.port, region=args.region) as engine:
        url, arn = engine.endpoint_url, engine.workflow.state_machine_arn
        payload: Any = None
        try:
            payload = sample_payload(Path(args.template))
            example = client.execution_input("order-1", payload)
        except CliError:  # no sample event beside the template: show where the payload goes
            example = '{"idempotencyKey": "order-1", "payload": <your payload>}'
        print(
            f"idemflow serve: {args.template} deployed (region {args.region}, waits x{args.wait_time_scale:g})",
            file=out,
        )
        services = ", ".join(service.name for service in engine.services)
        print(f"  endpoint:       {url}  ({services})", file=out)
        iam = (
            "off (--no-iam): every call runs whatever the roles allow"
            if getattr(args, "no_iam", False)
            else "each call decided under its role's policies, as on AWS (--no-iam to turn off)"
        )
        print(f"  permissions:    {iam}", file=out)
        stack = engine.workflow.stack.name  # the workflow's own stack (nested or not): its outputs name it
        print(f"  stack:          {stack}  (its outputs: aws cloudformation describe-stacks, --stack-name)", file=out)
        print(f"  state machine:  {arn}", file=out)
        print(f"  records table:  {engine.workflow.idempotency_table}  (scope {engine.workflow.scope})", file=out)
        print(f"  side effect:    {engine.workflow.side_effect_description}", file=out)
        print_not_served(engine, out)
        listed = [(door, door.listed(engine)) for door in DOORS]
        for door, items in listed:
            for line in door.banner(items):
                print(f"  {line}", file=out)
        print("try (the AWS CLI wants credentials: the engine takes any):", file=out)
        print(
            f"  export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_DEFAULT_REGION={args.region}", file=out
        )
        print(
            f"  {script('aws')} stepfunctions start-execution --endpoint-url {url} --region {args.region} "
            f"--state-machine-arn {arn} --input '{example}'",
            file=out,
        )
        print(
            f"  {script('idemflow')} start --endpoint-url {url} --stack-name {stack} --key order-1 --wait"
            f"{start_payload(payload)}",
            file=out,
        )
        served = Served(
            url,
            args.region,
            payload,
            key_field=engine.workflow.stack.parameters.get("DoorKeyField", "idempotencyKey"),
            example_side_effect=not engine.workflow.stack.parameters.get("SideEffectFunctionArn")
            and not engine.workflow.side_effect_is_state_machine,
        )
        for door, items in listed:
            for line in door.tries(items, served):
                print(f"  {line}", file=out)
        print(f"  {script('idemflow')} record --endpoint-url {url} --stack-name {stack} --key order-1", file=out)
        print(f"  {script('idemflow')} history --endpoint-url {url} --stack-name {stack} --key order-1", file=out)
        print("Ctrl-C to stop.", file=out, flush=True)
        while not stop.wait(0.5):
            engine.background.check()  # a failed background loop ends serve with its error
        print("idemflow serve: stopping", file=out, flush=True)
    return 0


def start_payload(payload: Any) -> str:
    """``start``'s ``--payload`` for the served template's sample payload, when ``start`` would not send it by
    itself (it sends the payload of ``./template.yaml``'s sample event, else the packaged workflow's)."""
    try:
        default = sample_payload(default_template())
    except CliError:
        default = None
    if payload is None or payload == default:
        return ""
    return f" --payload {shlex.quote(json.dumps(payload, separators=(',', ':')))}"


def cmd_start(args: argparse.Namespace, out: TextIO) -> int:
    payload = read_payload(args, default_template())
    # client.start checks the key and payload, once, before any request.
    name = args.name or client.execution_name(args.key, payload, fresh=args.fresh)
    sfn, cfn = clients(args, "stepfunctions", "cloudformation")
    arn = given_or_stack_output(args.state_machine_arn, "--state-machine-arn", cfn, args.stack_name, "StateMachineArn")
    try:
        started = client.start(sfn, arn, args.key, payload, name=name, sync=args.sync)
    except (keys.IdempotencyKeyInvalidError, keys.IdempotencyPayloadInvalidError):
        raise  # reported with the workflow's error name
    except ValueError as exc:  # a name or ARN that cannot be used, or a name taken by another input
        raise CliError(str(exc), EXIT_USAGE) from None
    if isinstance(started, str):
        execution_arn, description, existed = started, None, False
    else:  # finished (--sync), or an execution that already had this name and input
        execution_arn, description, existed = started["executionArn"], started, bool(started.get("alreadyExisted"))
    if args.wait and (description is None or description["status"] == "RUNNING"):
        description = client.wait(sfn, execution_arn, args.timeout, progress(sys.stderr, name))
    if description is None or description["status"] == "RUNNING":
        view = {"name": name, "executionArn": execution_arn, "status": "RUNNING", "alreadyExisted": existed}
        text = f"{'running' if existed else 'started'} {name}\n  {execution_arn}"
        print(json.dumps(view, indent=2) if args.json else text, file=out)
        return 0
    path = None if args.sync else client.path(client.history(sfn, execution_arn))
    view = description_view(description, path, alreadyExisted=existed)
    if args.json:
        print_json(view, out)
    else:
        if existed:
            print(
                f"{name} already exists with this input: Step Functions returned it instead of starting "
                f"another (use --fresh for a new execution)",
                file=out,
            )
        print(f"arn:    {execution_arn}", file=out)
        print_execution(view, "status: ", out, indent="")
    return 0 if view["status"] in ("SUCCEEDED", "RUNNING") else EXIT_FAILED


def cmd_record(args: argparse.Namespace, out: TextIO) -> int:
    check_input(args.key, {})
    ddb, cfn = clients(args, "dynamodb", "cloudformation")
    table = given_or_stack_output(args.table, "--table", cfn, args.stack_name, "IdempotencyTableName")
    scope = workflow_scope(args, cfn)
    record = client.record(ddb, table, scope, args.key)
    if args.json:
        print_json(record, out)
    elif record is None:
        print(f"no record for key {args.key!r} in {table} (scope {scope})", file=out)
    else:
        print(f"record for key {args.key!r} ({record.get('id')})", file=out)
        print("\n".join(record_lines(record)), file=out)
    return 0 if record is not None else EXIT_FAILED


def cmd_release(args: argparse.Namespace, out: TextIO) -> int:
    check_input(args.key, {})
    ddb, sfn, cfn = clients(args, "dynamodb", "stepfunctions", "cloudformation")
    table = given_or_stack_output(args.table, "--table", cfn, args.stack_name, "IdempotencyTableName")
    scope = workflow_scope(args, cfn)
    try:
        released = client.release(ddb, sfn, table, scope, args.key)
    except client.ReleaseRefusedError as exc:
        raise CliError(f"release refused: {exc}", EXIT_FAILED) from None
    print(
        f"released key {args.key!r}: the lock of {released.get('owner')} ({released['ownerStatus']}) is deleted; "
        "the next execution for the key runs the side effect again (do not redrive the old owner: it would "
        "resume without its lock)",
        file=out,
    )
    return 0


def workflow_scope(args: argparse.Namespace, cfn: Any) -> str:
    """--scope, else the stack's output WorkflowScope (--stack-name), else the template's default."""
    if args.scope is not None:
        return str(args.scope)
    if args.stack_name:
        return given_or_stack_output(None, "--scope", cfn, args.stack_name, "WorkflowScope")
    return default_scope()


def default_scope() -> str:
    """The WorkflowScope default of the project's template (what a deployment without an override uses)."""
    template = default_template()
    default = load_template(template).get("Parameters", {}).get("WorkflowScope", {}).get("Default")
    if not isinstance(default, str):
        raise CliError(f"--scope is needed: {template} has no WorkflowScope default", EXIT_USAGE)
    return default


def cmd_history(args: argparse.Namespace, out: TextIO) -> int:
    sfn, ddb, cfn = clients(args, "stepfunctions", "dynamodb", "cloudformation")
    execution_arn = args.execution_arn
    if execution_arn is None:
        check_input(args.key, {})
        owner = None
        if args.table or args.stack_name:  # the record's owner: the execution that took the key last
            table = given_or_stack_output(args.table, "--table", cfn, args.stack_name, "IdempotencyTableName")
            record = client.record(ddb, table, workflow_scope(args, cfn), args.key)
            owner = record.get("owner") if record else None
        if args.state_machine_arn or args.stack_name or not isinstance(owner, str):
            arn = given_or_stack_output(
                args.state_machine_arn, "--state-machine-arn", cfn, args.stack_name, "StateMachineArn"
            )
        else:
            arn = client.state_machine_of(owner)
        execution_arn = client.newest_execution_of_key(
            sfn, arn, args.key, scan=args.scan, owner=owner if isinstance(owner, str) else None
        )
        if execution_arn is None:
            raise CliError(
                f"no execution found for key {args.key!r} among the newest {args.scan} of {arn} (by name and "
                "input), and no record names an owner"
            )
    events = client.history(sfn, execution_arn)
    if args.json:
        print_json(events, out, default=str)
        return 0
    print(f"{execution_arn}: {len(events)} events", file=out)
    for line in history_table(events, args.width):
        print(line, file=out)
    return 0


def cmd_diagram(args: argparse.Namespace, out: TextIO) -> int:
    from idemflow import diagram

    if not args.write:
        print(diagram.diagram_block(), file=out)
        return 0
    try:
        changed = diagram.write_diagram()
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    print(f"{diagram.PAGE_NAME}: diagram {'updated' if changed else 'already up to date'}", file=out)
    return 0
