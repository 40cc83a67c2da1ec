"""``idemflow demo``: the workflow's guarantees, shown and checked in ten steps on the embedded engine.

A first run, its duplicate served from the record, concurrent duplicates with one side-effect run, a key
reused with another payload rejected, and the record; then, on a template whose own parameters open the
doors (the workflow's), the steps of each door that has some (:mod:`idemflow.cli.doors`): the HTTP door (a
request, its retry, a key reused), the queue door (a message delivered twice) and the topic door (a message
published twice). It counts the runs of the side effect the workflow wraps, whatever it does: the invocations
of its function (``SideEffectFunctionArn``), or the executions of its state machine
(``SideEffectStateMachineArn``). ``--template`` (a project nesting the workflow, say) and ``--workflow`` (one
of several nested workflows) choose what it runs. Exits 1 if an expectation fails.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, TextIO

from idemflow.cli.doors import DOORS, STEP_INDENT, DemoRun
from idemflow.cli.embedded import deploy, run_executions
from idemflow.cli.errors import EXIT_FAILED, EXIT_USAGE, CliError
from idemflow.cli.inputs import sample_payload, template_path
from idemflow.cli.output import compact, print_execution, record_lines, status_counts
from idemflow.contract import RecordStatus, WorkflowError
from idemflow.template import TemplateError, load_template

# The demo's deployment: with waits scaled by 0.05, duplicates poll the owner's record once per scaled
# second, 30 times, before failing with IdempotencyInProgress.
DEMO_OVERRIDES = {"InProgressPollSeconds": "1", "InProgressMaxPolls": "30"}
DEMO_WAIT_TIME_SCALE = 0.05
DEMO_DUPLICATES = 20
WORKFLOW_STEPS = 5
"""The steps before the doors': the workflow's guarantees."""
DEMOED = tuple(door for door in DOORS if door.demo is not None)
# The doors the demo shows, each opened as their descriptions say (on an Express workflow the HTTP door answers
# with the outcome, StartSyncExecution, which the demo shows in one request; the queue door's intake waits for
# either type; a message comes back as soon as its visibility timeout, 0 s, ends).
DOORS_OVERRIDES = {
    **DEMO_OVERRIDES,
    **{name: value for door in DEMOED for name, value in {**door.opens, **door.demo_overrides}.items()},
}
STEPS = WORKFLOW_STEPS + sum(door.demo_steps for door in DEMOED)


def _declared(template: Path) -> set[str]:
    """The parameters ``template`` declares (the demo's overrides go to those it declares)."""
    try:
        parameters = load_template(template).get("Parameters") or {}
    except TemplateError as exc:
        raise CliError(str(exc), EXIT_USAGE) from exc
    return set(parameters) if isinstance(parameters, dict) else set()


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    checks: list[tuple[str, bool]] = []

    def expect(what: str, ok: bool) -> None:
        checks.append((what, ok))
        print(f"{STEP_INDENT}[{'ok' if ok else 'FAILED'}] {what}", file=out)

    first_key, crowd_key = "order-1001", "order-2002"
    template = template_path(args.template)
    declared = _declared(template)
    overrides = {name: value for name, value in DEMO_OVERRIDES.items() if name in declared}
    # The doors are opened by the template's own parameters: the workflow's template declares them, a project
    # nesting it does not (its doors are the nested workflow's parameters, set in the project's template).
    with_doors = set(DOORS_OVERRIDES) <= declared
    steps = STEPS if with_doors else WORKFLOW_STEPS
    options = {} if args.workflow is None else {"workflow": args.workflow}
    settings = ", ".join(f"{name}={value}" for name, value in overrides.items())
    print(
        f"idemflow demo: {template} on the embedded engine (waits x{DEMO_WAIT_TIME_SCALE:g}"
        f"{', ' + settings if settings else ''})",
        file=out,
        flush=True,
    )
    with deploy(template, overrides, DEMO_WAIT_TIME_SCALE, **options) as engine:

        def run_one(key: str, payload: Any) -> dict[str, Any]:
            (view,) = run_executions(engine, key, payload, 1, 1, args.timeout)
            print_execution(view, STEP_INDENT, out, indent=STEP_INDENT)
            return view

        payload = sample_payload(template)
        side_effect = engine.workflow.side_effect_description
        if engine.workflow.side_effect_is_state_machine:  # its runs are its executions
            runs_of, not_run = "side-effect executions", "state machine not started"
        else:
            runs_of, not_run = "side-effect invocations", "function not invoked"

        print(f"[1/{steps}] a first run: key {first_key}, {compact(payload)}, side effect {side_effect}", file=out)
        first = run_one(first_key, payload)
        expect(
            f"ran once: {runs_of} 1",
            first["status"] == "SUCCEEDED"
            and first["replayed"] is False
            and engine.workflow.side_effect_runs(first_key) == 1,
        )

        print(f"[2/{steps}] its duplicate (same key, same payload) is served from the record", file=out)
        duplicate = run_one(first_key, payload)
        runs = engine.workflow.side_effect_runs(first_key)
        expect(
            f"replayed=true, same result, {not_run}: {runs_of} still {runs}",
            duplicate["replayed"] is True and duplicate["result"] == first["result"] and runs == 1,
        )

        print(f"[3/{steps}] {DEMO_DUPLICATES} concurrent duplicates of a new key ({crowd_key})", file=out, flush=True)
        began = time.monotonic()
        crowd = run_executions(engine, crowd_key, payload, DEMO_DUPLICATES, DEMO_DUPLICATES, args.timeout)
        owners = [v for v in crowd if v["status"] == "SUCCEEDED" and v["replayed"] is False]
        replayed = [v for v in crowd if v["replayed"] is True]
        gave_up = [v for v in crowd if v["error"] == WorkflowError.IN_PROGRESS]
        runs = engine.workflow.side_effect_runs(crowd_key)
        print(
            f"{STEP_INDENT}by status: {status_counts(crowd)}  (all done in {time.monotonic() - began:.1f} s)", file=out
        )
        print(
            f"{STEP_INDENT}{len(owners)} ran the side effect; {len(replayed)} replayed its result "
            f"({sum(1 for v in replayed if 'WaitForOwner' in v['path'])} of them waited for the owner first); "
            f"{runs_of} {runs}",
            file=out,
        )
        if gave_up:
            print(
                f"{STEP_INDENT}{len(gave_up)} gave up waiting ({WorkflowError.IN_PROGRESS}): a documented outcome "
                f"when the owner outlasts InProgressMaxPolls; a retry gets the stored result",
                file=out,
            )
        expect(
            f"exactly one side-effect run ({runs_of} {runs}), one owner, and no other failure",
            runs == 1 and len(owners) == 1 and len(owners) + len(replayed) + len(gave_up) == len(crowd),
        )

        other = {**payload, "demoVariant": 2}
        print(f"[4/{steps}] key {first_key} again with another payload: {compact(other)}", file=out)
        reused = run_one(first_key, other)
        runs = engine.workflow.side_effect_runs(first_key)
        expect(
            f"rejected with {WorkflowError.KEY_REUSED}; {not_run}: {runs_of} still {runs}",
            reused["error"] == WorkflowError.KEY_REUSED and runs == 1,
        )

        print(f"[5/{steps}] the record of {first_key}", file=out)
        record = engine.workflow.record(first_key)
        print("\n".join(f"    {line}" for line in record_lines(record or {})), file=out)
        expect(
            "COMPLETED, result stored",
            record is not None and record["status"] == RecordStatus.COMPLETED and record["resultStored"] is True,
        )
    if with_doors:
        with deploy(template, DOORS_OVERRIDES, DEMO_WAIT_TIME_SCALE, **options) as engine:
            run = DemoRun(engine, out, payload, args.timeout, expect, STEPS, done=WORKFLOW_STEPS)
            for door in DEMOED:
                assert door.demo is not None
                door.demo(run)
    failed = [what for what, ok in checks if not ok]
    if failed:
        print(f"demo FAILED: {len(failed)} of {len(checks)} expectations not met", file=out)
        return EXIT_FAILED
    print(f"demo passed: {len(checks)} of {len(checks)} expectations met", file=out)
    return 0
