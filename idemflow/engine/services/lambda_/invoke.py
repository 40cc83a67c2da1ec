"""Lambda ``Invoke`` goes to the engine's Lambda runtime (``lambda-invoke``, a hook).

moto without Docker (``awslambda_simple``) only echoes the request body. With the hook, an invocation
(from a task, a worker or any client of the engine) runs in the engine's Lambda runtime
(:attr:`idemflow.engine.state.EngineState.lambda_runtime`); with none attached, moto answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from moto.core.exceptions import JsonRESTError

from idemflow.engine import state
from idemflow.engine.errors import LambdaServiceError

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


class _LambdaServiceException(JsonRESTError):
    def __init__(self, error: LambdaServiceError):
        super().__init__(error.code, error.message)
        self.code = error.status


def install_lambda_invoke(patch: Patch) -> None:
    from moto.awslambda_simple.models import LambdaSimpleBackend

    original: Callable[..., Any] = LambdaSimpleBackend.invoke

    def invoke(
        self: LambdaSimpleBackend,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> bytes | None:
        runtime = state.current().lambda_runtime
        if runtime is None:
            result: bytes | None = original(self, function_name, qualifier, body, headers, response_headers)
            return result
        try:
            outcome = runtime.invoke(function_name, body)
        except LambdaServiceError as exc:
            raise _LambdaServiceException(exc) from exc
        if outcome.function_error:
            response_headers["x-amz-function-error"] = outcome.function_error
        payload: bytes | None = outcome.payload
        return payload

    patch.set(LambdaSimpleBackend, "invoke", invoke)
