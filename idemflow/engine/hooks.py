"""How the engine plugs its own parts into moto: the names the engine and the explorer use.

The hooks themselves are changes in the registry (``idemflow/engine/registry.py``, kind ``hook``),
installed by ``registry.apply`` with nothing attached; their code is in ``idemflow/engine/changes/``:

* ``lambda-invoke`` (``lambda_invoke.py``): Lambda ``Invoke`` goes to the attached
  :class:`~idemflow.engine.lambda_runtime.LambdaRuntime`;
* ``dynamodb-task`` and ``lambda-task`` (``tasks.py``): the attached
  :class:`~idemflow.engine.faults.Faults` and the installed :class:`Gate` see each task's request;
* ``execution-end`` (``execution_end.py``): the end of an execution sets :func:`execution_done`'s event.

:func:`dispatch_in_process` (``clients.py``) serves a botocore request with moto's handlers in this
process: the engine's in-process clients and its server's DynamoDB front (``server.py``, which looks it
up here on each request) use it.
"""

from __future__ import annotations

from idemflow.engine.changes import lambda_invoke, tasks
from idemflow.engine.changes.clients import IN_PROCESS_CONFIG, dispatch_in_process
from idemflow.engine.changes.execution_end import execution_done, forget_execution
from idemflow.engine.changes.tasks import Gate, TaskRequest, set_gate
from idemflow.engine.faults import Faults
from idemflow.engine.lambda_runtime import LambdaRuntime

__all__ = [
    "IN_PROCESS_CONFIG",
    "Gate",
    "TaskRequest",
    "dispatch_in_process",
    "execution_done",
    "forget_execution",
    "install",
    "set_gate",
]


def install(runtime: LambdaRuntime | None, faults: Faults | None) -> None:
    """Attach the engine's Lambda runtime and faults to the installed hooks (None: moto's own behaviour)."""
    lambda_invoke.attach(runtime)
    tasks.attach(faults)
