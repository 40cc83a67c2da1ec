"""A running engine's view of one idempotent workflow: what the template says of it (:class:`Workflow`) and
what it did (its records, its side effect's invocations and effects)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from idemflow import keys
from idemflow.engine.errors import EngineError
from idemflow.engine.services.dynamodb.tables import Tables
from idemflow.engine.services.lambda_.runtime import Invocation, LambdaRuntime
from idemflow.engine.stack import Workflow

__all__ = ["WorkflowView"]


@dataclass(frozen=True)
class WorkflowView(Workflow):
    """One deployed workflow and what it did, on a running engine."""

    tables: Tables
    runtime_of: Callable[[], LambdaRuntime | None]
    """The engine's Lambda runtime (None once it stopped): read when asked, as it is made at each start."""
    client_of: Callable[[str], Any]
    """An API client of the engine's, by service name (``Engine.client``)."""

    # -- records ----------------------------------------------------------------------------------
    def record(self, idempotency_key: str, scope: str | None = None) -> dict[str, Any] | None:
        """The idempotency record for a key in ``scope`` (default: this workflow's ``WorkflowScope``), as
        plain values (None when there is none), as a consistent GetItem reads it."""
        scope = self.scope if scope is None else scope
        return self.tables.item(self.idempotency_table, {"id": {"S": keys.record_key(scope, idempotency_key)}})

    def records(self, scope: str | None = None) -> list[dict[str, Any]]:
        """Every workflow record of ``scope`` (default: this workflow's) in the idempotency table, as plain
        values. The table may be shared: other scopes' records, and the records a function keeps there
        itself (Powertools'), are left out."""
        prefix = f"{self.scope if scope is None else scope}#"
        return [r for r in self.tables.items(self.idempotency_table) if str(r.get("id", "")).startswith(prefix)]

    # -- the side effect --------------------------------------------------------------------------
    def effects(self, idempotency_key: str) -> int:
        """How many effects the side effect left for a key, counted where the template says (``effects_table``)."""
        where = self.effects_table
        if where is None:
            raise EngineError(
                "the template does not say where its side effect's effects are (Metadata.Idemflow.Effects)"
            )
        return self.tables.count(*where, idempotency_key)

    def _runtime(self) -> LambdaRuntime:
        runtime = self.runtime_of()
        if runtime is None:
            raise EngineError("the engine is not started")
        return runtime

    def invocations(self, function: str | None = None) -> list[Invocation]:
        """The recent invocations of ``function`` (a name, ARN or logical id; default: the side effect)."""
        return self._runtime().invocations(function or self.side_effect_function)

    def side_effect_runs(self, idempotency_key: str, function: str | None = None) -> int:
        """How many times the side effect ran for this key: the invocations of ``function`` (default: the side
        effect's) that ran its handler; for a workflow whose side effect is a state machine (no ``function``
        given), that state machine's executions started for the key."""
        if function is None and self.side_effect_is_state_machine:
            return len(self.side_effect_executions(idempotency_key))
        return len(self.runs(idempotency_key, function))

    def side_effect_executions(self, idempotency_key: str) -> list[str]:
        """The ARNs of the side-effect state machine's executions started for this key (its input's
        ``idempotencyKey``), as ListExecutions and DescribeExecution answer them, newest first."""
        sfn = self.client_of("stepfunctions")
        pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=self.side_effect_state_machine.arn)
        arns = [e["executionArn"] for page in pages for e in page["executions"]]
        found = []
        for arn in arns:
            given = json.loads(sfn.describe_execution(executionArn=arn)["input"])
            if isinstance(given, dict) and given.get("idempotencyKey") == idempotency_key:
                found.append(str(arn))
        return found

    def runs(self, idempotency_key: str, function: str | None = None) -> list[Invocation]:
        """The recent invocations of ``function`` (default: the side effect) that ran its handler for this key,
        oldest first: each with its outcome (``ok``, ``timeout``, ...), as a run that timed out and the retry that
        followed it both ran."""
        return [
            i
            for i in self.invocations(function)
            if i.ran and isinstance(i.event, dict) and i.event.get("idempotencyKey") == idempotency_key
        ]

    def invocation_counts(self, idempotency_key: str | None = None) -> dict[str, int]:
        """Per function the template deploys, how many invocations ran its handler (for one key's events,
        when given)."""
        return {
            fn.name: self.side_effect_runs(idempotency_key, fn.name)
            if idempotency_key is not None
            else sum(1 for i in self.invocations(fn.name) if i.ran)
            for fn in self.root.all_functions()
        }

    def logs(self, function: str | None = None) -> list[str]:
        """The recent log lines of ``function`` (default: the side effect)."""
        return self._runtime().logs(function or self.side_effect_function)
