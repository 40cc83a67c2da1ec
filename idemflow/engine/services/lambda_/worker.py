"""One warm Lambda worker: ``python -m idemflow.engine.services.lambda_.worker CODE_DIR HANDLER``.

Started by :mod:`idemflow.engine.services.lambda_.runtime` with the function's own environment variables, as on
Lambda. It imports the handler once and serves invocations one at a time. Protocol: one JSON object a
line; requests on stdin, responses on a private copy of stdout. The handler's own prints and logs go
to stderr, which the runtime keeps as the function's logs, so nothing a handler prints can corrupt the
protocol.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import sys
import time
import traceback
import uuid
from typing import Any, NoReturn, TextIO


class LambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools use."""

    def __init__(self, info: dict[str, Any]):
        self.function_name: str = info["function_name"]
        self.function_version = "$LATEST"
        self.invoked_function_arn: str = info["function_arn"]
        self.memory_limit_in_mb: int = info["memory_mb"]
        self.aws_request_id: str = info.get("request_id") or str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "local"
        self._deadline_ms: int = info["deadline_ms"]

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def _error(exc: BaseException) -> dict[str, Any]:
    # The shape Lambda returns for an unhandled exception: Step Functions reads errorType as the
    # state's Error, so it must be the exception's class name. In the order the Python runtime writes it
    # (LocalStack's AWS-validated error_handling/test_task_service_lambda.snapshot.json, recorded
    # 28-11-2024: errorMessage, errorType, requestId, stackTrace), which the workflow's ReadFunctionError
    # reads as text.
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


def _send(channel: TextIO, message: dict[str, Any]) -> None:
    channel.write(json.dumps(message, default=str) + "\n")
    channel.flush()


def _not_ready(channel: Any, exc: BaseException, error_type: str, message: str) -> int:
    error = _error(exc)
    error["errorType"], error["errorMessage"] = error_type, message
    _send(channel, {"ready": False, "error": error})
    return 1


def main(argv: list[str]) -> int:
    code_dir, handler_spec = argv[1], argv[2]
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # from now on print() goes to stderr, i.e. to the function's logs
    sys.stdout = sys.stderr
    sys.path.insert(0, code_dir)
    module_name, _, function_name = handler_spec.rpartition(".")
    # The errors and messages of AWS's Python runtime interface client (awslambdaric, bootstrap.py):
    # a module that fails to import, one with a syntax error, and a handler missing from its module.
    try:
        module = importlib.import_module(module_name)
    except SyntaxError as exc:
        return _not_ready(channel, exc, "Runtime.UserCodeSyntaxError", f"Syntax error in module '{module_name}': {exc}")
    except Exception as exc:
        return _not_ready(channel, exc, "Runtime.ImportModuleError", f"Unable to import module '{module_name}': {exc}")
    handler = getattr(module, function_name, None)
    if handler is None:
        message = f"Handler '{function_name}' missing on module '{module_name}'"
        return _not_ready(channel, AttributeError(message), "Runtime.HandlerNotFound", message)
    _send(channel, {"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        context = LambdaContext(request["context"])
        started = time.perf_counter()
        print(f"START RequestId: {context.aws_request_id} Version: $LATEST", file=sys.stderr, flush=True)
        response: dict[str, Any]
        try:
            payload = handler(request["event"], context)
            response = {"id": request["id"], "ok": True, "payload": payload}
        except Exception as exc:
            print(f"[ERROR] {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            response = {"id": request["id"], "ok": False, "error": _error(exc)}
        else:
            try:
                json.dumps(payload)
            except (TypeError, ValueError) as exc:  # what Lambda's Python runtime reports for such a result
                print(f"[ERROR] Runtime.MarshalError: {exc}", file=sys.stderr, flush=True)
                error = {
                    "errorType": "Runtime.MarshalError",
                    "errorMessage": f"Unable to marshal response: {exc}",
                    "stackTrace": [],
                }
                response = {"id": request["id"], "ok": False, "error": error}
        elapsed_ms = (time.perf_counter() - started) * 1000
        print(
            f"END RequestId: {context.aws_request_id}\nREPORT RequestId: {context.aws_request_id}\t"
            f"Duration: {elapsed_ms:.2f} ms",
            file=sys.stderr,
            flush=True,
        )
        _send(channel, response)
    return 0


def end(code: int) -> NoReturn:
    """Leave once the runtime has closed stdin (the engine stops the function), without tearing the
    interpreter down: Lambda ends a sandbox by stopping its process, not by a Python shutdown, and tearing
    down an interpreter that has imported boto3 is work no sandbox does.
    What the handler registered with atexit still runs, and what it printed is flushed."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    end(main(sys.argv))
