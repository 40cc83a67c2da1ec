"""Clock arithmetic for the state machine, which JSONPath cannot do.

The time comes from the execution context (``$$.State.EnteredTime``), never from the caller and never
from this function's own clock: the function only adds. It sits on the path that acquires a lock,
never on the path that replays a completed result. Dependency-free on purpose (cold start ~ nothing).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any


class ClockInputInvalidError(ValueError):
    """The state machine passed a time or a duration this function cannot read."""


def _parse_time(value: Any) -> datetime:
    if not isinstance(value, str) or not value:
        raise ClockInputInvalidError(f"now must be an ISO 8601 timestamp, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ClockInputInvalidError(f"now must be an ISO 8601 timestamp, got {value!r}") from exc
    if parsed.tzinfo is None:
        raise ClockInputInvalidError(f"now must carry a time zone, got {value!r}")
    return parsed.astimezone(UTC)


def _parse_seconds(name: str, value: Any) -> int:
    try:
        seconds = int(str(value))
    except ValueError as exc:
        raise ClockInputInvalidError(f"{name} must be a whole number of seconds, got {value!r}") from exc
    if seconds < 0:
        raise ClockInputInvalidError(f"{name} must not be negative, got {seconds}")
    return seconds


def _iso(moment: datetime) -> str:
    # The same shape as AWS's context timestamps (millisecond precision, Z), so that Choice
    # timestamp rules compare like with like.
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def lease(now: Any, lease_seconds: int | str, window_seconds: int | str) -> dict[str, str]:
    """Times for a lock about to be acquired.

    ``now``: the execution's time in the one fixed format every stored time has, so that the
    acquisition's DynamoDB condition (``leaseExpiresAt <= now``, compared as strings) orders like time.
    ``leaseExpiresAt``: until then nobody takes the lock over. ``expiresAt``: until then a completed
    result is replayed; it counts from the end of the lease, so a result is replayed for at least the
    window after it completed. ``ttl``: the same moment as epoch seconds (a string, as DynamoDB's N).
    """
    start = _parse_time(now)
    lease_end = start + timedelta(seconds=_parse_seconds("leaseSeconds", lease_seconds))
    expires = lease_end + timedelta(seconds=_parse_seconds("windowSeconds", window_seconds))
    return {
        "now": _iso(start),
        "leaseExpiresAt": _iso(lease_end),
        "expiresAt": _iso(expires),
        "ttl": str(int(expires.timestamp())),
    }


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, str]:
    return lease(event.get("now"), event.get("leaseSeconds", ""), event.get("windowSeconds", ""))
