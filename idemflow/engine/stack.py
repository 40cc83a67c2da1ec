"""The engine's reading of a resolved template: the stack typed with the models its services read, and the
idempotent workflow in it.

:mod:`idemflow.template` is generic: it resolves any template with the resource types it is given and knows
nothing of the engine. Here those types are the engine's services' (:func:`resolve_stack`), each stack is a
:class:`WorkflowStack` (its tables, functions and state machines by logical id, nested stacks' too), and a
:class:`Workflow` is the view of one idempotent workflow: its state machine, table, side effect and scope.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from idemflow.contract import (
    IDEMPOTENCY_TABLE_SUBSTITUTION,
    SIDE_EFFECT_KIND_SUBSTITUTION,
    SIDE_EFFECT_STATE_MACHINE_SUBSTITUTION,
    SIDE_EFFECT_SUBSTITUTION,
    STATE_MACHINE_LOGICAL_ID,
)
from idemflow.engine.catalog import resource_types
from idemflow.engine.errors import EngineError
from idemflow.engine.services.dynamodb.service import Table
from idemflow.engine.services.lambda_.runtime import Function
from idemflow.engine.services.stepfunctions.service import StateMachine
from idemflow.template import ResourceType, Stack, TemplateError
from idemflow.template import resolve_stack as resolve_template

__all__ = ["Workflow", "WorkflowStack", "resolve_stack"]


@dataclass(frozen=True)
class WorkflowStack(Stack):
    """A resolved stack with the workflow's lookups: its resources typed as the engine's services read them."""

    def stacks(self, path: str = "") -> Iterator[tuple[str, WorkflowStack]]:
        for where, stack in super().stacks(path):
            assert isinstance(stack, WorkflowStack)  # resolve_stack makes every nested stack of this type
            yield where, stack

    @property
    def tables(self) -> dict[str, Table]:

        return self.models(Table)

    @property
    def functions(self) -> dict[str, Function]:

        return self.models(Function)

    @property
    def state_machines(self) -> dict[str, StateMachine]:

        return self.models(StateMachine)

    def all_functions(self) -> list[Function]:
        return [f for _, stack in self.stacks() for f in stack.functions.values()]

    def all_tables(self) -> list[Table]:
        return [t for _, stack in self.stacks() for t in stack.tables.values()]

    def all_state_machines(self) -> list[StateMachine]:
        return [m for _, stack in self.stacks() for m in stack.state_machines.values()]

    def function_by_name(self, name: str) -> Function | None:
        """A function of this stack or a nested one, by name, ARN or logical id (this stack's first)."""
        own = next((f for f in self.functions.values() if name in (f.name, f.arn, f.logical_id)), None)
        return own or next((f for f in self.all_functions() if name in (f.name, f.arn, f.logical_id)), None)

    def workflows(self) -> dict[str, WorkflowStack]:
        """The stacks (this one or nested ones, by path) that hold the idempotent workflow's state machine."""
        return {path: stack for path, stack in self.stacks() if STATE_MACHINE_LOGICAL_ID in stack.state_machines}

    def workflow(self, path: str | None = None) -> WorkflowStack:
        """The stack of the workflow at ``path`` (``""``: this one; a nested application's logical id), or
        of the only workflow there is when ``path`` is None."""
        found = self.workflows()
        if path is not None:
            if path not in found:
                raise TemplateError(
                    f"no workflow at {path!r} in stack {self.name} (workflows: {', '.join(map(repr, found)) or 'none'})"
                )
            return found[path]
        if len(found) != 1:
            raise TemplateError(
                f"stack {self.name} has {len(found)} workflows ({', '.join(map(repr, found)) or 'none'}): "
                "choose one by its path (idemflow run/serve/demo --workflow PATH)"
            )
        return next(iter(found.values()))

    def side_effect_arn(self, workflow: str | None = None) -> str:
        """The ARN a workflow invokes as its side effect (its ``SideEffectFunctionArn`` substitution)."""
        sm = self.workflow(workflow).state_machines[STATE_MACHINE_LOGICAL_ID]
        arn = sm.substitutions.get(SIDE_EFFECT_SUBSTITUTION)
        if not arn:
            raise TemplateError(f"Resources.{sm.logical_id}.DefinitionSubstitutions: no {SIDE_EFFECT_SUBSTITUTION}")
        return arn

    def side_effect_function(self, workflow: str | None = None) -> Function:
        """The function a workflow wraps, deployed from this template or a nested one (a qualified ARN,
        ``...:function:name:alias``, names it too)."""
        arn = self.side_effect_arn(workflow)
        unqualified = arn.rsplit(":", 1)[0] if arn.count(":") == 7 else arn
        function = next((f for f in self.all_functions() if f.arn in (arn, unqualified)), None)
        if function is None:
            raise TemplateError(
                f"{SIDE_EFFECT_SUBSTITUTION} is {arn}, which no AWS::Serverless::Function of the template defines: "
                "the embedded engine runs only the template's own functions (nest the workflow in a template "
                "that defines yours)"
            )
        return function

    def side_effect_is_state_machine(self, workflow: str | None = None) -> bool:
        """Whether a workflow runs a state machine as its side effect (``SideEffectStateMachineArn``)."""
        sm = self.workflow(workflow).state_machines[STATE_MACHINE_LOGICAL_ID]
        return sm.substitutions.get(SIDE_EFFECT_KIND_SUBSTITUTION) == "stateMachine"

    def side_effect_state_machine(self, workflow: str | None = None) -> StateMachine:
        """The state machine a workflow runs as its side effect, deployed from this template or a nested one (a
        version or alias ARN names it too)."""
        sm = self.workflow(workflow).state_machines[STATE_MACHINE_LOGICAL_ID]
        arn = sm.substitutions.get(SIDE_EFFECT_STATE_MACHINE_SUBSTITUTION, "")
        if not self.side_effect_is_state_machine(workflow):
            raise TemplateError(f"Resources.{sm.logical_id}: its side effect is a function, not a state machine")
        unqualified = arn.rsplit(":", 1)[0] if arn.count(":") == 7 else arn
        found = next((m for m in self.all_state_machines() if m.arn in (arn, unqualified)), None)
        if found is None:
            raise TemplateError(
                f"{SIDE_EFFECT_STATE_MACHINE_SUBSTITUTION} is {arn}, which no state machine of the template defines: "
                "the embedded engine runs only the template's own state machines"
            )
        return found


@dataclass(frozen=True)
class Workflow:
    """One idempotent workflow of a deployed stack (the template's own, or a nested application's)."""

    path: str
    """``""``: the template itself; else the nested application's path (``App``, ``App.Inner``)."""
    stack: WorkflowStack
    """The stack holding the workflow: its parameters, functions and state machine."""
    root: WorkflowStack

    @property
    def state_machine(self) -> StateMachine:
        # Looked up, not read from stack.state_machines (which builds a dict of every model): the record of a
        # key is read through it, once per step of each interleaving the checker explores.
        resource = self.stack.resources.get(STATE_MACHINE_LOGICAL_ID)
        if resource is None or not isinstance(resource.model, StateMachine):
            raise KeyError(STATE_MACHINE_LOGICAL_ID)
        return resource.model

    @property
    def state_machine_arn(self) -> str:
        return self.state_machine.arn

    @property
    def idempotency_table(self) -> str:
        """Its ``IdempotencyTableName`` substitution: a table its stack creates, or a shared one."""
        return self.state_machine.substitutions[IDEMPOTENCY_TABLE_SUBSTITUTION]

    @property
    def side_effect(self) -> Function:
        """The function it wraps (its ``SideEffectFunctionArn``), deployed from this template or a nested one."""
        return self.root.side_effect_function(self.path)

    @property
    def side_effect_function(self) -> str:
        """The name of the function it wraps."""
        return self.side_effect.name

    @property
    def side_effect_is_state_machine(self) -> bool:
        """Whether it runs a state machine (``SideEffectStateMachineArn``) rather than a function."""
        return self.root.side_effect_is_state_machine(self.path)

    @property
    def side_effect_state_machine(self) -> StateMachine:
        """The state machine it runs as its side effect (its ``SideEffectStateMachineArn``)."""
        return self.root.side_effect_state_machine(self.path)

    @property
    def side_effect_description(self) -> str:
        """What it wraps, for people: ``function <name>`` or ``state machine <ARN>``."""
        if self.side_effect_is_state_machine:
            return f"state machine {self.side_effect_state_machine.arn}"
        return f"function {self.side_effect_function}"

    @property
    def scope(self) -> str:
        return self.stack.parameters["WorkflowScope"]

    @property
    def effects_table(self) -> tuple[str, str] | None:
        """Where the template says its side effect's effects are (``Metadata: Idemflow: Effects: {Output,
        KeyAttribute}``): the table its stack output names and the attribute holding the key; None when it
        does not say."""
        declared = self.root.metadata.get("Idemflow", {}).get("Effects")
        if not isinstance(declared, dict):
            return None
        output, attribute = declared.get("Output"), declared.get("KeyAttribute")
        table = self.root.outputs.get(str(output))
        if table is None or not isinstance(attribute, str):
            raise EngineError(
                f"Metadata.Idemflow.Effects: Output {output!r} is not an output of the template, or KeyAttribute "
                f"{attribute!r} is not a string"
            )
        return table, attribute


def resolve_stack(
    template_path: Path | None = None,
    *,
    parameter_overrides: dict[str, str] | None = None,
    stack_name: str = "idemflow",
    region: str = "us-east-1",
    account_id: str = "123456789012",
    types: Mapping[str, ResourceType] | None = None,
) -> WorkflowStack:
    """The template resolved with the resource types of the engine's services (or ``types``)."""
    return resolve_template(
        template_path,
        parameter_overrides=parameter_overrides,
        stack_name=stack_name,
        region=region,
        account_id=account_id,
        types=resource_types() if types is None else types,
        stack_type=WorkflowStack,
    )
