"""EventBridge: the template's event buses and rules, with state machine targets.

moto's EventBridge stores buses, rules and targets and matches events against rules' patterns; the engine
delivers to a rule's state machine targets, which moto cannot (the registry's ``events-targets`` hook hands
this service each match), as EventBridge does (user guide pages cited
where each applies, https://docs.aws.amazon.com/eventbridge/latest/userguide/<page>.html):

* delivery is asynchronous: ``PutEvents`` answers once the event is accepted, and a target's execution is
  started afterwards (eb-targets), here by a background loop;
* the target's input is its ``Input``, ``InputPath`` or ``InputTransformer`` applied to the event, else the
  whole event (eb-transform-target-input; the quoting rules as AWS-recorded executions show them);
* a failed delivery is retried by the target's ``RetryPolicy`` when the error is one EventBridge retries,
  then sent to the target's dead-letter queue with the attributes EventBridge sets (eb-rule-dlq), or
  dropped without one.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from idemflow.engine.services.base import Service
from idemflow.engine.services.iam.service import Iam
from idemflow.engine.services.sqs.policy import queue_policy
from idemflow.engine.state import EngineState
from idemflow.template import Resolver, ResourceType, Stack, TemplateError, cfn_string, integer, mapping

BUS_ARN = "arn:aws:events:{region}:{account}:event-bus/{name}"


@dataclass(frozen=True)
class Target:
    id: str
    arn: str
    input: str | None
    input_path: str | None
    paths: dict[str, str] | None
    template: str | None
    max_retries: int
    dead_letter_arn: str | None
    role_arn: str = ""
    """The role EventBridge assumes to start the target (a state machine target needs one)."""


@dataclass(frozen=True)
class Rule:
    logical_id: str
    name: str
    arn: str
    bus: str
    pattern: dict[str, Any] | None
    enabled: bool
    targets: tuple[Target, ...]


@dataclass(frozen=True)
class Connection:
    """An EventBridge connection (AWS::Events::Connection): what an HTTP Task authorizes its calls with."""

    logical_id: str
    name: str
    arn: str
    authorization_type: str
    auth_parameters: dict[str, Any]
    description: str


@dataclass(frozen=True)
class Bus:
    logical_id: str
    name: str


def read_bus(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Bus:
    return Bus(lid, r.name(lid))


CONNECTION_ARN = "arn:aws:events:{region}:{account}:connection/{name}/local"
"""AWS ends a connection's ARN with an id it makes up (``connection/<name>/<uuid>``); locally it is ``local``,
as a nested stack's, so that the template can name it before the connection exists."""


