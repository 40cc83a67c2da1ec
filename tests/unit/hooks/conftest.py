"""The registry's hooks, and the speedups that need a server, against moto 5.2.5: for each, what moto
does without it and with it. Named by the registry's names.

Wired like ``Engine._start`` (``registry.apply``, config, a ThreadedMotoServer on a free port,
``MOTO_PORT``, a LambdaRuntime, the engine state), with tiny inline state machines: these test the
engine's changes to moto, not the product. A test shows moto's own behaviour by leaving one change out
(``registry.apply(without=[name], hooks_too=True)``); an autouse fixture installs every change again
before the next test. The package leaves global state as it found it: the registry, moto's config and
backends, ``MOTO_PORT``.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Iterator

import pytest
from moto.core.config import default_user_config
from moto.server import ThreadedMotoServer

from idemflow.engine import registry, state
from idemflow.engine.faults import Faults
from idemflow.engine.services.lambda_.runtime import Function, LambdaRuntime
from tests.unit.hooks.served import (
    ACCOUNT,
    CHILD_MACHINE,
    FIXTURE_CODE,
    FUNCTION_NAME,
    PUT_MACHINE,
    REGION,
    SERVICES,
    TABLE,
    Moto,
    lambda_machine,
    sync_machine,
)


@pytest.fixture(scope="package")
def moto() -> Iterator[Moto]:
    # What this module changes, to put back afterwards.
    saved_config = copy.deepcopy(default_user_config)
    saved_port = os.environ.get("MOTO_PORT")
    left_out = registry.left_out()
    saved_state = state.current()
    interpreter_logger = logging.getLogger("moto.stepfunctions.parser")
    saved_level = interpreter_logger.level

    # The order of Engine._start.
    registry.apply()
    state.update(wait_time_scale=0)
    default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = True
    default_user_config.setdefault("lambda", {})["use_docker"] = False
    interpreter_logger.setLevel(logging.CRITICAL)  # failing states are logged with their whole tree
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    runtime: LambdaRuntime | None = None
    try:
        port = server.get_host_and_port()[1]
        endpoint = f"http://127.0.0.1:{port}"
        os.environ["MOTO_PORT"] = str(port)
        faults = Faults()
        runtime = LambdaRuntime(endpoint, REGION, faults, timeout_scale=0.02)
        state.update(lambda_runtime=runtime, faults=faults)
        env = Moto(endpoint, port, runtime, faults, "", "", {}, {}, server._server)

        env.role_arn = env.client("iam").create_role(
            RoleName="hooks-test",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )["Role"]["Arn"]
        env.client("dynamodb").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        env.function_arn = env.client("lambda").create_function(
            FunctionName=FUNCTION_NAME,
            Runtime="python3.11",
            Role=env.role_arn,
            Handler="app.handler",
            Code={"ZipFile": b"local"},
            Timeout=300,
            MemorySize=128,
        )["FunctionArn"]
        runtime.register(
            Function(
                logical_id="HooksFunction",
                name=FUNCTION_NAME,
                arn=env.function_arn,
                code_dir=FIXTURE_CODE,
                handler="app.handler",
                runtime="python3.11",
                timeout=300,
                memory_mb=128,
                environment={},
            ),
            warm=True,
        )
        for name, definition in (
            ("lambda", lambda_machine(env.function_arn)),
            ("put", PUT_MACHINE),
            ("child", CHILD_MACHINE),
            ("sync", sync_machine(f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:hooks-child")),
        ):
            env.machines[name] = env.client("stepfunctions").create_state_machine(
                name=f"hooks-{name}",
                definition=json.dumps(definition),
                roleArn=env.role_arn,
            )["stateMachineArn"]
        yield env
    finally:
        if runtime is not None:
            runtime.close()
        server.stop()
        from moto.backends import get_backend

        for service in SERVICES:
            get_backend(service).reset()  # type: ignore[call-overload]
        if saved_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = saved_port
        default_user_config.clear()  # type: ignore[attr-defined]
        default_user_config.update(saved_config)  # type: ignore[typeddict-item]
        if left_out is None:
            registry.remove()
        else:
            registry.apply(without=left_out, hooks_too=True)
        state.install(saved_state)
        interpreter_logger.setLevel(saved_level)


@pytest.fixture(autouse=True)
def hooked(moto: Moto) -> Iterator[None]:
    """Every test starts with every change installed (a test may leave one out) and no pending fault."""
    registry.apply()
    state.update(lambda_runtime=moto.runtime, faults=moto.faults)
    yield
    registry.apply()
    state.update(lambda_runtime=moto.runtime, faults=moto.faults)
    moto.faults.clear()
