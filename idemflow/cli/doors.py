"""The doors, one description each: what ``serve`` lists of it and prints to try it, the steps ``demo`` shows of
it, and the name of its rows in the doors' cost table (``bench/costs.py``, ``docs/doors.md``).

A new door is one more :class:`Door` in :data:`DOORS`; ``serve``, ``demo`` and the costs take them in that order.
Nothing here imports the engine: a door's functions import what they read of it when they run.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TextIO

from idemflow import client
from idemflow.cli.output import compact
from idemflow.contract import WorkflowError

if TYPE_CHECKING:
    from idemflow.engine import Engine

STEP_INDENT = "      "
LABEL_WIDTH = 16
"""serve's banner: ``  <label>:`` padded to this width, then what it lists."""


def script(name: str) -> str:
    """How a line serve prints runs ``name`` (``aws``, ``idemflow``) from where serve runs, as the docs write it:
    the script beside this interpreter (``.venv/bin/aws`` from the project's root, else its whole path) when PATH
    would not find that one, so that the line runs as pasted without an activated virtual environment; the bare
    name when PATH finds it, or when there is no such script beside the interpreter (installed elsewhere)."""
    beside = Path(sys.executable).parent / name  # the venv's bin: not resolved, its python is a link out of it
    if not beside.is_file():
        return name
    found = shutil.which(name)
    if found is not None and os.path.realpath(found) == os.path.realpath(beside):
        return name
    try:
        shown = str(beside.absolute().relative_to(Path.cwd()))
    except ValueError:
        shown = str(beside.absolute())
    return shlex.quote(shown)


@dataclass(frozen=True)
class Listed:
    """One line of a door in serve's banner, and what to try on it (None: nothing)."""

    text: str
    target: Any = None


@dataclass(frozen=True)
class Served:
    """What serve's lines to try a door are made of."""

    url: str
    region: str
    payload: Any
    """The template's sample payload, None when it has none."""
    key_field: str
    """The template's DoorKeyField."""
    example_side_effect: bool
    """Whether the side effect is the template's example charge (SideEffectFunctionArn empty)."""

    @property
    def fields(self) -> dict[str, Any]:
        return self.payload if isinstance(self.payload, dict) else {}

    @property
    def endpoint(self) -> str:
        return f"--endpoint-url {self.url} --region {self.region}"

    @property
    def aws(self) -> str:
        return f"{script('aws')} {self.endpoint}"


@dataclass
class DemoRun:
    """What a door's demo steps act on and report to."""

    engine: Engine
    out: TextIO
    payload: Any
    timeout: float
    expect: Callable[[str, bool], None]
    steps: int
    done: int = 0

    def step(self, text: str) -> None:
        self.done += 1
        print(f"[{self.done}/{self.steps}] {text}", file=self.out, flush=True)

    def say(self, text: str) -> None:
        print(f"{STEP_INDENT}{text}", file=self.out)