def read_connection(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Connection:
    auth = r.setting(props, "AuthParameters", where, {})
    return Connection(
        logical_id=lid,
        name=r.name(lid),
        arn=r.arn(lid),
        authorization_type=cfn_string(r.setting(props, "AuthorizationType", where, None), f"{where}.AuthorizationType"),
        auth_parameters=mapping(auth, f"{where}.AuthParameters"),
        description=cfn_string(r.setting(props, "Description", where, ""), f"{where}.Description"),
    )


def read_rule(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Rule:
    bus = cfn_string(r.setting(props, "EventBusName", where, "default"), f"{where}.EventBusName").rsplit("/", 1)[-1]
    pattern = r.setting(props, "EventPattern", where, None)
    if isinstance(pattern, str):
        pattern = json.loads(pattern)
    targets = []
    for i, given in enumerate(r.setting(props, "Targets", where, [])):
        tw = f"{where}.Targets[{i}]"
        given = mapping(given, tw)
        transformer = given.get("InputTransformer")
        retry = mapping(given.get("RetryPolicy", {}), f"{tw}.RetryPolicy")
        dead_letter = mapping(given.get("DeadLetterConfig", {}), f"{tw}.DeadLetterConfig")
        if sum(k in given for k in ("Input", "InputPath", "InputTransformer")) > 1:
            # PutTargets refuses it (recorded: "Only one of Input, InputPath, or InputTransformer must be provided").
            raise TemplateError(f"{tw}: only one of Input, InputPath, or InputTransformer must be provided")
        targets.append(
            Target(
                id=cfn_string(given.get("Id"), f"{tw}.Id"),
                arn=cfn_string(given.get("Arn"), f"{tw}.Arn"),
                input=None if "Input" not in given else cfn_string(given["Input"], f"{tw}.Input"),
                input_path=None if "InputPath" not in given else cfn_string(given["InputPath"], f"{tw}.InputPath"),
                paths=None
                if transformer is None
                else {
                    str(k): cfn_string(v, f"{tw}.InputTransformer.InputPathsMap.{k}")
                    for k, v in mapping(transformer.get("InputPathsMap", {}), f"{tw}.InputTransformer").items()
                },
                template=None
                if transformer is None
                else cfn_string(transformer.get("InputTemplate"), f"{tw}.InputTransformer.InputTemplate"),
                # RetryPolicy: 185 attempts by default (eb-rule-retry-policy).
                max_retries=integer(retry.get("MaximumRetryAttempts", 185), f"{tw}.RetryPolicy"),
                dead_letter_arn=None
                if "Arn" not in dead_letter
                else cfn_string(dead_letter["Arn"], f"{tw}.DeadLetterConfig.Arn"),
                role_arn=cfn_string(given.get("RoleArn", ""), f"{tw}.RoleArn"),
            )
        )
    name = r.name(lid)
    arn = f"arn:aws:events:{r.region}:{r.account}:rule/" + (name if bus == "default" else f"{bus}/{name}")
    state = cfn_string(r.setting(props, "State", where, "ENABLED"), f"{where}.State")
    return Rule(lid, name, arn, bus, pattern, state == "ENABLED", tuple(targets))


# Errors EventBridge retries (eb-rule-retry-policy: throttling and service errors); any other goes to the
# dead-letter queue at once.
_RETRIED = {"ThrottlingException", "ServiceUnavailable", "InternalFailure", "InternalServerError"}


@dataclass
class Delivery:
    rule: Rule
    target: Target
    event: dict[str, Any]
    attempts: int = 0


@dataclass
class EventStats:
    delivered: int = 0
    dead_lettered: int = 0
    dropped: int = 0
    failed_to_dead_letter: int = 0
    """Events its dead-letter queue's policy did not let EventBridge send there (InvocationsFailedToBeSentToDlq)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class Events(Service):
    name = "events"
    resource_types = (
        ResourceType("AWS::Events::EventBus", read_bus, name_property="Name", arn=BUS_ARN),
        # An HTTP Task (arn:aws:states:::http:invoke) finds it by ARN in moto's events backend.
        ResourceType("AWS::Events::Connection", read_connection, name_property="Name", arn=CONNECTION_ARN),
        # AWS::Events::Rule's Arn names its bus when it is not the default one: read_rule builds it.
        ResourceType(
            "AWS::Events::Rule", read_rule, name_property="Name", arn="arn:aws:events:{region}:{account}:rule/{name}"
        ),
    )
    moto_backends = ("events", "secretsmanager")  # moto keeps a connection's parameters in a secret too

    def open(self) -> None:
        self.rules: dict[str, Rule] = {}
        self.pending: queue.SimpleQueue[Delivery | None] = queue.SimpleQueue()
        self.stats = EventStats()

    def attach(self, state: EngineState) -> EngineState:
        return dataclasses.replace(state, event_receiver=self.matched)  # the registry's events-targets hook

    def deploy(self, stack: Stack) -> None:
        buses = [b for _, s in stack.stacks() for b in s.models(Bus).values()]
        rules = [r for _, s in stack.stacks() for r in s.models(Rule).values()]
        connections = [c for _, s in stack.stacks() for c in s.models(Connection).values()]
        if not buses and not rules and not connections:
            return
        events = self.context.client("events")
        for connection in connections:
            self._create_connection(events, connection)
        for bus in buses:
            events.create_event_bus(Name=bus.name)
        for rule in rules:
            kwargs: dict[str, Any] = {"Name": rule.name, "EventBusName": rule.bus}
            if rule.pattern is not None:
                kwargs["EventPattern"] = json.dumps(rule.pattern)
            events.put_rule(**kwargs, State="ENABLED" if rule.enabled else "DISABLED")
            # moto keeps the targets (ListTargetsByRule answers); delivery to them is this service's.
            events.put_targets(
                Rule=rule.name, EventBusName=rule.bus, Targets=[{"Id": t.id, "Arn": t.arn} for t in rule.targets]
            )
            self.rules[rule.name] = rule

    @staticmethod
    def _create_connection(events: Any, connection: Connection) -> None:
        """Create it with moto's CreateConnection, then give it the ARN the template resolved."""
        from moto.events.models import events_backends

        kwargs: dict[str, Any] = {
            "Name": connection.name,
            "AuthorizationType": connection.authorization_type,
            "AuthParameters": connection.auth_parameters,
        }
        if connection.description:
            kwargs["Description"] = connection.description
        events.create_connection(**kwargs)
        _, _, _, region, account, _ = connection.arn.split(":", 5)
        events_backends[account][region].connections[connection.name].arn = connection.arn

    def start(self) -> None:
        if self.rules:  # a template without rules runs no loop
            self.context.background.start("events-delivery", self._deliver_loop)

    # -- the hook: moto found a rule matching an event ----------------------------------------------------
    def matched(self, rule_name: str, event: dict[str, Any]) -> bool:
        """Queue the delivery of ``event`` (moto's event message) to the rule's state machine targets; False
        for a rule this service does not know (moto delivers to its other targets itself)."""
        rule = self.rules.get(rule_name)
        if rule is None:
            return False
        if rule.enabled:
            event = _aws_event(event)
            for target in rule.targets:
                if target.arn.startswith("arn:aws:states:"):
                    self.pending.put(Delivery(rule, target, event))
        return True

    def _deliver_loop(self, stopping: threading.Event) -> None:
        sfn = self.context.client("stepfunctions")
        while not stopping.is_set():
            try:
                delivery = self.pending.get(timeout=0.05)
            except queue.Empty:
                continue
            if delivery is None:
                continue
            self._deliver(sfn, delivery, stopping)

    def _deliver(self, sfn: Any, delivery: Delivery, stopping: threading.Event) -> None:
        target = delivery.target
        payload = target_input(delivery.rule, target, delivery.event)
        # Missing permissions on the target are not retried: the event goes to the dead-letter queue at once
        # (eb-rule-dlq: "for errors that result from missing permissions to a target ... no retry attempts will
        # happen", its ERROR_CODE NO_PERMISSIONS among those the page lists).
        decision = self.context.service(Iam).decide(target.role_arn, "states:StartExecution", target.arn)
        if decision is not None and not decision.allowed:
            self._dead_letter(delivery, "NO_PERMISSIONS", decision.message, False)
            return
        while True:
            try:
                sfn.start_execution(stateMachineArn=target.arn, input=payload)
            except ClientError as exc:
                code = exc.response["Error"]["Code"]
                if code in _RETRIED and delivery.attempts < target.max_retries and not stopping.is_set():
                    delivery.attempts += 1
                    stopping.wait(0.0)  # the retry back-off, scaled away with the engine's waits
                    continue
                self._dead_letter(delivery, code, exc.response["Error"].get("Message", ""), code in _RETRIED)
                return
            with self.stats.lock:
                self.stats.delivered += 1
            if self.context.faults.take_delivered_again(delivery.rule.name, delivery.rule.logical_id):
                continue  # an injected fault: the same event reaches the target a second time
            return

    def _dead_letter(self, delivery: Delivery, code: str, message: str, exhausted: bool) -> None:
        target = delivery.target
        if target.dead_letter_arn is None:
            with self.stats.lock:
                self.stats.dropped += 1
            return
        # "To successfully deliver events to the queue, EventBridge must have permission to do so": a queue policy
        # allowing events.amazonaws.com sqs:SendMessage, scoped by the rule's aws:SourceArn (eb-rule-dlq, "Granting
        # permissions to the dead-letter queue"). An event it may not send there reaches no queue; EventBridge
        # counts it in its InvocationsFailedToBeSentToDlq metric (eb-monitoring).
        exists, policy = queue_policy(target.dead_letter_arn)
        keys = {"aws:SourceArn": delivery.rule.arn, "aws:SourceAccount": delivery.rule.arn.split(":")[4]}
        decision = self.context.service(Iam).decide_service(
            "events.amazonaws.com", "sqs:SendMessage", target.dead_letter_arn, policy, **keys
        )
        if exists and decision is not None and not decision.allowed:
            with self.stats.lock:
                self.stats.failed_to_dead_letter += 1
            return
        sqs = self.context.client("sqs")
        url = sqs.get_queue_url(QueueName=target.dead_letter_arn.rsplit(":", 1)[1])["QueueUrl"]

        def text(value: str) -> dict[str, str]:
            return {"DataType": "String", "StringValue": value}

        # eb-rule-dlq: the event itself, with what went wrong in its message attributes.
        sqs.send_message(
            QueueUrl=url,
            MessageBody=json.dumps(delivery.event),
            MessageAttributes={
                "RULE_ARN": text(delivery.rule.arn),
                "TARGET_ARN": text(target.arn),
                "ERROR_CODE": text(code),
                "ERROR_MESSAGE": text(message or code),
                "RETRY_ATTEMPTS": {"DataType": "Number", "StringValue": str(delivery.attempts)},
                "EXHAUSTED_RETRY_CONDITION": text("MaximumRetryAttempts" if exhausted else "None"),
            },
        )
        with self.stats.lock:
            self.stats.dead_lettered += 1


def _aws_event(message: dict[str, Any]) -> dict[str, Any]:
    """moto's event message as EventBridge delivers it: ``time`` in ISO 8601 (eb-events-structure), and
    no moto-only fields."""
    event = {k: v for k, v in message.items() if k != "ingestion-time"}
    when = event.get("time")
    if isinstance(when, int | float):
        event["time"] = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    elif isinstance(when, datetime):
        event["time"] = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    event.setdefault("version", "0")
    return event


def target_input(rule: Rule, target: Target, event: dict[str, Any]) -> str:
    """The input a target gets (eb-transform-target-input; ``InputPath`` and ``InputTransformer`` as the
    AWS-recorded executions in localstack/localstack tests/aws/services/events/test_events_inputs.snapshot.json
    show them)."""
    if target.input is not None:
        return target.input
    if target.input_path is not None:
        return json.dumps(_path(event, target.input_path))
    if target.template is None:
        return json.dumps(event)
    values = {name: _path(event, path) for name, path in (target.paths or {}).items()}
    reserved: dict[str, Any] = {
        "aws.events.rule-arn": rule.arn,
        "aws.events.rule-name": rule.name,
        "aws.events.event.ingestion-time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "aws.events.event": {k: v for k, v in event.items() if k != "detail"},
        "aws.events.event.json": event,
    }
    out: list[str] = []
    position = 0
    for match in re.finditer(r"<([\w.\-]+)>", target.template):
        name = match.group(1)
        if name not in values and name not in reserved:
            continue  # not a placeholder (PutTargets refuses an undefined one: the template was accepted)
        out.append(target.template[position : match.start()])
        value = values[name] if name in values else reserved[name]
        quoted = "".join(out).count('"') % 2 == 1
        if quoted:  # inside a JSON string: the value's text; a missing one is empty (recorded)
            out.append("" if value is None else value if isinstance(value, str) else json.dumps(value))
        else:  # a JSON value: a string is quoted; a missing one is "" (recorded)
            out.append(json.dumps("" if value is None else value))
        position = match.end()
    out.append(target.template[position:])
    return "".join(out)


def _path(event: Any, path: str) -> Any:
    value = event
    for key, index in re.findall(r"\.([\w\-/]+)|\[(\d+)\]", path):
        if isinstance(value, dict) and key:
            value = value.get(key)
        elif isinstance(value, list) and index and int(index) < len(value):
            value = value[int(index)]
        else:
            return None
    return value
