from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.clock.app import ClockInputInvalidError, lambda_handler, lease


def test_lease_adds_lease_then_window_to_the_context_time() -> None:
    out = lease("2026-11-23T08:00:00.250Z", 300, 86400)
    assert out == {
        "now": "2026-11-23T08:00:00.250Z",
        "leaseExpiresAt": "2026-11-23T08:05:00.250Z",
        "expiresAt": "2026-11-24T08:05:00.250Z",
        "ttl": str(int(datetime(2026, 11, 24, 8, 5, 0, tzinfo=UTC).timestamp())),
    }


def test_accepts_offset_timestamps_like_moto_and_numbers_as_strings() -> None:
    event = {"now": "2026-11-23T09:00:00+01:00", "leaseSeconds": "60", "windowSeconds": "0"}
    out = lambda_handler(event, None)
    assert out["now"] == "2026-11-23T08:00:00.000Z", "every stored time has one fixed format"
    assert out["leaseExpiresAt"] == "2026-11-23T08:01:00.000Z"
    assert out["expiresAt"] == out["leaseExpiresAt"]


@pytest.mark.parametrize(
    "event",
    [
        {"now": "yesterday", "leaseSeconds": 1, "windowSeconds": 1},
        {"now": "2026-11-23T08:00:00", "leaseSeconds": 1, "windowSeconds": 1},
        {"now": None, "leaseSeconds": 1, "windowSeconds": 1},
        {"now": "2026-11-23T08:00:00Z", "leaseSeconds": "abc", "windowSeconds": 1},
        {"now": "2026-11-23T08:00:00Z", "leaseSeconds": 1, "windowSeconds": -5},
    ],
)
def test_bad_input_is_a_named_error(event: dict[str, object]) -> None:
    with pytest.raises(ClockInputInvalidError):
        lambda_handler(event, None)
