"""The embedded engine: the real template deployed into moto, behind one local endpoint.

One HTTP endpoint (moto's server, in this process) serves Step Functions, DynamoDB and Lambda, so
boto3 and the AWS CLI work against it with ``--endpoint-url``; Lambda invocations run in the local
runtime's worker processes. moto keeps its state per process: run one engine per process at a time.
"""

from __future__ import annotations

# First, before anything imports moto's interpreter: it holds back moto's Batch and EC2 (lazy_moto says why).
import idemflow.engine.core.lazy_moto  # noqa: F401

# isort: split
import contextlib
import dataclasses
import errno
import json
import logging
import os
import socket
import threading
import uuid
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import boto3
import botocore.session
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.core.config import default_user_config
from moto.core.exceptions import JsonRESTError, ServiceException
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.stepfunctions.parser.models import stepfunctions_parser_backends

from idemflow import client
from idemflow.contract import STATE_MACHINE_LOGICAL_ID
from idemflow.engine import registry, server, state
from idemflow.engine.background import Background
from idemflow.engine.catalog import SERVICES, resource_types
from idemflow.engine.core import loaders
from idemflow.engine.core.in_process_clients import dispatch_in_process
from idemflow.engine.core.in_process_clients import reset as forget_routes
from idemflow.engine.errors import BackgroundError, EngineError, MotoVersionError
from idemflow.engine.faults import Faults
from idemflow.engine.services.base import Service, ServiceContext, Settings
from idemflow.engine.services.dynamodb.tables import Tables
from idemflow.engine.services.lambda_.runtime import LambdaRuntime
from idemflow.engine.services.lambda_.service import Lambda
from idemflow.engine.services.stepfunctions import retention
from idemflow.engine.services.stepfunctions.execution_end import execution_done, forget_execution
from idemflow.engine.services.stepfunctions.executions import THREAD_ATTR, execution_output_text
from idemflow.engine.stack import WorkflowStack, resolve_stack
from idemflow.engine.state import DEFAULT_RETAINED_EXECUTIONS, EngineState, Gate
from idemflow.engine.view import WorkflowView
from idemflow.template import TemplateError, substitute
from idemflow.workflow import default_template

_S = TypeVar("_S", bound=Service)


_active: Engine | None = None
_active_lock = threading.Lock()


_session: boto3.session.Session | None = None
_session_lock = threading.Lock()


_in_process_clients: dict[tuple[str, str, bool], Any] = {}
"""In-process clients by service, region and signing, shared by the engines of the process: their requests
never leave it and reach moto's backends, which are the process's too, so nothing in one names its engine.
Made under ``_session_lock``."""


def _boto3_session() -> boto3.session.Session:
    """One boto3 session for every engine of the process: it keeps the service models it has loaded, so
    that an engine's clients are made without loading the models again (a test module, a CLI command
    and a checker run start an engine each). Sessions do not make clients concurrently: callers hold
    ``_session_lock``."""
    global _session
    if _session is None:
        _session = boto3.session.Session(botocore_session=loaders.sharing_data(botocore.session.get_session()))
    return _session


@dataclass(frozen=True)
class ExecutionOutcome:
    arn: str
    name: str
    status: str
    input: Any
    output: Any | None
    error: str | None
    cause: str | None
    path: list[str]
    """The states entered, in order."""

    @property
    def replayed(self) -> bool | None:
        return self.output.get("replayed") if isinstance(self.output, dict) else None


