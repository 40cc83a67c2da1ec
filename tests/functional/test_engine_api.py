"""Engine.start_execution and Engine.describe call moto's Step Functions backend directly: the same
answers, and the same errors, as the API (engine.client), execution by execution."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from idemflow import client, keys
from idemflow.contract import RecordStatus
from idemflow.engine import Engine

from .side_effects import DEFAULT

PAYLOAD = DEFAULT.payload


def api_view(engine: Engine, arn: str) -> dict[str, Any]:
    desc = engine.client("stepfunctions").describe_execution(executionArn=arn)
    return {k: desc.get(k) for k in ("name", "status", "input", "output", "error", "cause")}


@pytest.mark.parametrize(
    "execution_input",
    [
        {"idempotencyKey": "engine-api-{}", "payload": PAYLOAD},  # succeeds
        {"idempotencyKey": "", "payload": PAYLOAD},  # fails: IdempotencyKeyInvalid
    ],
    ids=["succeeded", "failed"],
)
def test_describe_answers_like_the_api(engine: Engine, execution_input: dict[str, Any]) -> None:
    if execution_input["idempotencyKey"]:
        execution_input = {**execution_input, "idempotencyKey": execution_input["idempotencyKey"].format(uuid.uuid4())}
    outcome = engine.run(execution_input)

    api = api_view(engine, outcome.arn)
    assert api["status"] in {"SUCCEEDED", "FAILED"}
    assert (outcome.name, outcome.status, outcome.error, outcome.cause) == (
        api["name"],
        api["status"],
        api["error"],
        api["cause"],
    )
    assert outcome.input == json.loads(api["input"])
    assert outcome.output == (json.loads(api["output"]) if api["output"] else None)
    # The path, read from the backend, is the API history's stateEntered events in order.
    api_path = client.path(engine.history(outcome.arn))
    assert outcome.path == engine.path(outcome.arn) == api_path and api_path[0] == "ValidateInput"


def test_the_path_of_a_replayed_duplicate_is_the_apis(engine: Engine) -> None:
    key = f"engine-api-{uuid.uuid4()}"
    engine.run({"idempotencyKey": key, "payload": PAYLOAD})
    duplicate = engine.run({"idempotencyKey": key, "payload": PAYLOAD})

    assert duplicate.output["replayed"] is True
    assert duplicate.path == client.path(engine.history(duplicate.arn))
    assert "RunSideEffect" not in duplicate.path and "ReadRecord" in duplicate.path


def test_start_errors_are_client_errors_like_the_api(engine: Engine) -> None:
    name = f"engine-api-{uuid.uuid4()}"
    engine.run({"idempotencyKey": name, "payload": PAYLOAD}, name=name)

    with pytest.raises(ClientError) as direct:
        engine.start_execution({"idempotencyKey": name, "payload": DEFAULT.other_payload}, name=name)
    with pytest.raises(ClientError) as api:
        engine.client("stepfunctions").start_execution(
            stateMachineArn=engine.workflow.state_machine_arn, name=name, input=json.dumps({"other": 1})
        )
    with pytest.raises(ClientError) as missing:
        engine.describe(
            engine.workflow.state_machine_arn.replace(":stateMachine:", ":execution:") + ":no-such-execution"
        )

    assert direct.value.response["Error"]["Code"] == api.value.response["Error"]["Code"] == "ExecutionAlreadyExists"
    assert direct.value.operation_name == "StartExecution"
    assert missing.value.response["Error"]["Code"] == "ExecutionDoesNotExist"


def test_invocations_are_counted_per_function_and_records_are_read_per_scope(engine: Engine) -> None:
    key = f"engine-api-{uuid.uuid4()}"
    stack = engine.stack
    assert stack is not None
    clock = next(f.name for f in stack.functions.values() if f.name != engine.workflow.side_effect_function)
    before = engine.workflow.invocation_counts()

    engine.run({"idempotencyKey": key, "payload": PAYLOAD})
    engine.run({"idempotencyKey": key, "payload": PAYLOAD})

    after = engine.workflow.invocation_counts()
    # A first run invokes the clock and the side effect once each; its duplicate invokes neither.
    assert {name: after[name] - before[name] for name in after} == {engine.workflow.side_effect_function: 1, clock: 1}
    assert engine.workflow.invocation_counts(key) == {engine.workflow.side_effect_function: 1, clock: 0}
    assert engine.workflow.side_effect_runs(key, clock) == 0
    ours = [r for r in engine.workflow.records() if r == engine.workflow.record(key)]
    assert len(ours) == 1 and ours[0]["status"] == RecordStatus.COMPLETED
    assert (
        engine.workflow.records(scope="another-scope") == []
        and engine.workflow.record(key, scope="another-scope") is None
    )
    assert all(r["id"].startswith(f"{engine.workflow.scope}#") for r in engine.workflow.records())


def test_engine_record_reads_the_backend_as_a_consistent_get_item_does(engine: Engine) -> None:
    completed, locked, missing = (f"engine-api-{uuid.uuid4()}" for _ in range(3))
    engine.run({"idempotencyKey": completed, "payload": PAYLOAD})
    engine.faults.crash_next(engine.workflow.side_effect_function)  # the outcome is unknown: the lock stays
    engine.run({"idempotencyKey": locked, "payload": PAYLOAD})

    def through_the_api(key: str, scope: str = engine.workflow.scope) -> dict[str, Any] | None:
        return client.record(engine.client("dynamodb"), engine.workflow.idempotency_table, scope, key)

    for key in (completed, locked, missing):
        assert engine.workflow.record(key) == through_the_api(key), key
    assert engine.workflow.record(completed)["status"] == RecordStatus.COMPLETED  # type: ignore[index]
    assert engine.workflow.record(locked)["status"] == RecordStatus.IN_PROGRESS  # type: ignore[index]
    assert engine.workflow.record(missing) is None
    other_scope = engine.workflow.record(completed, scope="another-scope")
    assert other_scope is None and through_the_api(completed, scope="another-scope") is None


def test_a_flat_item_is_read_from_the_backend_with_the_values_and_types_the_api_gives(engine: Engine) -> None:
    # Tables.item turns a flat item's attributes into plain values itself (the checker reads a record at
    # every step): each type as client.plain_item makes it of a consistent GetItem, True not 1, 1000 not 1e3.
    dynamodb, table = engine.client("dynamodb"), f"flat-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    numbers = {f"n{i}": {"N": n} for i, n in enumerate(["0", "-0", "7", "-12", "2.50", "1e3", "1.5E-2", "1" * 38])}
    item = {"pk": {"S": "é"}, "t": {"BOOL": True}, "f": {"BOOL": False}, "z": {"NULL": True}, **numbers}
    dynamodb.put_item(TableName=table, Item=item)

    read = engine.tables.item(table, {"pk": {"S": "é"}})
    answered = dynamodb.get_item(TableName=table, Key={"pk": {"S": "é"}}, ConsistentRead=True)["Item"]

    assert read is not None
    assert {k: (type(v), v) for k, v in read.items()} == {
        k: (type(v), v) for k, v in client.plain_item(answered).items()
    }
    assert read["n5"] == 1000 and read["t"] is True and read["z"] is None


def scanned_keys(engine: Engine, table: str, names: tuple[str, ...]) -> set[tuple[tuple[str, str, Any], ...]]:
    items = engine.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]
    return {tuple((name, *next(iter(item[name].items()))) for name in names) for item in items}


def test_item_keys_are_a_scans_keys_and_delete_items_deletes_those_alone(engine: Engine) -> None:
    # Tables.keys and delete (the interleaving checker's let_go) read and delete through moto's
    # backend: the same keys as a Scan through the API, a range key included, and the same deletions.
    dynamodb, table = engine.client("dynamodb"), f"keys-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "n", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "n", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for pk, n in [("a", "1"), ("a", "2"), ("b", "1")]:
        dynamodb.put_item(TableName=table, Item={"pk": {"S": pk}, "n": {"N": n}, "other": {"S": "x"}})

    found = engine.tables.keys(table)
    assert found == scanned_keys(engine, table, ("pk", "n")) and len(found) == 3

    engine.tables.delete(table, [(("pk", "S", "a"), ("n", "N", "2"))])
    assert scanned_keys(engine, table, ("pk", "n")) == found - {(("pk", "S", "a"), ("n", "N", "2"))}

    key = f"engine-api-{uuid.uuid4()}"
    engine.run({"idempotencyKey": key, "payload": PAYLOAD})
    records = engine.tables.keys(engine.workflow.idempotency_table)
    assert records == scanned_keys(engine, engine.workflow.idempotency_table, ("id",))
    assert (("id", "S", keys.record_key(engine.workflow.scope, key)),) in records
