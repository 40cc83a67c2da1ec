"""Speedups of the interpreter and the server: ``jsonpath-cache``, ``module-list-cache``, ``lazy-failure-logs``,
``keep-alive``, ``request-headers``, ``access-log``, ``request-environ``. For each, what moto does without it and with
it."""

from __future__ import annotations

import email.parser
import http.client
import io
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable
from typing import Any

import jsonpath_ng.parser
import pytest
from botocore.awsrequest import AWSPreparedRequest

from idemflow.engine import registry
from idemflow.engine.core import in_process_clients, server_speedups
from tests.unit.changes.speedups.compare import counting
from tests.unit.hooks.served import (
    TABLE,
    Moto,
    leave_out,
    run,
    run_puts,
)

pytestmark = pytest.mark.unit


# -- jsonpath-cache (a speedup) -----------------------------------------------------------------------
@pytest.fixture
def jsonpath_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []
    original = jsonpath_ng.parser.JsonPathParser.parse

    def counting(self: Any, string: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(string)
        return original(self, string, *args, **kwargs)

    monkeypatch.setattr(jsonpath_ng.parser.JsonPathParser, "parse", counting)
    return parsed


@pytest.mark.parametrize("module_name", ["json_path", "result_path"])
def test_jsonpath_is_parsed_once(module_name: str, jsonpath_parses: list[str]) -> None:
    module = _path_module(module_name)
    field = f"k{uuid.uuid4().hex}"  # a path no earlier test parsed
    expression = f"$.{field}.b"

    first = module.parse(expression)
    again = [module.parse(expression) for _ in range(3)]

    assert jsonpath_parses.count(expression) == 1
    assert all(same is first for same in again)
    assert [match.value for match in first.find({field: {"b": 1}})] == [1]


@pytest.mark.parametrize("module_name", ["json_path", "result_path"])
def test_a_parsed_jsonpath_outlives_the_change_for_the_next_install(
    module_name: str, jsonpath_parses: list[str]
) -> None:
    # Each engine installs the changes again when it starts: the next engine of the process parses nothing again.
    module = _path_module(module_name)
    expression = f"$.k{uuid.uuid4().hex}.b"
    first = module.parse(expression)

    leave_out("jsonpath-cache")
    assert module.parse(expression) is not first  # moto's own parse while it is left out
    registry.apply()
    again = module.parse(expression)

    assert again is first
    assert jsonpath_parses.count(expression) == 2  # the first, and the one while left out


@pytest.mark.parametrize("module_name", ["json_path", "result_path"])
def test_without_the_speedup_jsonpath_is_parsed_every_time(module_name: str, jsonpath_parses: list[str]) -> None:
    leave_out("jsonpath-cache")
    module = _path_module(module_name)
    expression = f"$.uncached_{uuid.uuid4().hex}"

    for _ in range(3):
        module.parse(expression)

    assert jsonpath_parses.count(expression) == 3


def test_executions_reuse_parsed_jsonpaths(moto: Moto, jsonpath_parses: list[str]) -> None:
    run_puts(moto, 1)
    before = len(jsonpath_parses)

    run_puts(moto, 3)

    assert len(jsonpath_parses) == before


def _path_module(name: str) -> Any:
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    return {"json_path": json_path, "result_path": result_path}[name]


# -- module-list-cache (a speedup): the dispatcher lists moto's package once ---------------------------
@pytest.fixture
def moto_dir_listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import moto as moto_package

    moto_dir = os.path.dirname(moto_package.__file__)
    listed: list[str] = []
    original: Callable[..., list[str]] = os.listdir

    def counting(path: Any = ".") -> list[str]:
        if os.fspath(path) == moto_dir:
            listed.append(os.fspath(path))
        return original(path)

    monkeypatch.setattr(os, "listdir", counting)
    return listed


def test_server_lists_its_modules_once(moto: Moto, moto_dir_listings: list[str]) -> None:
    ddb = moto.client("dynamodb")
    ddb.list_tables()
    before = len(moto_dir_listings)

    for _ in range(5):
        ddb.list_tables()

    assert before <= 1
    assert len(moto_dir_listings) == before


def test_without_the_speedup_the_server_lists_its_modules_per_request(moto: Moto, moto_dir_listings: list[str]) -> None:
    leave_out("module-list-cache")
    ddb = moto.client("dynamodb")

    for _ in range(5):
        ddb.list_tables()

    assert len(moto_dir_listings) >= 5


# -- lazy-failure-logs (a speedup): no repr nobody logs ----------------------------------------------
@pytest.fixture
def reprs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from moto.stepfunctions.parser.asl.component.component import Component

    built: list[str] = []
    original: Callable[[Any], str] = Component.__repr__

    def counting(self: Any) -> str:
        built.append(type(self).__name__)
        return original(self)

    monkeypatch.setattr(Component, "__repr__", counting)
    return built


def failing_put(moto: Moto, reprs: list[str]) -> None:
    """An execution whose state fails (a conditional put of an existing item); ``reprs`` counts only it."""
    item_id = f"logged-{uuid.uuid4()}"
    moto.client("dynamodb").put_item(TableName=TABLE, Item={"id": {"S": item_id}})
    reprs.clear()
    done = run(moto, "put", {"id": item_id})
    assert done.get("error") == "DynamoDB.ConditionalCheckFailedException", done


def test_failing_state_builds_no_repr_when_errors_are_not_logged(moto: Moto, reprs: list[str]) -> None:
    assert not logging.getLogger("moto.stepfunctions.parser").isEnabledFor(logging.ERROR)  # set by the fixture

    failing_put(moto, reprs)

    assert reprs == []


def test_without_the_speedup_a_failing_state_builds_reprs_for_nothing(moto: Moto, reprs: list[str]) -> None:
    leave_out("lazy-failure-logs")

    failing_put(moto, reprs)

    assert reprs, "moto no longer builds the repr of a failing state: the hook may be obsolete"


def test_failing_state_is_still_logged_when_errors_are_enabled(
    moto: Moto, reprs: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="moto.stepfunctions.parser"):
        failing_put(moto, reprs)

    assert any("ConditionalCheckFailedException" in r.getMessage() for r in caplog.records)


# -- keep-alive (a speedup): a client's requests on one connection --------------------------------------
# What AWS's endpoints and every HTTP/1.1 server do unless either side asks to close (RFC 9112, section 9.3,
# Persistence): botocore keeps each connection in its pool for the next request.
def _dynamodb_request(target: str, body: dict[str, Any]) -> bytes:
    payload = json.dumps(body).encode()
    head = (
        f"POST / HTTP/1.1\r\nHost: localhost\r\nX-Amz-Target: DynamoDB_20120810.{target}\r\n"
        "Content-Type: application/x-amz-json-1.0\r\n"
        "Authorization: AWS4-HMAC-SHA256 Credential=local/20261129/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=host, Signature=0\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


def _requests(item_id: str) -> list[bytes]:
    """A put, a read of it, a refused conditional put, a request for a table that does not exist, and a delete
    that leaves the table as it found it."""
    item = {"id": {"S": item_id}, "n": {"N": "1"}}
    return [
        _dynamodb_request("PutItem", {"TableName": TABLE, "Item": item}),
        _dynamodb_request("GetItem", {"TableName": TABLE, "Key": {"id": {"S": item_id}}, "ConsistentRead": True}),
        _dynamodb_request(
            "PutItem", {"TableName": TABLE, "Item": item, "ConditionExpression": "attribute_not_exists(id)"}
        ),
        _dynamodb_request("GetItem", {"TableName": "no-such-table", "Key": {"id": {"S": item_id}}}),
        _dynamodb_request("DeleteItem", {"TableName": TABLE, "Key": {"id": {"S": item_id}}}),
    ]


def _read_head(reader: Any) -> tuple[int, dict[str, str]]:
    """A response's status and headers (names in lower case), read from the stream."""
    status = int(reader.readline().split()[1])
    headers: dict[str, str] = {}
    while (line := reader.readline().decode("iso-8859-1").rstrip("\r\n")) != "":
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


def _answers(moto: Moto, requests: list[bytes], pipelined: bool = False) -> tuple[list[Any], int]:
    """Each request's status, headers (but the ones that change per response) and body, and the number of
    connections they took: sent one at a time (or all at once), each on the last connection while it is open."""
    answers: list[Any] = []
    connections = 0
    conn: socket.socket | None = None
    reader: Any = None
    pending = list(requests)
    while pending:
        if conn is None:
            conn = socket.create_connection(("127.0.0.1", moto.port), timeout=10)
            reader = conn.makefile("rb")
            connections += 1
        batch = pending if pipelined else pending[:1]
        conn.sendall(b"".join(batch))
        for _ in batch:
            status, headers = _read_head(reader)
            body = reader.read(int(headers.get("content-length", "0")))
            connection = headers.get("connection")
            stable = sorted((n, v) for n, v in headers.items() if n not in {"date", "x-amzn-requestid", "connection"})
            answers.append((status, stable, body, connection))
            pending.pop(0)
            if connection == "close":
                reader.close()
                conn.close()
                conn = None
                break
    if conn is not None:
        reader.close()
        conn.close()
    return answers, connections


def test_requests_share_one_connection_with_the_answers_of_moto(moto: Moto) -> None:
    requests = _requests(f"kept-{uuid.uuid4()}")
    kept, kept_connections = _answers(moto, requests)
    leave_out("keep-alive")
    moto_own, moto_connections = _answers(moto, requests)

    assert (kept_connections, moto_connections) == (1, 5)
    assert [connection for *_, connection in kept] == [None] * 5
    assert [connection for *_, connection in moto_own] == ["close"] * 5
    assert [answer[:3] for answer in kept] == [answer[:3] for answer in moto_own]
    assert [status for status, *_ in kept] == [200, 200, 400, 400, 200]


def test_a_request_sent_before_the_last_answer_is_answered(moto: Moto) -> None:
    # werkzeug reads and discards what a client sends after a request it answered: here, the next requests.
    answers, connections = _answers(moto, _requests(f"pipelined-{uuid.uuid4()}"), pipelined=True)

    assert connections == 1
    assert [status for status, *_ in answers] == [200, 200, 400, 400, 200]


@pytest.mark.parametrize(
    ("first_line", "extra"),
    [("POST / HTTP/1.0", ""), ("POST / HTTP/1.1", "Connection: close\r\n")],
    ids=["http-1.0", "connection-close"],
)
def test_a_client_that_asks_for_it_gets_its_connection_closed(moto: Moto, first_line: str, extra: str) -> None:
    request = _dynamodb_request("ListTables", {}).replace(b"POST / HTTP/1.1\r\n", f"{first_line}\r\n{extra}".encode())

    answers, _ = _answers(moto, [request])

    assert answers[0][0] == 200
    assert answers[0][3] == "close"


def test_a_chunked_request_closes_its_connection(moto: Moto) -> None:
    body = b"{}"
    request = (
        b"POST / HTTP/1.1\r\nHost: localhost\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n"
        b"Content-Type: application/x-amz-json-1.0\r\n"
        b"Authorization: AWS4-HMAC-SHA256 Credential=local/20261129/us-east-1/dynamodb/aws4_request, "
        b"SignedHeaders=host, Signature=0\r\nTransfer-Encoding: chunked\r\n\r\n"
        + f"{len(body):x}\r\n".encode()
        + body
        + b"\r\n0\r\n\r\n"
    )

    answers, _ = _answers(moto, [request])

    assert answers[0][0] == 200
    assert answers[0][3] == "close"


def test_a_stopping_server_ends_its_kept_connections(moto: Moto) -> None:
    from idemflow.engine.core.keep_alive import close_kept

    with socket.create_connection(("127.0.0.1", moto.port), timeout=10) as conn:
        conn.sendall(_dynamodb_request("ListTables", {}))
        reader = conn.makefile("rb")
        status, headers = _read_head(reader)
        reader.read(int(headers["content-length"]))
        assert (status, headers.get("connection")) == (200, None)  # kept open

        close_kept(moto.server)

        assert reader.read() == b""  # the server's handler saw the end of the stream and closed it


# -- request-headers (a speedup): plain header lines read without the email parser ----------------------------
BOTOCORE_HEAD = (
    b"Host: 127.0.0.1:5000\r\nAccept-Encoding: identity\r\nX-Amz-Target: DynamoDB_20120810.PutItem\r\n"
    b"Content-Type: application/x-amz-json-1.0\r\nUser-Agent: Boto3/1.44.5 md/Botocore#1.44.5 ua/2.1 os/linux\r\n"
    b"X-Amz-Date: 20261129T101500Z\r\nAuthorization: AWS4-HMAC-SHA256 Credential=local/20261129/us-east-1/dynamodb"
    b"/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=0f\r\n"
    b"amz-sdk-invocation-id: 3b1f\r\namz-sdk-request: attempt=1\r\nContent-Length: 2\r\n\r\n"
)
HEADER_BLOCKS = [
    BOTOCORE_HEAD,
    b"\r\n",  # no header at all
    b"A: 1\r\nA: 2\r\nb:x:y\r\nC:\t tabbed, trailing blanks kept  \r\nEmpty:\r\n\r\n",  # repeated, colons, blanks
    b"Folded: one\r\n two\r\n\r\n",  # a continuation line
    b"Latin: caf\xe9\r\nNel: a\x85b\r\n\r\n",  # bytes outside ASCII; \x85 is a line break to str.splitlines
    b"Ctl: a\x0bb\r\n\r\n",  # a control character str.splitlines breaks at
    b": no name\r\nX: 1\r\n\r\n",
    b"No colon here\r\nX: 1\r\n\r\n",
    b"From someone\r\nX: 1\r\n\r\n",
    b"Bare: lf\nX: 1\n\n",
    b"Content-Type: multipart/mixed; boundary=b\r\n\r\n",
    b"Content-Type: message/rfc822\r\n\r\n",
    b"Sp ace: 1\r\n\r\n",
    b"Unended: 1\r\n",  # the stream ends before the empty line
]


def test_unpatched_python_parses_request_headers_with_the_email_parser(
    moto: Moto, monkeypatch: pytest.MonkeyPatch
) -> None:
    leave_out("request-headers")
    parses = counting(monkeypatch, email.parser.Parser, "parsestr")

    answers, _ = _answers(moto, _requests(f"headers-{uuid.uuid4()}"))

    assert len(answers) == 5
    assert len(parses) >= 5  # one per request


@pytest.mark.parametrize("block", HEADER_BLOCKS)
def test_headers_are_the_message_the_email_parser_makes(block: bytes) -> None:
    ours = server_speedups.parse_headers(io.BytesIO(block + b"body"))
    theirs = http.client.parse_headers(io.BytesIO(block + b"body"))

    assert type(ours) is type(theirs) is http.client.HTTPMessage
    assert _described(ours) == _described(theirs)
    assert ours.items() == theirs.items()


def _described(message: Any) -> dict[str, Any]:
    """A message's attributes, its defects by class and text, a payload of messages described in turn."""
    described = {**vars(message), "defects": [(type(d).__name__, str(d)) for d in message.defects]}
    if isinstance(message._payload, list):
        described["_payload"] = [_described(part) for part in message._payload]
    return described


def test_header_limits_fail_as_before() -> None:
    too_long = b"X: " + b"a" * 70_000 + b"\r\n\r\n"
    too_many = b"".join(f"H{i}: 1\r\n".encode() for i in range(101)) + b"\r\n"
    for block, error in ((too_long, http.client.LineTooLong), (too_many, http.client.HTTPException)):
        with pytest.raises(error) as ours:
            server_speedups.parse_headers(io.BytesIO(block))
        with pytest.raises(error) as theirs:
            http.client.parse_headers(io.BytesIO(block))
        assert str(ours.value) == str(theirs.value)


def test_patched_plain_requests_skip_the_email_parser_with_the_answers_of_moto(
    moto: Moto, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = _requests(f"headers-{uuid.uuid4()}")
    parses = counting(monkeypatch, email.parser.Parser, "parsestr")
    ours, _ = _answers(moto, requests)
    assert parses == []

    leave_out("request-headers")
    theirs, _ = _answers(moto, requests)

    assert len(parses) >= 5
    assert [answer[:3] for answer in ours] == [answer[:3] for answer in theirs]
    assert [status for status, *_ in ours] == [200, 200, 400, 400, 200]


# -- access-log (a speedup): no access log line made for a logger that drops it ----------------------------
@pytest.fixture
def log_lines_made(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from werkzeug.serving import WSGIRequestHandler

    return counting(monkeypatch, WSGIRequestHandler, "log_date_time_string")


def test_unpatched_werkzeug_formats_an_access_log_line_it_then_drops(
    moto: Moto, log_lines_made: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    leave_out("access-log")
    with caplog.at_level(logging.ERROR, logger="werkzeug"):
        answers, _ = _answers(moto, _requests(f"log-{uuid.uuid4()}"))

    assert len(answers) == 5
    assert len(log_lines_made) >= 5
    assert not [r for r in caplog.records if r.name == "werkzeug"]


def test_patched_no_access_log_line_is_made_for_a_logger_that_drops_it(
    moto: Moto, log_lines_made: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="werkzeug"):
        answers, _ = _answers(moto, _requests(f"log-{uuid.uuid4()}"))

    assert [status for status, *_ in answers] == [200, 200, 400, 400, 200]
    assert log_lines_made == []


def test_patched_access_log_lines_are_written_when_the_logger_takes_them(
    moto: Moto, log_lines_made: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        _answers(moto, _requests(f"log-{uuid.uuid4()}"))

    lines = [r.getMessage() for r in caplog.records if r.name == "werkzeug"]
    assert len(lines) == 5
    assert all("POST / HTTP/1.1" in line for line in lines)


# -- request-environ (a speedup): moto's request from a template environ ------------------------------------
def _prepared(body: bytes, **headers: str) -> AWSPreparedRequest:
    sent = {
        "X-Amz-Target": "DynamoDB_20120810.PutItem",
        "Content-Type": "application/x-amz-json-1.0",
        "User-Agent": "Boto3/1.44.5 md/Botocore#1.44.5",
        "X-Amz-Date": "20261129T101500Z",
        "Authorization": "AWS4-HMAC-SHA256 Credential=local/20261129/us-east-1/dynamodb/aws4_request, Signature=1",
        "Amz-Sdk-Invocation-Id": str(uuid.uuid4()),
        "Host": "127.0.0.1:5000",
        "Content-Length": str(len(body)),
        **headers,
    }
    return AWSPreparedRequest("POST", "https://dynamodb.us-east-1.amazonaws.com/", sent, body, False)


ENVIRON_REQUESTS = [
    [_prepared(b'{"TableName": "a"}'), _prepared(b'{"TableName": "bb", "Item": {"k": {"S": "\\u00e9"}}}')],
    [_prepared(b""), _prepared(b"{}")],  # an empty body, then one
    [_prepared(b"{}", **{"X-Amz-Meta-My_Key": "1"}), _prepared(b"{}", **{"X-Amz-Meta-My_Key": "2"})],  # kept name
    [_prepared(b"{}", **{"X-Dup": "1", "X_Dup": "2"}), _prepared(b"{}", **{"X-Dup": "3", "X_Dup": "4"})],  # one key
    [_prepared(b"{}", **{"Transfer-Encoding": "chunked"}), _prepared(b"[]", **{"Transfer-Encoding": "chunked"})],
    [_prepared(b"{}", **{"Content-Type": "application/x-www-form-urlencoded"}), _prepared(b"a=1&b=2")],
]


@pytest.mark.parametrize("requests", ENVIRON_REQUESTS)
def test_a_request_from_its_template_is_the_one_moto_builds(requests: list[AWSPreparedRequest]) -> None:
    from moto.core.request import normalize_request

    for request in requests * 2:  # the first of a kind makes its template, the others are made from it
        ours, theirs = in_process_clients.request_from_prepared(request), normalize_request(request)

        assert in_process_clients._comparable(ours.environ) == in_process_clients._comparable(theirs.environ)
        assert ours.environ["werkzeug.request"] is ours
        assert (ours.url, list(ours.headers), ours.get_data()) == (theirs.url, list(theirs.headers), theirs.get_data())
        assert type(ours) is type(theirs)


def _dispatched(item_id: str) -> list[Any]:
    """The answers to _requests's five DynamoDB requests dispatched in-process as the endpoint's front sends them
    (status, headers but the ones that change per response, body)."""
    answers = []
    for raw in _requests(item_id):
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")[1:]
        headers = dict(line.split(": ", 1) for line in lines)
        response = in_process_clients.dispatch_in_process(_prepared(body, **headers))
        assert response is not None
        stable = sorted((n, v) for n, v in response.headers.items() if n not in {"date", "x-amzn-requestid"})
        answers.append((response.status_code, stable, response.content))
    return answers


def test_unpatched_moto_5_2_5_builds_an_environ_per_request(moto: Moto, monkeypatch: pytest.MonkeyPatch) -> None:
    from werkzeug.test import EnvironBuilder

    leave_out("request-environ")
    built = counting(monkeypatch, EnvironBuilder, "get_environ")

    answers = _dispatched(f"environ-{uuid.uuid4()}")

    assert len(answers) == 5
    assert len(built) >= 5


def test_patched_requests_of_one_kind_share_an_environ_with_the_answers_of_moto(
    moto: Moto, monkeypatch: pytest.MonkeyPatch
) -> None:
    from werkzeug.test import EnvironBuilder

    item_id = f"environ-{uuid.uuid4()}"
    _dispatched(item_id)  # each kind's first request: its template
    built = counting(monkeypatch, EnvironBuilder, "get_environ")
    ours = _dispatched(item_id)
    assert built == []

    leave_out("request-environ")
    theirs = _dispatched(item_id)

    assert len(built) >= 5
    assert ours == theirs
    assert [status for status, *_ in ours] == [200, 200, 400, 400, 200]
