"""States.Runtime is never caught nor retried (``states-runtime``).

AWS docs (concepts-error-handling): "A retry or catch on States.ALL will not catch States.Runtime
errors." Recorded on AWS: a Catch naming States.Runtime explicitly does not catch it either (LocalStack's
AWS-validated v2/scenarios/test_base_scenarios.snapshot.json, test_catch_states_runtime: the execution
fails with States.Runtime). moto matches it with States.ALL and by name, so a definition that leans on
either passes on the engine and fails on AWS. States.DataLimitExceeded is left as it is: the docs say
States.ALL does not catch it, but AWS's recorded executions show it caught by States.ALL
(test_states_errors.snapshot.json, ..._catch_state_all_data_limit_exceeded...), and moto does the same.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idemflow.engine.registry import Patch


def install_states_runtime(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )

    matches: Callable[..., None] = ErrorEqualsDecl.__dict__["_eval_body"]

    @functools.wraps(matches)
    def _eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        if isinstance(error_name, StatesErrorName) and error_name.typ == StatesErrorNameType.StatesRuntime:
            env.stack.pop()
            env.stack.append(False)
            return
        matches(self, env)

    patch.set(ErrorEqualsDecl, "_eval_body", _eval_body)
