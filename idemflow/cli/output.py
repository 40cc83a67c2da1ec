"""What the commands print: executions and their summary, idempotency records, history tables, progress.

An execution is printed from a *view*: the dict that ``--json`` writes as is, built alike from the
embedded engine's outcomes and from DescribeExecution responses.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from idemflow import client

if TYPE_CHECKING:
    from idemflow.engine import ExecutionOutcome

RECORD_FIELDS = "status owner lockToken fingerprint startedAt leaseExpiresAt expiresAt ttl completedAt resultStored"
HISTORY_HEADER = ("id", "time (UTC)", "type", "state", "detail")


def compact(value: Any) -> str:
    """``value`` as one line of JSON, unicode as is."""
    return json.dumps(value, ensure_ascii=False)


def print_json(value: Any, out: TextIO, **options: Any) -> None:
    """``value`` as indented JSON, unicode as is (``options``: more of json.dumps')."""
    print(json.dumps(value, indent=2, ensure_ascii=False, **options), file=out)


def _arrow(stream: TextIO) -> str:
    try:
        "→".encode(stream.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return " -> "
    return " → "


# -- executions ---------------------------------------------------------------------------------------
def _view(
    name: str,
    arn: str,
    status: str,
    output: Any,
    error: str | None,
    cause: str | None,
    path: list[str] | None,
    **extra: Any,
) -> dict[str, Any]:
    """One execution as printed and as written by --json."""
    replayed = output.get("replayed") if isinstance(output, dict) else None
    result = output.get("result") if isinstance(output, dict) else None
    return {
        "name": name,
        "executionArn": arn,
        "status": status,
        "replayed": replayed,
        "result": result,
        "output": output,
        "error": error,
        "cause": cause,
        "path": path,
        **extra,
    }


def outcome_view(outcome: ExecutionOutcome, **extra: Any) -> dict[str, Any]:
    """The view of an execution on the embedded engine."""
    return _view(
        outcome.name, outcome.arn, outcome.status, outcome.output, outcome.error, outcome.cause, outcome.path, **extra
    )


def description_view(description: dict[str, Any], path: list[str] | None, **extra: Any) -> dict[str, Any]:
    """The view of a DescribeExecution (or StartSyncExecution) response."""
    return _view(
        description.get("name", ""),
        description["executionArn"],
        description["status"],
        client.parse_output(description),
        description.get("error"),
        description.get("cause"),
        path,
        **extra,
    )


def readable_cause(cause: str | None) -> str | None:
    """A failure's cause as a person reads it: a Lambda error's ``errorMessage`` without its ``stackTrace``
    (the whole cause stays in --json and in the execution's history)."""
    if cause is None or not cause.startswith("{"):
        return cause
    try:
        parsed = json.loads(cause)
    except ValueError:
        return cause
    if isinstance(parsed, dict) and isinstance(parsed.get("errorMessage"), str):
        return str(parsed["errorMessage"])
    return cause


def print_execution(view: dict[str, Any], label: str, out: TextIO, indent: str = "    ") -> None:
    """The status line after ``label``, then the result and the path, each indented by ``indent``."""
    status = view["status"]
    if status == "SUCCEEDED":
        head = f"{label}{status}  replayed={json.dumps(view['replayed'])}"
    else:
        head = f"{label}{status}  {view['error'] or '-'}: {readable_cause(view['cause']) or '-'}"
    if view.get("seconds") is not None:
        head += f"  ({view['seconds']:.2f} s)"
    print(head, file=out)
    output = view["output"]
    if isinstance(output, dict) and output.get("resultStored") is False:
        print(f"{indent}result: not stored (too large); the side effect ran once", file=out)
    elif status == "SUCCEEDED":
        print(f"{indent}result: {compact(view['result'])}", file=out)
    if view["path"]:
        print(f"{indent}path:   {_arrow(out).join(view['path'])}", file=out)


def status_counts(views: list[dict[str, Any]]) -> str:
    """How many executions ended how, most frequent first: ``3 SUCCEEDED, 1 FAILED SomeError``."""
    counts = Counter(v["status"] if v["status"] == "SUCCEEDED" else f"{v['status']} {v['error']}" for v in views)
    return ", ".join(f"{n} {status}" for status, n in counts.most_common())


def progress(stream: TextIO, name: str, every: float = 5.0) -> Callable[[float, str], None]:
    """A ``client.wait`` progress callback: a line on ``stream`` at most every ``every`` seconds."""
    last = [0.0]

    def report(elapsed: float, status: str) -> None:
        if elapsed - last[0] >= every:
            last[0] = elapsed
            print(f"idemflow: {name} still {status} after {elapsed:.0f} s", file=stream, flush=True)

    return report


# -- records --------------------------------------------------------------------------------------------
def record_lines(record: dict[str, Any]) -> list[str]:
    """An idempotency record, a field a line, then its result as indented JSON."""
    lines = []
    for field in RECORD_FIELDS.split():
        value = record.get(field)
        if field == "ttl" and isinstance(value, int):
            value = f"{value} ({datetime.fromtimestamp(value, UTC):%Y-%m-%d %H:%M:%S} UTC)"
        elif isinstance(value, bool):
            value = json.dumps(value)
        lines.append(f"  {field + ':':<16}{'-' if value is None else value}")
    if "result" in record:
        result = record["result"]
        try:
            result = json.dumps(json.loads(result), indent=2, ensure_ascii=False)
        except (TypeError, ValueError):
            result = str(result)
        lines.append("  result:")
        lines.extend(f"    {line}" for line in result.splitlines())
    return lines


# -- history --------------------------------------------------------------------------------------------
def _event_row(event: dict[str, Any], state: str) -> tuple[str, str, str, str, str]:
    details = next((v for k, v in event.items() if k.endswith("EventDetails") and isinstance(v, dict)), {})
    if "error" in details or "cause" in details:
        detail = f"{details.get('error', '')}: {details.get('cause', '')}"
    elif "resourceType" in details:
        detail = f"{details['resourceType']}:{details.get('resource', '')}"
    elif event["type"] in ("ExecutionStarted", "ExecutionSucceeded"):
        detail = str(details.get("input", details.get("output", "")))
    else:
        detail = ""
    timestamp = event["timestamp"]
    when = timestamp.astimezone(UTC).strftime("%H:%M:%S.%f")[:-3] if isinstance(timestamp, datetime) else ""
    return str(event["id"]), when, event["type"], state, detail.replace("\n", " ")


def history_table(events: list[dict[str, Any]], width: int) -> list[str]:
    """An execution's events as aligned rows under a header; details longer than ``width`` cut."""
    rows, state = [], ""
    for event in events:
        entered = event.get("stateEnteredEventDetails") or event.get("stateExitedEventDetails")
        if entered:
            state = entered["name"]
        rows.append(_event_row(event, state if not event["type"].startswith("Execution") else ""))
    widths = [max(len(r[i]) for r in [HISTORY_HEADER, *rows]) for i in range(4)]
    lines = []
    for row in [HISTORY_HEADER, *rows]:
        detail = row[4] if len(row[4]) <= width else row[4][: max(0, width - 3)] + "..."
        cells = [row[0].rjust(widths[0]), *(c.ljust(w) for c, w in zip(row[1:4], widths[1:], strict=True)), detail]
        lines.append("  ".join(cells).rstrip())
    return lines
