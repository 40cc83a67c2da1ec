"""What the operator's commands print, from the values they read: a dead letter's reason in one line, --since."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

import pytest

from idemflow.cli.operators import dead_letter_reason, dead_letter_row, one_line, parse_since

ARN = "arn:aws:states:us-east-1:123456789012:execution:idemflow-IdempotentStateMachine:x"
LAMBDA_CAUSE = json.dumps(
    {
        "errorMessage": "card declined\nsee the ledger",
        "errorType": "PaymentDeclined",
        "stackTrace": ['  File "/var/task/app.py", line 9, in handler\n    raise PaymentDeclined()\n'],
    }
)


def test_a_lambda_errors_message_stands_for_its_cause_and_the_execution_is_found() -> None:
    message = f"PaymentDeclined: {LAMBDA_CAUSE} (execution {ARN})"

    reason, execution = dead_letter_reason("PaymentDeclined", message)

    assert (one_line(reason, 120), execution) == ("card declined", ARN)


def test_a_reason_without_an_execution_is_kept_as_it_is() -> None:
    message = "IdempotencyPayloadInvalid: the message body is not a JSON object or array"

    assert dead_letter_reason("IdempotencyPayloadInvalid", message) == (
        "the message body is not a JSON object or array",
        None,
    )


def test_one_line_takes_the_first_non_empty_line_and_cuts_it() -> None:
    assert one_line("\n  first line  \nsecond", 120) == "first line"
    assert one_line("x" * 200, 20) == "x" * 17 + "..."
    assert one_line(None, 10) == one_line("", 10) == "-"


def test_a_rules_dead_letter_has_its_reason_and_no_execution() -> None:
    # What EventBridge puts on a rule target's dead letter (eb-rule-dlq): no intake, no execution.
    message = {
        "MessageId": "m-1",
        "Body": '{"detail": {}}',
        "MessageAttributes": {
            "ERROR_CODE": {"StringValue": "SDK_CLIENT_ERROR", "DataType": "String"},
            "ERROR_MESSAGE": {"StringValue": "Unable to invoke\nmore", "DataType": "String"},
            "RULE_ARN": {"StringValue": "arn:aws:events:us-east-1:1:rule/r", "DataType": "String"},
        },
        "Attributes": {"SentTimestamp": "0"},
    }

    row = dead_letter_row(message, 120)

    assert (row["errorCode"], row["reason"], row["executionArn"]) == ("SDK_CLIENT_ERROR", "Unable to invoke", None)
    assert (row["ruleArn"], row["sent"]) == ("arn:aws:events:us-east-1:1:rule/r", "1970-01-01 00:00:00")


def test_since_takes_an_age_or_an_iso_time() -> None:
    now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert parse_since("30m", now) == datetime(2024, 5, 1, 11, 30, tzinfo=UTC)
    assert parse_since("2d", now) == datetime(2024, 4, 29, 12, 0, tzinfo=UTC)
    assert parse_since("2024-05-01T10:00:00Z", now) == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert parse_since("2024-05-01T10:00:00", now) == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    with pytest.raises(argparse.ArgumentTypeError, match="an age"):
        parse_since("yesterday", now)