def _bind_error(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port, as one line to act on (None when it can)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # The server itself binds with SO_REUSEADDR (werkzeug's BaseWSGIServer.allow_reuse_address), so
        # a port whose last connections linger in TIME_WAIT after a previous server stopped is free to
        # it; the probe must judge the port the same way, or it refuses it for a minute or so.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} is in use on {host}: stop what uses it or pass another port (--port)"
            return f"cannot listen on {host}:{port}: {exc.strerror or exc} (check --host)"
    return None


class Engine:
    """Deploys ``template.yaml`` into an in-process moto server and runs its workflow locally."""

    def __init__(
        self,
        template_path: Path | None = None,
        *,
        parameter_overrides: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        wait_time_scale: float = 1.0,
        lambda_timeout_scale: float = 1.0,
        region: str = "us-east-1",
        stack_name: str = "idemflow",
        max_workers_per_function: int = 8,
        warm: bool = True,
        mock_config: Path | None = None,  # MockConfigFile.json: honour <arn>#<TestCase> (mock_config.py)
        retain_executions: int | None = DEFAULT_RETAINED_EXECUTIONS,
        retain_seconds: float | None = None,
        definition_text: str | None = None,
        workflow: str | None = None,
        iam: bool = True,
        without: Collection[str] = (),  # registry changes left out: for tests that show one is needed
        services: Sequence[type[Service]] = SERVICES,
    ):
        """``definition_text`` deploys another raw definition (placeholders and all) instead of the
        template's DefinitionUri file, with the same substitutions: the mutation tests and the
        interleaving checker's self-test derive it from the real file.

        ``workflow`` picks the workflow that :meth:`run`, :attr:`workflow` and the rest act on when the
        template holds several (a nested application's logical id, ``""`` for the template itself);
        by default the only one. :meth:`use_workflow` changes it on a running engine.

        ``retain_executions`` and ``retain_seconds``: how many closed Standard executions are kept, and for
        how long after each closed (None: no bound); the oldest closed goes first, a running one never, and an
        evicted one answers ExecutionDoesNotExist as on AWS past its 90 days
        (:mod:`idemflow.engine.services.stepfunctions.retention`).

        ``iam``: decide every call against the policies of the role that makes it, as AWS does
        (:mod:`idemflow.engine.services.iam`); False runs every call whatever the roles allow."""
        self.template_path = default_template() if template_path is None else template_path
        self.parameter_overrides = dict(parameter_overrides or {})
        self.host, self.requested_port = host, port
        self.wait_time_scale = wait_time_scale
        self.region, self.stack_name = region, stack_name
        self.warm = warm
        self.mock_config = mock_config
        self.definition_text = definition_text
        self.workflow_path = workflow
        self._workflow: WorkflowView | None = None
        self._workflow_for: str | None = None
        self.without = tuple(without)
        self.faults = Faults()
        self.context = ServiceContext(
            region=region,
            settings=Settings(
                wait_time_scale=wait_time_scale,
                lambda_timeout_scale=lambda_timeout_scale,
                max_workers_per_function=max_workers_per_function,
                warm=warm,
                mock_config=mock_config,
                retain_executions=retain_executions,
                retain_seconds=retain_seconds,
                iam=iam,
            ),
            faults=self.faults,
            client=self.client,
            template_path=self.template_path,
            parameter_overrides=self.parameter_overrides,
            stack_name=stack_name,
            names=resource_types(),
        )
        self.services: list[Service] = [service(self.context) for service in services]
        self.context.services = self.services
        self._types = resource_types(tuple(services))
        self._server: server.EngineServer | None = None
        self.max_workers_per_function = max_workers_per_function
        self.lambda_timeout_scale = lambda_timeout_scale
        self.stack: WorkflowStack | None = None
        self.port = 0
        self._previous_moto_port: str | None = None
        self._clients: dict[tuple[str, bool], Any] = {}
        self._clients_lock = threading.Lock()
        self.tables = Tables(region, lambda: self.client("dynamodb"))
        """The deployed tables' items."""

    # -- life cycle -------------------------------------------------------------------------------
    def start(self) -> Engine:
        global _active
        with _active_lock:
            if _active is not None:
                raise EngineError(
                    "an engine is already running in this process: stop it first (moto's state is per process)"
                )
            _active = self
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        try:
            stack = resolve_stack(
                self.template_path,
                parameter_overrides=self.parameter_overrides,
                stack_name=self.stack_name,
                region=self.region,
                types=self._types,
            )
        except TemplateError as exc:
            raise EngineError(f"cannot deploy {self.template_path.name}: {exc}") from exc
        # A template without the workflow (the conformance suite's) deploys its resources all the same;
        # what acts on a workflow then says there is none.
        if stack.workflows() or self.workflow_path is not None or self.definition_text is not None:
            try:
                workflow = stack.workflow(self.workflow_path)
            except TemplateError as exc:
                raise EngineError(f"cannot deploy {self.template_path.name}: {exc}") from exc
        if self.definition_text is not None:
            sm = workflow.state_machines[STATE_MACHINE_LOGICAL_ID]
            definition = substitute(self.definition_text, sm.substitutions, "definition_text")
            resource = workflow.resources[STATE_MACHINE_LOGICAL_ID]
            workflow.resources[STATE_MACHINE_LOGICAL_ID] = dataclasses.replace(
                resource, model=dataclasses.replace(sm, definition=definition)
            )
        problem = _bind_error(self.host, self.requested_port)
        if problem is not None:
            raise EngineError(problem)
        try:
            registry.apply(without=self.without)  # the engine's runtime and faults are attached below
        except MotoVersionError as exc:
            raise EngineError(str(exc)) from exc
        default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = True
        default_user_config.setdefault("lambda", {})["use_docker"] = False
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log line per request
        # moto logs every failed state at ERROR, including the failures the workflow expects (a
        # duplicate's conditional put); the execution history is where failures are reported.
        logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
        self._server = server.EngineServer(
            ip_address=self.host, port=self.requested_port, verbose=False, services=lambda: self.services
        )
        self._server.start()
        self.port = self._server.get_host_and_port()[1]
        # The interpreter's own clients call http://localhost:$MOTO_PORT.
        self._previous_moto_port = os.environ.get("MOTO_PORT")
        os.environ["MOTO_PORT"] = str(self.port)
        self.context.endpoint_url = self.endpoint_url
        self.context.background = Background()
        for service in self.services:
            service.open()
        attached = EngineState(faults=self.faults, wait_time_scale=self.wait_time_scale)
        for service in self.services:
            attached = service.attach(attached)
        state.install(attached)  # what moto's hooks reach, until stop()
        self.stack = self.context.stack = stack
        try:
            for service in self.services:
                service.deploy(stack)
        except TemplateError as exc:
            raise EngineError(f"cannot deploy {self.template_path.name}: {exc}") from exc
        for service in self.services:
            service.start()

    def stop(self) -> None:
        """Stop the services' loops, then the services, the server and moto's changes, and forget every
        resource. A loop's error is raised here, once everything is down."""
        global _active
        state.update(gate=None, clock_offset=0)  # the schedule and the clock of a test end with it
        failure: BaseException | None = None
        try:
            self.background.stop()
        except BackgroundError as exc:
            failure = exc
        for service in reversed(self.services):
            try:
                service.stop()
            except Exception as exc:  # the rest is stopped all the same: an engine left half up blocks the next
                failure = failure or exc
        self._clients.clear()
        if self._server is not None:
            self._server.stop()
            self._server = None
            if self._previous_moto_port is None:
                os.environ.pop("MOTO_PORT", None)
            else:
                os.environ["MOTO_PORT"] = self._previous_moto_port
        state.reset()  # nothing of this engine is reached from moto any more
        registry.remove()  # moto as it was: every patch, speedup and hook removed together
        forget_routes()
        for service in self.services:
            try:
                service.reset()
            except Exception as exc:
                failure = failure or exc
        with _active_lock:
            if _active is self:
                _active = None
        if failure is not None:
            raise failure

    def service(self, kind: type[_S]) -> _S:
        """This engine's instance of a service of the seam (``idemflow/engine/services``)."""
        return self.context.service(kind)

    @property
    def background(self) -> Background:
        """The owner of the services' loops (a new one at each start)."""
        return self.context.background

    def set_gate(self, gate: Gate | None) -> None:
        """Let ``gate`` see every task's request and every execution's end (None: no gate). Reset by stop."""
        state.update(gate=gate)

    def set_clock_offset(self, seconds: float) -> None:
        """Move the executions' clock (``$$.State.EnteredTime``) by ``seconds`` from real time: how a test
        makes a lease or a record expire without sleeping (every time the definition reads comes from the
        context object). Reset by stop."""
        state.update(clock_offset=seconds)

    @property
    def runtime(self) -> LambdaRuntime | None:
        """The local Lambda runtime running the template's functions (None when the engine is stopped)."""
        return self.service(Lambda).runtime

    def endpoints(self) -> list[tuple[str, str]]:
        """``(method, url)`` of every HTTP endpoint the template's services serve (a REST API's methods)."""
        return [endpoint for service in self.services for endpoint in service.endpoints()]

    def unserved(self) -> list[str]:
        """The template's resources the engine accepts but does not run, one line each (path, type, why)."""
        lines = []
        for path, resource in self._stack().unserved():
            spec = self._types.get(resource.type)
            why = spec.why_not_served if spec is not None and spec.why_not_served else "not emulated locally"
            where = f"{path}.{resource.logical_id}" if path else resource.logical_id
            made = " (made by SAM)" if resource.made_by else ""
            lines.append(f"{where}: {resource.type}{made}: {why}")
        return lines

    def __enter__(self) -> Engine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients ----------------------------------------------------------------------------------
    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client(self, service: str) -> Any:
        """A boto3 client served in-process by this engine (cached: clients are thread-safe and costly).

        It reaches the same moto backends as the HTTP endpoint without a round trip through the server;
        use :meth:`http_client` to go through the endpoint as an external caller does. The engines of a
        process in the same region share it: an event handler registered on it is theirs too.
        """
        return self._client(service, in_process=True)

    def http_client(self, service: str) -> Any:
        """A boto3 client for the engine's HTTP endpoint, as the AWS CLI or another process uses it."""
        return self._client(service, in_process=False)

    def _signed(self, client_name: str) -> bool:
        return any(s.signed_in_process and s.name == client_name for s in self.services)

    def _client(self, service: str, in_process: bool) -> Any:
        with self._clients_lock, _session_lock:
            client = self._clients.get((service, in_process))
            if client is None:
                signed = not in_process or self._signed(service)
                shared = (service, self.region, signed)
                client = _in_process_clients.get(shared) if in_process else None
                if client is None:
                    client = self._new_client(service, in_process, signed)
                    if in_process:
                        _in_process_clients[shared] = client
                self._clients[(service, in_process)] = client
            return client

    def _new_client(self, service: str, in_process: bool, signed: bool) -> Any:
        # inject_host_prefix=False: StartSyncExecution is served on a "sync-" host prefix on
        # AWS; locally every operation is on the one endpoint.
        client = _boto3_session().client(
            service,
            endpoint_url=None if in_process else self.endpoint_url,
            region_name=self.region,
            aws_access_key_id="local",
            aws_secret_access_key="local",
            config=Config(
                # AWS_ENDPOINT_URL(_<SERVICE>) in the user's shell (LocalStack users set it) would
                # send in-process calls to that endpoint instead of moto.
                ignore_configured_endpoint_urls=True,
                inject_host_prefix=False,
                retries={"max_attempts": 0},
                max_pool_connections=64,
                # in-process requests need no signature (IN_PROCESS_CONFIG says why), unless the
                # service reads it (Service.signed_in_process)
                signature_version=None if signed else UNSIGNED,
            ),
        )
        if in_process:
            client.meta.events.register("before-send", dispatch_in_process)
        return client

    def _stack(self) -> WorkflowStack:
        if self.stack is None:
            raise EngineError("the engine is not started")
        return self.stack

    @property
    def workflow(self) -> WorkflowView:
        """The workflow the engine acts on (see ``workflow`` in the constructor): its stack, state machine,
        table, side effect and scope, and what it did (records, invocations, effects)."""
        root = self._stack()
        cached = self._workflow
        # Read on every start and record read: found once per deployed stack and chosen workflow.
        if cached is not None and cached.root is root and self._workflow_for == self.workflow_path:
            return cached
        try:
            stack = root.workflow(self.workflow_path)
        except TemplateError as exc:
            raise EngineError(str(exc)) from exc
        path = next(path for path, found in root.workflows().items() if found is stack)
        view = WorkflowView(
            path, stack, root, tables=self.tables, runtime_of=lambda: self.runtime, client_of=self.client
        )
        self._workflow, self._workflow_for = view, self.workflow_path
        return self._workflow

    def use_workflow(self, path: str | None) -> None:
        """Act on the workflow at ``path`` from now on (see ``workflow`` in the constructor)."""
        self._stack().workflow(path)  # raises TemplateError naming the workflows there are
        self.workflow_path = path

    @property
    def workflows(self) -> list[str]:
        """The paths of the template's workflows (``""``: the template itself; else nested applications)."""
        return list(self._stack().workflows())

    # -- executions -------------------------------------------------------------------------------
    def start_execution(self, execution_input: Any, name: str | None = None, test_case: str | None = None) -> str:
        """Start the workflow with ``execution_input`` as it is (a JSON text or a value), unchecked: what
        StartExecution takes, so a test can send what the workflow itself must refuse. A key and a payload are
        started with :func:`idemflow.client.start` (against any endpoint; it checks them once) or, checked,
        with :func:`idemflow.client.execution_input` here. With ``test_case``, started on
        ``<state machine arn>#<test_case>``: that test case of the mock configuration file answers its states."""
        name = name or str(uuid.uuid4())
        body = execution_input if isinstance(execution_input, str) else json.dumps(execution_input)
        arn = self.workflow.state_machine_arn if test_case is None else f"{self.workflow.state_machine_arn}#{test_case}"
        # The call moto's StartExecution handler makes, without the request's round trip through botocore
        # and moto's parser and serializer (a tenth of an execution's CPU here). engine.client() is the API.
        with _as_client_error("StartExecution"):
            execution = self._sfn_backend().start_execution(arn, name, body)
        return str(execution.execution_arn)

    def _sfn_backend(self) -> Any:
        return stepfunctions_parser_backends[DEFAULT_ACCOUNT_ID][self.region]

    def forget_ended_executions(self) -> list[str]:
        """Let go of every ended execution; their ARNs. For a long run (the interleaving checker calls it
        after each schedule): without it the process grows with every execution, and slows, for ever.

        moto keeps every execution on its state machine, with its input, output, history and a copy of
        the state machine, and scans them all on each StartExecution and DescribeExecution. (moto's lists of
        every model instance it made, for its dashboard, no longer hold them: ``untracked-models``.)

        An execution whose thread still runs is kept. A forgotten one is gone as on AWS after its
        retention: DescribeExecution answers ExecutionDoesNotExist, and :meth:`wait` no longer finds it.
        """
        forgotten: list[str] = []
        machines = [m for sm in list(self._sfn_backend().state_machines) for m in (sm, *list(sm.versions.values()))]
        for state_machine in machines:
            ended = [
                e
                for e in list(state_machine.executions)
                if str(getattr(e.exec_status, "value", e.exec_status)) not in ("RUNNING", "PENDING_REDRIVE")
                and getattr(e.exec_worker, THREAD_ATTR, None) is None
            ]
            for execution in ended:  # one by one: a start may append to the list meanwhile
                state_machine.executions.remove(execution)
                forget_execution(execution.execution_arn)
                forgotten.append(str(execution.execution_arn))
        retention.forget(forgotten)  # gone already: the retention holds them no longer
        return forgotten

    def wait(self, execution_arn: str, timeout: float = 60.0, *, with_path: bool = True) -> ExecutionOutcome:
        """Wait for the execution to end (on an event, not by polling) and describe it."""
        if not execution_done(execution_arn).wait(timeout):
            raise EngineError(f"execution {execution_arn} did not finish within {timeout:.0f} s")
        forget_execution(execution_arn)
        return self.describe(execution_arn, with_path=with_path)

    def run(
        self, execution_input: Any, name: str | None = None, timeout: float = 60.0, *, with_path: bool = True
    ) -> ExecutionOutcome:
        return self.wait(self.start_execution(execution_input, name), timeout, with_path=with_path)

    def describe(self, execution_arn: str, *, with_path: bool = True) -> ExecutionOutcome:
        """The execution's status and output; ``with_path`` also reads its history for the states entered."""
        with _as_client_error("DescribeExecution"):
            execution = self._sfn_backend().describe_execution(execution_arn)
        desc = _described(execution)
        output = client.parse_output(desc)
        return ExecutionOutcome(
            arn=execution_arn,
            name=desc["name"],
            status=desc["status"],
            input=json.loads(desc["input"]),
            output=output,
            error=desc.get("error"),
            cause=desc.get("cause"),
            path=self.path(execution_arn) if with_path else [],
        )

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        return client.history(self.client("stepfunctions"), execution_arn)

    def path(self, execution_arn: str) -> list[str]:
        """The states the execution entered, in order: its history's stateEntered events, read from moto's
        Step Functions backend as :meth:`describe` reads the execution (the history through botocore is
        serialized and parsed again). A functional test compares it with the path of the API's history."""
        with _as_client_error("GetExecutionHistory"):
            execution = self._sfn_backend().describe_execution(execution_arn)
        return client.path(execution.to_history_output()["events"])


@contextlib.contextmanager
def _as_client_error(operation: str) -> Iterator[None]:
    """moto's service errors as botocore raises them from a client (what callers of the engine catch)."""
    try:
        yield
    except JsonRESTError as exc:  # moto's Step Functions errors (AWSError)
        error = {"Code": exc.error_type, "Message": exc.message}
        raise ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": exc.code}}, operation) from exc
    except ServiceException as exc:  # moto's newer error base
        error = {"Code": exc.code, "Message": exc.message}
        raise ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}, operation) from exc


def _described(execution: Any) -> dict[str, Any]:
    """DescribeExecution's answer, field for field as moto's handler builds it."""
    status = str(getattr(execution.status, "value", execution.status))
    desc: dict[str, Any] = {"name": execution.name, "status": status, "input": execution.execution_input}
    if status == "SUCCEEDED":
        output = execution.output
        if output is not None:
            desc["output"] = execution_output_text(output)
    if execution.error is not None:
        desc["error"] = execution.error
    if execution.cause is not None:
        desc["cause"] = execution.cause
    return desc