def _frozen(mapping: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Door:
    name: str
    """What the door is called: "the <name> door"."""
    label: str
    """The label of its lines in serve's banner."""
    parameter: str
    """The template parameter that opens it."""
    listed: Callable[[Engine], list[Listed]]
    """Its lines in serve's banner (none: the template has no such door)."""
    hints: Callable[[list[Any], Served], list[str]]
    """serve's lines to try it, given the targets of its listed lines."""
    opens: Mapping[str, str] = field(default_factory=_frozen)
    """The overrides that open it on the project's template, for the demo's and the costs' engines (empty: it
    takes a resource of the user's, or another template's)."""
    demo: Callable[[DemoRun], None] | None = None
    demo_steps: int = 0
    demo_overrides: Mapping[str, str] = field(default_factory=_frozen)
    """What else the demo's deployment needs for its steps."""
    cost: str | None = None
    """Its rows' name in the doors' cost table: "<cost>, first of its key", ..."""

    def banner(self, listed: list[Listed]) -> list[str]:
        return [f"{self.label + ':':<{LABEL_WIDTH}}{item.text}" for item in listed]

    def tries(self, listed: list[Listed], served: Served) -> list[str]:
        return self.hints([item.target for item in listed if item.target is not None], served)


# -- helpers of the demo's door steps -----------------------------------------------------------------------------


LOCAL_KEY = "local"
"""The engine's own user's access key and secret (``idemflow.engine.services.iam.callers``)."""


def http_post(
    url: str, key: str, payload: Any, *, region: str = "us-east-1", signed: bool = True
) -> tuple[int, dict[str, str], Any]:
    """A POST as any HTTP client sends it, signed with SigV4 by the ``local`` key (the door's default authorization,
    ``AWS_IAM``) unless ``signed`` is false: the status, the headers and the JSON body of the answer."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "Idempotency-Key": key},
        method="POST",
    )
    if signed:
        client.sign_http_request(request, region=region, access_key=LOCAL_KEY, secret_key=LOCAL_KEY)
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


def in_order(deliveries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A key's deliveries as the demo shows them: the run before its replays, then by the source's id (intake
    executions started in one millisecond list in either order)."""
    return sorted(deliveries, key=lambda d: (d.get("replayed") is True, str(d.get("sourceId"))))


def one_run_of_two_deliveries(run: DemoRun, key: str, deliveries: list[dict[str, Any]]) -> None:
    """Show the key's deliveries and expect two, one run and one replay, and one side effect."""
    of_key = in_order([d for d in deliveries if d.get("idempotencyKey") == key])
    for delivery in of_key:
        run.say(f"delivery of message {delivery.get('sourceId')}: {compact(delivery)}")
    runs = run.engine.workflow.side_effect_runs(key)
    run.expect(
        f"two deliveries, one COMPLETED run and one replayed: side-effect invocations {runs}",
        sorted(str(d.get("replayed")) for d in of_key) == ["False", "True"]
        and all(d.get("outcome") == "COMPLETED" for d in of_key)
        and runs == 1,
    )


# -- HTTP ---------------------------------------------------------------------------------------------------------


def _http_listed(engine: Engine) -> list[Listed]:
    from idemflow.engine.services.apigateway.service import ApiGateway

    authorizations = engine.service(ApiGateway).authorizations()
    listed = []
    for method, endpoint in engine.endpoints():
        authorization = authorizations.get((method, endpoint), "NONE")
        said = (
            "AWS_IAM: SigV4-signed callers only; the engine's own user signs with the key local/local"
            if authorization == "AWS_IAM"
            else f"{authorization}: not signed, anyone who has the URL can call it"
        )
        listed.append(Listed(f"{method} {endpoint}  ({said})", (method, endpoint, authorization)))
    return listed


def _http_hints(endpoints: list[tuple[str, str, str]], served: Served) -> list[str]:
    lines = []
    for method, endpoint, authorization in endpoints:
        # curl signs with SigV4 itself (--aws-sigv4, curl 7.75 or later): the AWS CLI cannot call execute-api
        sign = (
            f'--aws-sigv4 "aws:amz:{served.region}:execute-api" --user {LOCAL_KEY}:{LOCAL_KEY} '
            if authorization == "AWS_IAM"
            else ""
        )
        if method == "GET":  # a Standard door's status URL: requests/{id}, the id a POST's Location ends with
            status_url = endpoint.replace("{id}", "$ID")
            lines.append(f'curl -i {sign}"{status_url}"   # ID: the last segment of the POST\'s Location')
            continue
        body = shlex.quote(json.dumps(served.payload)) if served.payload is not None else "'{}'"
        lines.append(
            f"curl -i {sign}-X {method} {endpoint} -H 'Content-Type: application/json' "
            f"-H 'Idempotency-Key: order-2' -d {body}"
        )
    return lines


def scoped_key(engine: Engine, key: str) -> str:
    """The key the workflow sees for a request to an ``AWS_IAM`` door signed by the engine's own user: the door
    scopes each caller's keys to its identity (``$context.identity.userArn``: docs/doors.md, "HTTP")."""
    from idemflow.engine.services.iam.service import Iam

    caller = engine.service(Iam).caller(LOCAL_KEY)
    return key if caller is None else f"iam:{caller.arn}|{key}"


def _http_demo(run: DemoRun) -> None:
    http_key, payload = "order-3003", run.payload
    scoped = scoped_key(run.engine, http_key)
    ((method, url),) = run.engine.endpoints()
    run.step(f"the HTTP door (HttpFrontDoor=true, Express): {method} {url}")
    run.say(f"Idempotency-Key: {http_key}, body {compact(payload)}")
    run.say(f"signed with SigV4 by the engine's own user (the local key), whose keys the door scopes: {scoped}")
    status, _, body = http_post(url, http_key, payload, region=run.engine.region)
    run.say(f"{status}, result {compact(body.get('result'))}")
    runs = run.engine.workflow.side_effect_runs(scoped)
    run.expect("200 with the side effect's result, invoked once", status == 200 and runs == 1)

    run.step("the same request again (a client retrying after a timeout)")
    again, again_headers, again_body = http_post(url, http_key, payload, region=run.engine.region)
    replayed_header = again_headers.get("Idempotent-Replayed")
    run.say(f"{again}, Idempotent-Replayed: {replayed_header}")
    run.expect(
        "200, Idempotent-Replayed: true, the first answer's body again, function not invoked again",
        again == 200
        and replayed_header == "true"
        and again_body == body
        and run.engine.workflow.side_effect_runs(scoped) == 1,
    )

    run.step("the same key with another body")
    other_status, other_headers, problem = http_post(
        url, http_key, {**payload, "demoVariant": 2}, region=run.engine.region
    )
    run.say(f"{other_status} {other_headers.get('Content-Type')}: {compact(problem)}")
    run.expect(
        f"422 application/problem+json, {WorkflowError.KEY_REUSED}",
        other_status == 422
        and other_headers.get("Content-Type") == "application/problem+json"
        and problem.get("error") == WorkflowError.KEY_REUSED,
    )


# -- queue --------------------------------------------------------------------------------------------------------


def _piped_queues(engine: Engine) -> set[str]:
    """The names of the queues a pipe reads."""
    from idemflow.engine.services.pipes.service import Pipes

    return {pipe.source.rsplit(":", 1)[1] for pipe in engine.service(Pipes).pipes}


def _queue_listed(engine: Engine) -> list[Listed]:
    """The template's queues (their URLs on the endpoint); what to try: the queues a pipe reads."""
    sources = _piped_queues(engine)
    listed = []
    for queue in engine.http_client("sqs").list_queues().get("QueueUrls", []):
        piped = queue.rsplit("/", 1)[1] in sources
        listed.append(Listed(f"{queue}{'  (a pipe reads it)' if piped else ''}", queue if piped else None))
    return listed


def _queue_hints(queues: list[str], served: Served) -> list[str]:
    return [
        f"{script('aws')} sqs send-message {served.endpoint} --queue-url {queue} "
        f"--message-body {shlex.quote(json.dumps({'idempotencyKey': 'order-3', **served.fields}))}"
        for queue in queues
    ]


def _queue_demo(run: DemoRun) -> None:
    queue_key = "order-4004"
    run.step(
        f"the queue door (QueueFrontDoor=true): a message with key {queue_key} is delivered twice "
        "(the pipe stops before deleting it; its visibility timeout ends)"
    )
    run.engine.faults.keep_batch_next("QueuePipe")
    run.engine.client("sqs").send_message(
        QueueUrl=outputs(run.engine)["RequestQueueUrl"],
        MessageBody=json.dumps({"idempotencyKey": queue_key, **run.payload}),
    )
    one_run_of_two_deliveries(run, queue_key, intake_deliveries(run.engine, 2, run.timeout))


# -- topic --------------------------------------------------------------------------------------------------------


def _topic_listed(engine: Engine) -> list[Listed]:
    """The template's topics with the queues they deliver to; what to try: the topics that deliver to a queue a
    pipe reads."""
    sns = engine.http_client("sns")
    sources = _piped_queues(engine)
    listed = []
    for topic in sns.list_topics().get("Topics", []):
        arn = topic["TopicArn"]
        queues = [
            sub["Endpoint"].rsplit(":", 1)[1]
            for sub in sns.list_subscriptions_by_topic(TopicArn=arn).get("Subscriptions", [])
            if sub["Protocol"] == "sqs"
        ]
        text = f"{arn}{'  (to ' + ', '.join(queues) + ')' if queues else ''}"
        listed.append(Listed(text, arn if sources & set(queues) else None))
    return listed


def _topic_hints(topics: list[str], served: Served) -> list[str]:
    key = {"idempotencyKey": {"DataType": "String", "StringValue": "order-5"}}
    return [
        f"{script('aws')} sns publish {served.endpoint} --topic-arn {topic} "
        f"--message {shlex.quote(json.dumps(served.fields))} --message-attributes {shlex.quote(json.dumps(key))}"
        for topic in topics
    ]


def _topic_demo(run: DemoRun) -> None:
    topic_key = "order-5005"
    run.step(
        f"the topic door (TopicFrontDoor=true): a message with key {topic_key} (a message "
        "attribute) is published twice (a producer's retry, or SNS delivering it again)"
    )
    sns = run.engine.client("sns")
    for _ in range(2):
        sns.publish(
            TopicArn=outputs(run.engine)["RequestTopicArn"],
            Message=json.dumps(run.payload),
            MessageAttributes={"idempotencyKey": {"DataType": "String", "StringValue": topic_key}},
        )
    one_run_of_two_deliveries(run, topic_key, intake_deliveries(run.engine, 4, run.timeout))


# -- event --------------------------------------------------------------------------------------------------------

S3_EVENTS = "aws.s3"


def _event_listed(engine: Engine) -> list[Listed]:
    """The template's event rules (bus, pattern); what to try: (bus, detail-type) of each rule that names one
    detail-type and no source, and S3's events (a rule on source aws.s3)."""
    from idemflow.engine.services.events.service import Events

    listed = []
    for rule in engine.service(Events).rules.values():
        text = f"{rule.name} on bus {rule.bus}, pattern {json.dumps(rule.pattern)}"
        pattern = rule.pattern or {}
        detail_types = pattern.get("detail-type")
        target: Any = None
        if S3_EVENTS in (pattern.get("source") or []):
            target = S3_EVENTS
        elif "source" in pattern:
            pass  # a source of its own: an event put by hand with another source would not match
        elif isinstance(detail_types, list) and len(detail_types) == 1 and isinstance(detail_types[0], str):
            target = (rule.bus, detail_types[0])
        listed.append(Listed(text, target))
    return listed


def _event_hints(targets: list[Any], served: Served) -> list[str]:
    lines = []
    if S3_EVENTS in targets:  # a bucket of the user's, sending its events to EventBridge (S3 user guide)
        config = shlex.quote(json.dumps({"EventBridgeConfiguration": {}}))
        lines += [
            f"{served.aws} s3api create-bucket --bucket uploads",
            f"{served.aws} s3api put-bucket-notification-configuration --bucket uploads "
            f"--notification-configuration {config}",
            f"printf %s {shlex.quote(json.dumps(served.fields))} | {served.aws} s3 cp - s3://uploads/order-8.json",
        ]
        if served.example_side_effect:  # an object's event is no payment: the example declines every one
            lines.append(
                "# the example charge takes a payment, not an object's event: it declines it and the event is "
                "dead-lettered (PaymentValidationError); a function of yours takes S3 events (docs/doors.md, "
                '"The default template\'s side effect rejects S3 events")'
            )
    for bus, detail_type in (t for t in targets if t != S3_EVENTS):
        detail = json.dumps({"idempotencyKey": "order-4", **served.fields})
        entries = [{"Source": "idemflow.try", "DetailType": detail_type, "Detail": detail, "EventBusName": bus}]
        lines.append(
            f"{script('aws')} events put-events {served.endpoint} --entries {shlex.quote(json.dumps(entries))}"
        )
    return lines


# -- streams: a Kinesis data stream, a table's stream -------------------------------------------------------------


def _streams_listed(kind: str) -> Callable[[Engine], list[Listed]]:
    """The streams of ``kind`` the template's pipes read; what to try: (the stream's or the table's name, whether
    it exists yet). A pipe takes its stream by ARN (the stream or the table is the user's): it polls until it
    exists."""

    def listed(engine: Engine) -> list[Listed]:
        from idemflow.engine.services.pipes.service import Pipes

        piped = [pipe for pipe in engine.service(Pipes).pipes if pipe.stream is not None and pipe.source_kind == kind]
        if not piped:
            return []  # no client made, no listing: most templates have no stream door
        if kind == "kinesis":
            existing = set(engine.http_client("kinesis").list_streams().get("StreamNames", []))
        else:
            existing = set(engine.http_client("dynamodb").list_tables().get("TableNames", []))
        found = []
        for pipe in piped:
            # arn:aws:kinesis:...:stream/<name>; arn:aws:dynamodb:...:table/<name>/stream/<label>
            name = pipe.source.split(":", 5)[5].split("/")[1]
            state = "a pipe reads it" if name in existing else "a pipe waits for it: create it"
            found.append(Listed(f"{pipe.source}  ({state})", (name, name in existing)))
        return found

    return listed


def _nested(path: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for the field path ``a.b``."""
    first, _, rest = path.partition(".")
    return {first: _nested(rest, value) if rest else value}


def _kinesis_hints(streams: list[tuple[str, bool]], served: Served) -> list[str]:
    """Its creation when it does not exist yet, then one record whose key is ``order-6``."""
    lines = []
    for name, exists in streams:
        if not exists:
            lines.append(f"{served.aws} kinesis create-stream --stream-name {name} --shard-count 1")
        record = json.dumps({**served.fields, **_nested(served.key_field, "order-6")})
        # fileb:// sends the bytes as they are with the AWS CLI v1 and v2 alike (v2 reads a --data string as
        # base64 unless told otherwise; v1 has no --cli-binary-format).
        lines.append(
            f"{served.aws} kinesis put-record --stream-name {name} --partition-key p "
            f"--data fileb://<(printf %s {shlex.quote(record)})"
        )
    return lines


def _table_hints(tables: list[tuple[str, bool]], served: Served) -> list[str]:
    """The table's creation when it does not exist yet, then one inserted item whose key is ``order-7``."""
    lines = []
    attribute = served.key_field.split(".", 1)[0]  # requestId.S: the item's attribute requestId, a string
    for name, exists in tables:
        if not exists:
            lines.append(
                f"{served.aws} dynamodb create-table --table-name {name} --billing-mode PAY_PER_REQUEST "
                f"--attribute-definitions AttributeName={attribute},AttributeType=S "
                f"--key-schema AttributeName={attribute},KeyType=HASH "
                "--stream-specification StreamEnabled=true,StreamViewType=NEW_IMAGE"
            )
        item = {k: {"N": str(v)} if isinstance(v, int | float) else {"S": str(v)} for k, v in served.fields.items()}
        item[attribute] = {"S": "order-7"}
        lines.append(f"{served.aws} dynamodb put-item --table-name {name} --item {shlex.quote(json.dumps(item))}")
        if "." not in served.key_field:  # the image's attribute is {"S": ...}: the field names no string
            lines.append(
                f'# the payload is the item\'s image in DynamoDB JSON ({attribute}: {{"S": ...}}), so it is keyed '
                f"by its stream record's eventID (dynamodb:<eventID>); DoorKeyField={attribute}.S keys it by "
                f'{attribute} (docs/doors.md, "A table\'s stream: the transactional outbox")'
            )
    return lines


# -- all of them, in the order serve, the demo and the costs take them -----------------------------------------------

HTTP = Door(
    name="HTTP",
    label="HTTP",
    parameter="HttpFrontDoor",
    listed=_http_listed,
    hints=_http_hints,
    opens=_frozen({"HttpFrontDoor": "true"}),
    demo=_http_demo,
    demo_steps=3,
    demo_overrides=_frozen({"WorkflowType": "EXPRESS"}),  # the answer is the outcome: one request shows it
)
QUEUE = Door(
    name="queue",
    label="queue",
    parameter="QueueFrontDoor",
    listed=_queue_listed,
    hints=_queue_hints,
    opens=_frozen({"QueueFrontDoor": "true", "QueueVisibilityTimeout": "0"}),  # a message comes back at once
    demo=_queue_demo,
    demo_steps=1,
    cost="queue message",
)
TOPIC = Door(
    name="topic",
    label="topic",
    parameter="TopicFrontDoor",
    listed=_topic_listed,
    hints=_topic_hints,
    opens=_frozen({"TopicFrontDoor": "true"}),
    demo=_topic_demo,
    demo_steps=1,
    cost="topic message",
)
EVENT = Door(
    name="event",
    label="event rule",
    parameter="EventFrontDoor",
    listed=_event_listed,
    hints=_event_hints,
    opens=_frozen({"EventFrontDoor": "true"}),
    cost="event",
)
STREAM = Door(
    name="stream",
    label="stream",
    parameter="KinesisStreamArn",
    listed=_streams_listed("kinesis"),
    hints=_kinesis_hints,
    opens=_frozen({"KinesisStreamArn": "arn:aws:kinesis:us-east-1:123456789012:stream/orders"}),
    cost="stream record",
)
TABLE_STREAM = Door(
    name="table stream",
    label="stream",
    parameter="DynamoDBStreamArn",
    listed=_streams_listed("dynamodb"),
    hints=_table_hints,
    cost="table item",
)

DOORS: tuple[Door, ...] = (HTTP, QUEUE, TOPIC, EVENT, STREAM, TABLE_STREAM)
