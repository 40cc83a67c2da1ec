"""What the workflow's tests start and the records they plant, as other actors would leave them."""

from __future__ import annotations

import json
from typing import Any

from idemflow import keys
from idemflow.contract import RecordStatus
from idemflow.engine import Engine

ANY_PAYLOAD = {"note": "refused before the side effect"}


def stored_result(engine: Engine, key: str) -> Any:
    record = engine.workflow.record(key)
    assert record is not None and "result" in record, record
    return json.loads(record["result"])


def start(key: str, body: Any) -> dict[str, Any]:
    return {"idempotencyKey": key, "payload": body}


def tasks(engine: Engine, arn: str, resource_type: str) -> list[str]:
    """The task calls an execution made, e.g. ``["putItem", "getItem"]`` for resource type dynamodb."""
    return [
        e["taskScheduledEventDetails"]["resource"]
        for e in engine.history(arn)
        if "taskScheduledEventDetails" in e and e["taskScheduledEventDetails"]["resourceType"] == resource_type
    ]


def set_record(engine: Engine, key: str, **fields: str | None) -> None:
    """Change a record as another actor (or the passing of time) would."""
    record_key = keys.record_key(engine.workflow.scope, key)
    ddb = engine.client("dynamodb")
    for name, value in fields.items():
        if value is None:
            ddb.update_item(
                TableName=engine.workflow.idempotency_table,
                Key={"id": {"S": record_key}},
                UpdateExpression="REMOVE #f",
                ExpressionAttributeNames={"#f": name},
            )
        else:
            ddb.update_item(
                TableName=engine.workflow.idempotency_table,
                Key={"id": {"S": record_key}},
                UpdateExpression="SET #f = :v",
                ExpressionAttributeNames={"#f": name},
                ExpressionAttributeValues={":v": {"S": value}},
            )


PAST = "2000-01-01T00:00:00.000Z"
FUTURE = "2999-01-01T00:00:00.000Z"


def put_lock(engine: Engine, key: str, body: Any, **extra: str | None) -> None:
    """An IN_PROGRESS record as an execution that is running (or died) would have left it: by default
    with a live lease; ``leaseExpiresAt=PAST`` makes it a dead owner's, a field set to None is left out."""
    fields: dict[str, str | None] = {
        "status": RecordStatus.IN_PROGRESS.value,
        "owner": "arn:aws:states:us-east-1:123456789012:execution:other:crashed",
        "lockToken": "token-of-another-execution",
        "fingerprint": keys.fingerprint(body),
        "startedAt": "2026-01-01T00:00:00.000Z",
        "leaseExpiresAt": FUTURE,
        "expiresAt": FUTURE,
        **extra,
    }
    item: dict[str, Any] = {k: {"S": v} for k, v in fields.items() if v is not None}
    item["id"] = {"S": keys.record_key(engine.workflow.scope, key)}
    engine.client("dynamodb").put_item(TableName=engine.workflow.idempotency_table, Item=item)


def put_completed(
    engine: Engine, key: str, body: Any, *, expires: str, result: Any = None, stored: bool = True
) -> None:
    """A COMPLETED record as another execution left it (``result=None``: no result attribute)."""
    put_lock(engine, key, body, status=RecordStatus.COMPLETED.value, leaseExpiresAt=PAST, expiresAt=expires)
    ddb, record_key = engine.client("dynamodb"), keys.record_key(engine.workflow.scope, key)
    values: dict[str, Any] = {":s": {"BOOL": stored}}
    update = "SET resultStored = :s"
    if result is not None:
        values[":r"] = {"S": json.dumps(result)}
        update += ", #r = :r"
    ddb.update_item(
        TableName=engine.workflow.idempotency_table,
        Key={"id": {"S": record_key}},
        UpdateExpression=update,
        ExpressionAttributeValues=values,
        **({"ExpressionAttributeNames": {"#r": "result"}} if result is not None else {}),
    )
