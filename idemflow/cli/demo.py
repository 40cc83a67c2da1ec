"""``idemflow demo``: the workflow's guarantees, shown and checked in nine steps on the embedded engine.

A first run, its duplicate served from the record, concurrent duplicates with one side-effect invocation,
a key reused with another payload rejected, and the record; then the HTTP door (a request, its retry, a key
reused) and the queue door (a message delivered twice). It counts invocations of the function the
workflow wraps (the template's ``SideEffectFunctionArn``), whatever that function does. Exits 1 if an
expectation fails.
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any, TextIO

from idemflow import client
from idemflow.cli.embedded import deploy, run_executions
from idemflow.cli.errors import EXIT_FAILED
from idemflow.cli.inputs import sample_payload
from idemflow.cli.output import compact, print_execution, record_lines, status_counts
from idemflow.contract import RecordStatus, WorkflowError
from idemflow.workflow import default_template

if TYPE_CHECKING:
    from idemflow.engine import Engine

# The demo's deployment: with waits scaled by 0.05, duplicates poll the owner's record every 50 ms for
# up to 1.5 s (30 polls) before failing with IdempotencyInProgress.
DEMO_OVERRIDES = {"InProgressPollSeconds": "1", "InProgressMaxPolls": "30"}
DEMO_WAIT_TIME_SCALE = 0.05
DEMO_DUPLICATES = 20
STEP_INDENT = "      "
# On an Express workflow the HTTP door answers with the outcome (StartSyncExecution), which the demo shows in one
# request; the queue door's intake waits for either type. A message comes back as soon as its visibility
# timeout (0 s) ends.
DOORS_OVERRIDES = {
    **DEMO_OVERRIDES,
    "HttpFrontDoor": "true",
    "WorkflowType": "EXPRESS",
    "QueueFrontDoor": "true",
    "TopicFrontDoor": "true",
    "QueueVisibilityTimeout": "0",
}
STEPS = 10


def http_post(url: str, key: str, payload: Any) -> tuple[int, dict[str, str], Any]:
    """A POST as any HTTP client sends it: the status, the headers and the JSON body of the answer."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "Idempotency-Key": key},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def outputs(engine: Engine) -> dict[str, str]:
    return dict(engine.stack.outputs) if engine.stack is not None else {}


