"""What the fingerprint covers (FingerprintPath): by default the whole payload, so a producer's second send
that differs only in metadata (a send time) is a reused key; narrowed to a part, that send replays, while a
change inside the part is still refused. The definition reads the parameter (DeriveKeys fingerprints it,
ValidateInput refuses a payload without it), as Powertools' ``payload_validation_jmespath`` does."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from idemflow.contract import WorkflowError
from idemflow.engine import Engine
from tests.charge.side_effect import payment

WHOLE, ORDER = "$.payload", "$.payload.order"


@pytest.fixture(scope="module", params=[WHOLE, ORDER], ids=["whole-payload", "order-only"])
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """The workflow with each FingerprintPath: the default (the whole payload), and the order alone."""
    with Engine(parameter_overrides={"FingerprintPath": request.param}, wait_time_scale=0) as running:
        yield running


def covers(engine: Engine) -> str:
    return engine.parameter_overrides["FingerprintPath"]


def sent(at: str, amount: int = 4200) -> dict[str, object]:
    """A producer's message: the charge's fields, the order they belong to, and when it was sent."""
    return {**payment(amount=amount), "order": {"id": "o-17", "amount": amount}, "sentAt": at}


def test_a_second_send_differing_only_in_its_send_time_replays_unless_the_whole_payload_is_fingerprinted(
    engine: Engine,
) -> None:
    key = f"order-{uuid.uuid4()}"
    first = engine.run({"idempotencyKey": key, "payload": sent("2026-11-25T10:00:00Z")})
    second = engine.run({"idempotencyKey": key, "payload": sent("2026-11-25T10:00:05Z")})

    assert (first.status, first.replayed) == ("SUCCEEDED", False)
    if covers(engine) == WHOLE:
        assert (second.status, second.error) == ("FAILED", WorkflowError.KEY_REUSED)
    else:
        assert (second.status, second.replayed) == ("SUCCEEDED", True)
        assert second.output["result"] == first.output["result"]
    assert engine.workflow.side_effect_runs(key) == 1


def test_a_change_inside_the_fingerprinted_part_is_a_reused_key(engine: Engine) -> None:
    key = f"order-{uuid.uuid4()}"
    engine.run({"idempotencyKey": key, "payload": sent("2026-11-25T10:00:00Z")})
    other = engine.run({"idempotencyKey": key, "payload": sent("2026-11-25T10:00:00Z", amount=9900)})

    assert (other.status, other.error) == ("FAILED", WorkflowError.KEY_REUSED)
    assert engine.workflow.side_effect_runs(key) == 1


def test_a_payload_without_the_fingerprinted_part_is_refused_before_anything_is_written(engine: Engine) -> None:
    key = f"order-{uuid.uuid4()}"
    outcome = engine.run({"idempotencyKey": key, "payload": payment()})  # no "order"

    if covers(engine) == WHOLE:
        assert outcome.status == "SUCCEEDED"
        return
    assert (outcome.status, outcome.error) == ("FAILED", WorkflowError.PAYLOAD_INVALID)
    assert outcome.path == ["ValidateInput", "PayloadInvalid"]
    assert engine.workflow.record(key) is None
    assert engine.workflow.side_effect_runs(key) == 0
