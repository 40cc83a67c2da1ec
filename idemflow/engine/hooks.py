"""How the engine plugs its own parts into moto: the names the engine and the explorer use.

The hooks themselves are changes in the registry (``idemflow/engine/registry.py``, kind ``hook``),
installed by ``registry.apply``; they read the parts the engine attaches from its state
(:mod:`idemflow.engine.state`). Their code is in ``idemflow/engine/changes/``:

* ``lambda-invoke`` (``lambda_invoke.py``): Lambda ``Invoke`` goes to the state's Lambda runtime;
* ``dynamodb-task`` and ``lambda-task`` (``tasks.py``): the state's faults and :class:`Gate` see each task's
  request;
* ``execution-end`` (``execution_end.py``): the end of an execution sets :func:`execution_done`'s event;
* ``events-targets`` and ``mock-config``: the state's event receiver and mock configuration.

:func:`dispatch_in_process` (``clients.py``) serves a botocore request with moto's handlers in this
process: the engine's in-process clients and its server's DynamoDB front (``server.py``) use it;
:func:`forget_routes` forgets what it cached, before moto's backends are reset.
"""

from __future__ import annotations

from idemflow.engine.changes.clients import IN_PROCESS_CONFIG, dispatch_in_process
from idemflow.engine.changes.clients import reset as forget_routes
from idemflow.engine.changes.execution_end import execution_done, forget_execution
from idemflow.engine.state import Gate, TaskRequest

__all__ = [
    "IN_PROCESS_CONFIG",
    "Gate",
    "TaskRequest",
    "dispatch_in_process",
    "execution_done",
    "forget_execution",
    "forget_routes",
]
