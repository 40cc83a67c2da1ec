"""Step Functions: the template's state machines, run by moto's interpreter with the engine's changes
(``idemflow/engine/registry.py``), and Step Functions Local's mocked service integrations when the
engine has a ``MockConfigFile.json``."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idemflow.engine.errors import EngineError, MockConfigError
from idemflow.engine.services.base import Service
from idemflow.engine.services.iam.service import Iam
from idemflow.engine.state import EngineState, Retention
from idemflow.template import Resolver, ResourceType, Stack, TemplateError, cfn_string, mapping, substitute


@dataclass(frozen=True)
class StateMachine:
    logical_id: str
    name: str
    arn: str
    type: str
    definition_path: Path
    substitutions: dict[str, str]
    definition: str
    """The definition file with DefinitionSubstitutions applied, as CloudFormation does it."""


def read_state_machine(r: Resolver, lid: str, props: dict[str, Any], where: str) -> StateMachine:
    uri = r.setting(props, "DefinitionUri", where)
    if not isinstance(uri, str):
        raise TemplateError(f"{where}.DefinitionUri: only a local file path is supported locally")
    path = (r.base / uri).resolve()
    try:
        raw = path.read_text()
        json.loads(raw)
    except (OSError, ValueError) as exc:
        raise TemplateError(f"{where}.DefinitionUri: {uri}: {exc}") from exc
    given = mapping(r.setting(props, "DefinitionSubstitutions", where, {}), f"{where}.DefinitionSubstitutions")
    subs = {k: cfn_string(v, f"{where}.DefinitionSubstitutions.{k}") for k, v in given.items()}
    return StateMachine(
        logical_id=lid,
        name=r.name(lid),
        arn=r.arn(lid),
        type=cfn_string(r.setting(props, "Type", where, "STANDARD"), f"{where}.Type"),
        definition_path=path,
        substitutions=subs,
        definition=substitute(raw, subs, f"{where}.DefinitionUri"),
    )


_STATE_MACHINE_ARN = "arn:aws:states:{region}:{account}:stateMachine:{name}"
STOP_TIMEOUT_SECONDS = 10.0
"""How long an engine that stops waits for its executions' threads to end."""
LOG = logging.getLogger(__name__)


class StepFunctions(Service):
    name = "stepfunctions"
    signing_name = "states"
    # AWS::Serverless::StateMachine and AWS::StepFunctions::StateMachine, "Return values": Ref is the ARN.
    resource_types = (
        ResourceType(
            "AWS::Serverless::StateMachine", read_state_machine, name_property="Name", arn=_STATE_MACHINE_ARN, ref="arn"
        ),
        ResourceType(
            "AWS::StepFunctions::StateMachine",
            name_property="StateMachineName",
            arn=_STATE_MACHINE_ARN,
            ref="arn",
            why_not_served="only AWS::Serverless::StateMachine with a DefinitionUri file runs locally",
        ),
    )
    moto_backends = ("stepfunctions",)

    def attach(self, state: EngineState) -> EngineState:
        settings = self.context.settings
        if settings.retain_executions is not None or settings.retain_seconds is not None:
            state = dataclasses.replace(state, retention=Retention(settings.retain_executions, settings.retain_seconds))
        path = settings.mock_config
        if path is None:
            return state
        # Mocked service integrations, like Step Functions Local.
        from idemflow.engine.services.stepfunctions import mock_config

        try:
            config, source = mock_config.for_engine(path)
        except MockConfigError as exc:
            raise EngineError(f"cannot use {path}: {exc}") from exc
        return dataclasses.replace(state, mock_config=config, mock_config_source=source)

    def stop(self) -> None:
        # Stopped before the functions and the server they call: none runs another state from here on.
        from idemflow.engine.services.stepfunctions import executions

        executions.stop_running(timeout=0.0)

    def reset(self) -> None:
        from idemflow.engine.services.stepfunctions import executions, retention

        # Joined once the functions and the server are down (a task waiting on either returns at once): no
        # execution of this engine runs on against the next one's resources, which have the same names.
        alive = executions.stop_running(timeout=STOP_TIMEOUT_SECONDS)
        if alive:
            LOG.warning("%d execution thread(s) still running after the engine stopped: %s", len(alive), alive)
        retention.forget_all()
        super().reset()

    def deploy(self, stack: Stack) -> None:
        sfn = self.context.client("stepfunctions")
        iam = self.context.service(Iam)
        for path, nested in stack.stacks():
            for logical_id, sm in nested.models(StateMachine).items():
                role_arn = iam.role_arn_of(path, logical_id)
                sfn.create_state_machine(name=sm.name, definition=sm.definition, roleArn=role_arn, type=sm.type)
