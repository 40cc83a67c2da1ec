"""What each path of the workflow costs, counted from execution histories on the embedded engine.

``python -m bench.costs`` prints the README's cost table: per path, the state transitions (what
Standard workflows are billed by: one per state entered, retries would add one each), the DynamoDB
requests and the Lambda invocations of the state machine itself (the side effect's own calls are
the user's, and not counted). ``tests/functional/test_costs.py`` checks the README's table against it.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idemflow import keys
from idemflow.contract import RecordStatus, sample_payload
from idemflow.engine import Engine

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the checkout bench/ is in
TEMPLATE_PATH = PROJECT_ROOT / "template.yaml"

PAST = "2000-01-01T00:00:00.000Z"
FUTURE = "2999-01-01T00:00:00.000Z"
PAYLOAD = sample_payload(TEMPLATE_PATH)


@dataclass(frozen=True)
class Cost:
    path: str
    transitions: int
    dynamodb: int
    lambdas: int
    outcome: str


def _put_record(engine: Engine, key: str, **fields: str) -> None:
    item: dict[str, Any] = {
        "id": {"S": keys.record_key(engine.scope, key)},
        "owner": {"S": "arn:aws:states:us-east-1:123456789012:execution:other:owner"},
        "lockToken": {"S": "another-execution"},
        "fingerprint": {"S": keys.fingerprint(PAYLOAD)},
        "startedAt": {"S": "2026-01-01T00:00:00.000Z"},
        "expiresAt": {"S": FUTURE},
    }
    item.update({k: {"S": v} for k, v in fields.items()})
    engine.client("dynamodb").put_item(TableName=engine.idempotency_table, Item=item)


def _first_run(engine: Engine, key: str) -> None:
    pass


def _duplicate(engine: Engine, key: str) -> None:
    engine.run({"idempotencyKey": key, "payload": PAYLOAD})


def _wait_then_cached(engine: Engine, key: str) -> None:
    engine.run({"idempotencyKey": key, "payload": PAYLOAD})
    record_key = keys.record_key(engine.scope, key)
    ddb = engine.client("dynamodb")

    def status(value: str) -> Callable[[], None]:
        return lambda: ddb.update_item(
            TableName=engine.idempotency_table,
            Key={"id": {"S": record_key}},
            UpdateExpression="SET #s = :v",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":v": {"S": value}},
        )

    status(RecordStatus.IN_PROGRESS.value)()
    # The first read sees the owner at work, the read after one poll its completion.
    for state in ("AcquireLock", "ReadRecord"):  # whichever the definition reads with first
        engine.faults.before_dynamodb(state, lambda: None)
    engine.faults.before_dynamodb("ReadRecord", status(RecordStatus.COMPLETED.value))


def _takeover(engine: Engine, key: str) -> None:
    _put_record(engine, key, status=RecordStatus.IN_PROGRESS.value, leaseExpiresAt=PAST)


def _failure(engine: Engine, key: str) -> None:
    engine.faults.fail_next(engine.side_effect_function, 1, "SideEffectDeclinedError", "declined")


PATHS: dict[str, Callable[[Engine, str], None]] = {
    "first run": _first_run,
    "duplicate of a completed run": _duplicate,
    "duplicate that waits one poll for the owner": _wait_then_cached,
    "takeover of a dead owner's lock": _takeover,
    "side effect fails (lock released)": _failure,
}


def measure(engine: Engine) -> list[Cost]:
    costs = []
    for name, prepare in PATHS.items():
        engine.faults.clear()
        key = f"cost-{uuid.uuid4()}"
        prepare(engine, key)
        outcome = engine.run({"idempotencyKey": key, "payload": PAYLOAD})
        engine.faults.clear()
        history = engine.history(outcome.arn)
        scheduled = [
            e["taskScheduledEventDetails"]["resourceType"] for e in history if "taskScheduledEventDetails" in e
        ]
        costs.append(
            Cost(
                path=name,
                transitions=sum(1 for e in history if e["type"].endswith("StateEntered")),
                dynamodb=scheduled.count("dynamodb"),
                lambdas=scheduled.count("lambda"),
                outcome=outcome.status if outcome.status == "SUCCEEDED" else str(outcome.error),
            )
        )
    return costs


# -- through the HTTP door ------------------------------------------------------------------------------------

HTTP_DOOR = {"HttpFrontDoor": "true", "WorkflowType": "EXPRESS"}


@dataclass(frozen=True)
class HttpCost:
    request: str
    status: int
    api_requests: int
    step_functions_requests: int
    lambdas: int


def _post(url: str, key: str | None, payload: Any) -> int:
    headers = {"Content-Type": "application/json", **({} if key is None else {"Idempotency-Key": key})}
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def measure_http(engine: Engine) -> list[HttpCost]:
    """Per kind of request to the HTTP door (an engine deployed with :data:`HTTP_DOOR`): the API Gateway
    requests, the Step Functions requests it makes (StartSyncExecution) and the Lambda invocations."""
    from idemflow.engine.services.apigateway import ApiGateway

    door = engine.service(ApiGateway)
    ((_, url),) = engine.endpoints()
    key = f"cost-{uuid.uuid4()}"
    requests: list[tuple[str, str | None, Any]] = [
        ("first request", key, PAYLOAD),
        ("the same request again", key, PAYLOAD),
        ("the same key, another body", key, {**PAYLOAD, "costVariant": 2}),
        ("no Idempotency-Key", None, PAYLOAD),
    ]
    costs = []
    for name, sent_key, payload in requests:
        before = (door.requests, sum(door.integration_calls.values()), sum(engine.invocation_counts().values()))
        status = _post(url, sent_key, payload)
        after = (door.requests, sum(door.integration_calls.values()), sum(engine.invocation_counts().values()))
        api, sfn, lambdas = (b - a for a, b in zip(before, after, strict=True))
        costs.append(HttpCost(name, status, api, sfn, lambdas))
    return costs


def http_table(costs: list[HttpCost]) -> str:
    lines = [
        "| HTTP request | status | API Gateway requests | Step Functions requests | Lambda invocations |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {c.request} | {c.status} | {c.api_requests} | {c.step_functions_requests} | {c.lambdas} |" for c in costs
    ]
    return "\n".join(lines)


def table(costs: list[Cost]) -> str:
    lines = [
        "| path | state transitions | DynamoDB requests | Lambda invocations |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c.path} | {c.transitions} | {c.dynamodb} | {c.lambdas} |" for c in costs]
    return "\n".join(lines)


def main() -> int:
    with Engine(wait_time_scale=0) as engine:
        print(table(measure(engine)))
    with Engine(wait_time_scale=0, parameter_overrides=HTTP_DOOR) as engine:
        print()
        print(http_table(measure_http(engine)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
