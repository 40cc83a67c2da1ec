"""The seam between the engine and the AWS services it emulates: one :class:`Service` per service.

A service module owns, for the resource types it serves: how they are read from the template (its
:class:`~idemflow.template.ResourceType` entries), how they are deployed into moto, the loops it runs
(through the engine's :class:`~idemflow.engine.background.Background`), what it resets and how it tears
down. The engine knows services only through the list in ``idemflow/engine/catalog.py``.

A service sees the engine through a :class:`ServiceContext` (clients, the background owner, region,
endpoint, settings, faults, the deployed stack and its sibling services), never the engine itself, and
hands the engine the parts moto's hooks reach through :meth:`Service.attach`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from idemflow.engine.background import Background
from idemflow.engine.errors import EngineError
from idemflow.engine.faults import Faults
from idemflow.engine.state import EngineState
from idemflow.template import ResourceType, Stack

_S = TypeVar("_S", bound="Service")


@dataclass(frozen=True)
class Settings:
    """How the engine was asked to run (its constructor's arguments that services read)."""

    wait_time_scale: float = 1.0
    lambda_timeout_scale: float = 1.0
    max_workers_per_function: int = 8
    warm: bool = True
    mock_config: Path | None = None
    retain_executions: int | None = None
    retain_seconds: float | None = None
    iam: bool = True
    """Decide every call against the policies of the role that makes it, as AWS does (``--no-iam`` turns it off)."""


@dataclass(eq=False)
class ServiceContext:
    """What a service may use of the engine. The engine fills ``endpoint_url`` once its server listens,
    ``background`` at each start and ``stack`` once the template is resolved; nothing else writes them."""

    region: str
    settings: Settings
    faults: Faults
    client: Callable[[str], Any]
    """A boto3 client served in-process by the engine (``client("sqs")``)."""
    background: Background = field(default_factory=Background)
    endpoint_url: str = ""
    stack: Stack | None = None
    services: list[Service] = field(default_factory=list)
    template_path: Path | None = None
    """The template the stack was resolved from, with the parameter values and stack name it was given."""
    parameter_overrides: dict[str, str] = field(default_factory=dict)
    stack_name: str = "idemflow"
    names: dict[str, ResourceType] = field(default_factory=dict)
    """Every resource type of the catalog, served here or not: how each is named (a role's policy names them)."""

    def service(self, kind: type[_S]) -> _S:
        """The engine's instance of another service (the IAM service's role, say)."""
        found = next((s for s in self.services if isinstance(s, kind)), None)
        if found is None:
            raise EngineError(f"the engine runs no {kind.__name__} service")
        return found


class Service:
    """One AWS service as the engine runs it. The engine calls, in order: :meth:`open` (the server runs;
    nothing is deployed yet), :meth:`deploy` (the resolved stack, nested stacks included), :meth:`start`
    (loops), and on the way down :meth:`stop` (services in reverse order, after the engine's background
    loops were joined) and :meth:`reset` (moto's backends)."""

    name: ClassVar[str]
    resource_types: ClassVar[tuple[ResourceType, ...]] = ()
    """The template's resource types this service reads (and names, for Ref and Fn::GetAtt)."""
    moto_backends: ClassVar[tuple[str, ...]] = ()
    """The moto backends holding this service's state, reset when the engine stops."""
    signing_name: ClassVar[str | None] = None
    """The service's name in a SigV4 credential scope (``.../<region>/<signing name>/aws4_request``) when it is
    not :attr:`name`: the endpoint hands moto only the requests signed for a service the engine runs."""
    signed_in_process: ClassVar[bool] = False
    """The engine's in-process client signs its requests (none needs it, but a service that reads the signature
    to tell who asks: moto's S3 takes an unsigned request for an anonymous one)."""

    def __init__(self, context: ServiceContext) -> None:
        self.context = context

    def open(self) -> None:
        """Prepare what deployment needs (the engine's endpoint is up)."""

    def attach(self, state: EngineState) -> EngineState:
        """``state`` with the parts this service plugs into moto's hooks (its Lambda runtime, say): the engine
        installs what the services attach once they are open, and resets it when it stops."""
        return state

    def deploy(self, stack: Stack) -> None:
        """Create this service's resources of ``stack`` (and of its nested stacks) in moto."""

    def start(self) -> None:
        """Start this service's loops with ``self.context.background.start(...)``."""

    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes] | None:
        """Answer an HTTP request to the engine's endpoint that is this service's (a REST API's stage, say),
        as a WSGI application does; None leaves it to the next service, and finally to moto."""
        return None

    def endpoints(self) -> list[tuple[str, str]]:
        """``(method, url)`` of what this service serves on the engine's endpoint (a REST API's methods),
        for ``idemflow serve``'s banner."""
        return []

    def stop(self) -> None:
        """Release what :meth:`open` acquired."""

    def reset(self) -> None:
        """Forget every resource and item: moto's backends for this service back to empty. A backend whose
        module was never imported holds nothing, and is left unimported (importing moto.apigateway for a
        template that has no API would be most of the work of resetting it)."""
        from moto.backends import ALT_SERVICE_NAMES, get_backend

        for backend in self.moto_backends:
            module = backend.replace("-", "")
            if f"moto.{ALT_SERVICE_NAMES.get(module, module)}" in sys.modules:
                get_backend(backend).reset()  # type: ignore[call-overload]