def intake_deliveries(engine: Engine, count: int, timeout: float) -> list[dict[str, Any]]:
    """The deliveries of the doors' intake executions, once ``count`` of them have ended (or the timeout)."""
    sfn = engine.client("stepfunctions")
    intake = outputs(engine)["IntakeStateMachineArn"]
    deadline = time.monotonic() + timeout
    succeeded: dict[str, list[dict[str, Any]]] = {}  # each succeeded intake execution described once
    while True:
        found, _ = client.intake_deliveries(sfn, intake, succeeded)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    checks: list[tuple[str, bool]] = []

    def expect(what: str, ok: bool) -> None:
        checks.append((what, ok))
        print(f"{STEP_INDENT}[{'ok' if ok else 'FAILED'}] {what}", file=out)

    first_key, crowd_key = "order-1001", "order-2002"
    template = default_template()
    print(
        f"idemflow demo: {template.name} on the embedded engine (waits x{DEMO_WAIT_TIME_SCALE:g}, "
        f"InProgressPollSeconds={DEMO_OVERRIDES['InProgressPollSeconds']}, "
        f"InProgressMaxPolls={DEMO_OVERRIDES['InProgressMaxPolls']})",
        file=out,
        flush=True,
    )
    with deploy(template, DEMO_OVERRIDES, DEMO_WAIT_TIME_SCALE) as engine:

        def run_one(key: str, payload: Any) -> dict[str, Any]:
            (view,) = run_executions(engine, key, payload, 1, 1, args.timeout)
            print_execution(view, STEP_INDENT, out, indent=STEP_INDENT)
            return view

        payload = sample_payload(template)
        function = engine.workflow.side_effect_function

        print(f"[1/{STEPS}] a first run: key {first_key}, {compact(payload)}, side effect {function}", file=out)
        first = run_one(first_key, payload)
        expect(
            "ran once: side-effect invocations 1",
            first["status"] == "SUCCEEDED"
            and first["replayed"] is False
            and engine.workflow.side_effect_runs(first_key) == 1,
        )

        print(f"[2/{STEPS}] its duplicate (same key, same payload) is served from the record", file=out)
        duplicate = run_one(first_key, payload)
        runs = engine.workflow.side_effect_runs(first_key)
        expect(
            f"replayed=true, same result, function not invoked: side-effect invocations still {runs}",
            duplicate["replayed"] is True and duplicate["result"] == first["result"] and runs == 1,
        )

        print(f"[3/{STEPS}] {DEMO_DUPLICATES} concurrent duplicates of a new key ({crowd_key})", file=out, flush=True)
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
            f"side-effect invocations {runs}",
            file=out,
        )
        if gave_up:
            print(
                f"{STEP_INDENT}{len(gave_up)} gave up waiting ({WorkflowError.IN_PROGRESS}): a documented outcome "
                f"when the owner outlasts InProgressMaxPolls; a retry gets the stored result",
                file=out,
            )
        expect(
            "exactly one side-effect invocation, one owner, and no other failure",
            runs == 1 and len(owners) == 1 and len(owners) + len(replayed) + len(gave_up) == len(crowd),
        )

        other = {**payload, "demoVariant": 2}
        print(f"[4/{STEPS}] key {first_key} again with another payload: {compact(other)}", file=out)
        reused = run_one(first_key, other)
        runs = engine.workflow.side_effect_runs(first_key)
        expect(
            f"rejected with {WorkflowError.KEY_REUSED}; function not invoked: side-effect invocations still {runs}",
            reused["error"] == WorkflowError.KEY_REUSED and runs == 1,
        )

        print(f"[5/{STEPS}] the record of {first_key}", file=out)
        record = engine.workflow.record(first_key)
        print("\n".join(f"    {line}" for line in record_lines(record or {})), file=out)
        expect(
            "COMPLETED, result stored",
            record is not None and record["status"] == RecordStatus.COMPLETED and record["resultStored"] is True,
        )
    http_key = "order-3003"
    with deploy(template, DOORS_OVERRIDES, DEMO_WAIT_TIME_SCALE) as engine:
        ((method, url),) = engine.endpoints()
        print(f"[6/{STEPS}] the HTTP door (HttpFrontDoor=true, Express): {method} {url}", file=out)
        print(f"{STEP_INDENT}Idempotency-Key: {http_key}, body {compact(payload)}", file=out)
        status, _, body = http_post(url, http_key, payload)
        print(f"{STEP_INDENT}{status}, result {compact(body.get('result'))}", file=out)
        runs = engine.workflow.side_effect_runs(http_key)
        expect("200 with the side effect's result, invoked once", status == 200 and runs == 1)

        print(f"[7/{STEPS}] the same request again (a client retrying after a timeout)", file=out)
        again, again_headers, again_body = http_post(url, http_key, payload)
        replayed_header = again_headers.get("Idempotent-Replayed")
        print(f"{STEP_INDENT}{again}, Idempotent-Replayed: {replayed_header}", file=out)
        expect(
            "200, Idempotent-Replayed: true, the first answer's body again, function not invoked again",
            again == 200
            and replayed_header == "true"
            and again_body == body
            and engine.workflow.side_effect_runs(http_key) == 1,
        )

        print(f"[8/{STEPS}] the same key with another body", file=out)
        other_status, other_headers, problem = http_post(url, http_key, {**payload, "demoVariant": 2})
        print(f"{STEP_INDENT}{other_status} {other_headers.get('Content-Type')}: {compact(problem)}", file=out)
        expect(
            f"422 application/problem+json, {WorkflowError.KEY_REUSED}",
            other_status == 422
            and other_headers.get("Content-Type") == "application/problem+json"
            and problem.get("error") == WorkflowError.KEY_REUSED,
        )

        def one_run_of_two_deliveries(key: str, deliveries: list[dict[str, Any]]) -> None:
            """Show the key's deliveries and expect two, one run and one replay, and one side effect."""
            of_key = [d for d in deliveries if d.get("idempotencyKey") == key]
            for delivery in of_key:
                print(f"{STEP_INDENT}delivery of message {delivery.get('sourceId')}: {compact(delivery)}", file=out)
            runs = engine.workflow.side_effect_runs(key)
            expect(
                f"two deliveries, one COMPLETED run and one replayed: side-effect invocations {runs}",
                sorted(str(d.get("replayed")) for d in of_key) == ["False", "True"]
                and all(d.get("outcome") == "COMPLETED" for d in of_key)
                and runs == 1,
            )

        queue_key = "order-4004"
        print(
            f"[9/{STEPS}] the queue door (QueueFrontDoor=true): a message with key {queue_key} is delivered twice "
            "(the pipe stops before deleting it; its visibility timeout ends)",
            file=out,
            flush=True,
        )
        engine.faults.keep_batch_next("QueuePipe")
        sqs = engine.client("sqs")
        sqs.send_message(
            QueueUrl=outputs(engine)["RequestQueueUrl"],
            MessageBody=json.dumps({"idempotencyKey": queue_key, **payload}),
        )
        one_run_of_two_deliveries(queue_key, intake_deliveries(engine, 2, args.timeout))

        topic_key = "order-5005"
        print(
            f"[10/{STEPS}] the topic door (TopicFrontDoor=true): a message with key {topic_key} (a message "
            "attribute) is published twice (a producer's retry, or SNS delivering it again)",
            file=out,
            flush=True,
        )
        sns = engine.client("sns")
        for _ in range(2):
            sns.publish(
                TopicArn=outputs(engine)["RequestTopicArn"],
                Message=json.dumps(payload),
                MessageAttributes={"idempotencyKey": {"DataType": "String", "StringValue": topic_key}},
            )
        one_run_of_two_deliveries(topic_key, intake_deliveries(engine, 4, args.timeout))
    failed = [what for what, ok in checks if not ok]
    if failed:
        print(f"demo FAILED: {len(failed)} of {len(checks)} expectations not met", file=out)
        return EXIT_FAILED
    print(f"demo passed: {len(checks)} of {len(checks)} expectations met", file=out)
    return 0
