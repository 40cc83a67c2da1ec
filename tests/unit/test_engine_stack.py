"""The engine's reading of a resolved template (``idemflow/engine/stack.py``): typed stacks and the Workflow view,
read from the real templates (the project's and the outbox example's, which nests it)."""

from __future__ import annotations

import pytest

from idemflow.contract import IDEMPOTENCY_TABLE_SUBSTITUTION, SIDE_EFFECT_SUBSTITUTION, STATE_MACHINE_LOGICAL_ID
from idemflow.engine.errors import EngineError
from idemflow.engine.stack import Workflow, WorkflowStack, resolve_stack
from idemflow.template import TemplateError
from tests.paths import PROJECT_ROOT, TEMPLATE_PATH

OUTBOX = PROJECT_ROOT / "examples" / "outbox" / "template.yaml"


def test_every_stack_of_a_resolved_template_is_typed_nested_ones_too() -> None:
    root = resolve_stack(OUTBOX)

    assert all(isinstance(stack, WorkflowStack) for _, stack in root.stacks())
    assert [path for path, _ in root.stacks()] == ["", *root.nested]
    assert root.all_functions() == [f for _, s in root.stacks() for f in s.functions.values()]


def test_the_workflow_view_names_its_parts_as_the_template_declares_them() -> None:
    root = resolve_stack(TEMPLATE_PATH)
    stack = root.workflow()
    view = Workflow("", stack, root)

    machine = stack.state_machines[STATE_MACHINE_LOGICAL_ID]
    assert view.state_machine is machine
    assert view.idempotency_table == machine.substitutions[IDEMPOTENCY_TABLE_SUBSTITUTION]
    assert view.side_effect.arn == machine.substitutions[SIDE_EFFECT_SUBSTITUTION]
    assert view.scope == stack.parameters["WorkflowScope"]
    assert view.effects_table is None  # the project's template does not say where its effects are


def test_a_nested_workflow_finds_its_side_effect_and_effects_in_the_template_around_it() -> None:
    root = resolve_stack(OUTBOX)
    ((path, stack),) = root.workflows().items()
    view = Workflow(path, stack, root)

    assert path and view.side_effect in root.functions.values()  # the outbox's own function, not the nested one's
    table, attribute = view.effects_table or ("", "")
    assert table == root.outputs["OutboxTableName"] and attribute


def test_a_workflow_path_that_is_not_there_names_the_ones_that_are() -> None:
    root = resolve_stack(OUTBOX)
    with pytest.raises(TemplateError, match=r"no workflow at 'Nope'.*workflows: '"):
        root.workflow("Nope")


def test_effects_declared_with_an_unknown_output_are_refused() -> None:
    root = resolve_stack(OUTBOX)
    broken = WorkflowStack(
        root.name,
        root.region,
        root.account_id,
        root.parameters,
        root.resources,
        {},  # no outputs: the declared Output names nothing
        root.metadata,
        root.nested,
    )
    ((path, stack),) = broken.workflows().items()
    with pytest.raises(EngineError, match=r"Metadata\.Idemflow\.Effects: Output 'OutboxTableName'"):
        _ = Workflow(path, stack, broken).effects_table
