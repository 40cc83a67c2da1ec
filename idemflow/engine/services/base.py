"""The seam between the engine and the AWS services it emulates: one :class:`Service` per service.

A service module owns, for the resource types it serves: how they are read from the template (its
:class:`~idemflow.template.ResourceType` entries), how they are deployed into moto, the loops it runs
(through the engine's :class:`~idemflow.engine.background.Background`), what it resets and how it tears
down. The engine knows services only through the list in ``services/__init__.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from idemflow.template import ResourceType, Stack

if TYPE_CHECKING:
    from idemflow.engine.engine import Engine


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

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def open(self) -> None:
        """Prepare what deployment needs (the engine's endpoint is up)."""

    def deploy(self, stack: Stack) -> None:
        """Create this service's resources of ``stack`` (and of its nested stacks) in moto."""

    def start(self) -> None:
        """Start this service's loops with ``self.engine.background.start(...)``."""

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
