"""The engine's HTTP endpoint: moto's threaded server, with a fast path for DynamoDB's JSON requests.

One endpoint serves every service the engine runs, as AWS's regional endpoints would; boto3 and the AWS
CLI reach it with ``--endpoint-url``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from botocore.awsrequest import AWSPreparedRequest
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from idemflow.engine.core import in_process_clients, keep_alive

if TYPE_CHECKING:
    from idemflow.engine.services.base import Service

# The functions' DynamoDB calls come over HTTP. moto's server hands each one through werkzeug, Flask's
# URL map, its host-to-service inference and a request conversion before the handler: a third of a
# DynamoDB call's cost here. A JSON-protocol DynamoDB request names its target and region in its headers,
# so this front sends it straight to the handler dispatch_in_process uses; anything else goes to moto's
# app unchanged.
_DYNAMODB_TARGET = "DynamoDB_20120810."
_CREDENTIAL_REGION = re.compile(r"Credential=[^/]+/\d{8}/([a-z0-9-]+)/dynamodb/aws4_request")
# The service a SigV4 request is signed for: in its Authorization header, or a presigned URL's query.
_CREDENTIAL_SERVICE = re.compile(r"Credential=[^/&]+/\d{8}/[a-z0-9-]+/([a-z0-9-]+)/aws4_request")
_PRESIGNED_SERVICE = re.compile(
    r"X-Amz-Credential=[^&]+?(?:/|%2F)\d{8}(?:/|%2F)[a-z0-9-]+(?:/|%2F)([a-z0-9-]+)(?:/|%2F)"
)


class DynamoDBFront:
    """WSGI middleware in front of moto's server app: DynamoDB JSON requests skip Flask."""

    def __init__(self, app: Callable[..., Any]):
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        region = self._region(environ)
        if region is None:
            return self.app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        headers = {
            key[5:].replace("_", "-").title(): value for key, value in environ.items() if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        request = AWSPreparedRequest("POST", f"https://dynamodb.{region}.amazonaws.com/", headers, body, False)
        response = in_process_clients.dispatch_in_process(request)
        assert response is not None  # moto serves DynamoDB: never a passthrough
        content = response.content
        reply = [(name, str(value)) for name, value in response.headers.items() if name.lower() != "content-length"]
        reply.append(("Content-Length", str(len(content))))
        start_response(f"{response.status_code} {HTTPStatus(response.status_code).phrase}", reply)
        return [content]

    @staticmethod
    def _region(environ: dict[str, Any]) -> str | None:
        if environ.get("REQUEST_METHOD") != "POST" or environ.get("PATH_INFO", "/") != "/":
            return None
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith(_DYNAMODB_TARGET):
            return None
        match = _CREDENTIAL_REGION.search(str(environ.get("HTTP_AUTHORIZATION", "")))
        return match.group(1) if match else None


class ServicesFront:
    """WSGI middleware: each of the engine's services may answer a request first (``Service.wsgi``), in the
    services' order; what none answers goes to moto's app."""

    def __init__(self, app: Callable[..., Any], services: Callable[[], Sequence[Service]]):
        self.app, self.services = app, services

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        services = self.services()
        for service in services:
            answer = service.wsgi(environ, start_response)
            if answer is not None:
                return answer
        if services:
            refused = self._not_served(environ, start_response, services)
            if refused is not None:
                return refused
        return self.app(environ, start_response)

    @staticmethod
    def _not_served(
        environ: dict[str, Any], start_response: Callable[..., Any], services: Sequence[Service]
    ) -> Iterable[bytes] | None:
        """A 404 naming what is served, for a request that no service of the engine takes: unsigned (a plain
        HTTP client off every door's path) or signed for a service the engine does not run. moto's app would
        route it to whatever service it guesses (S3 for an unsigned POST) and answer that service's error.
        moto's own API (``/moto-api/``) stays open."""
        if str(environ.get("PATH_INFO", "")).startswith("/moto-api/"):
            return None
        served = sorted({s.signing_name or s.name for s in services})
        found = _CREDENTIAL_SERVICE.search(str(environ.get("HTTP_AUTHORIZATION", ""))) or _PRESIGNED_SERVICE.search(
            str(environ.get("QUERY_STRING", ""))
        )
        signed = found.group(1) if found else None
        if signed in served:
            return None
        doors = [f"{method} {url}" for s in services for method, url in s.endpoints()]
        what = f"signed for {signed}" if signed else "unsigned"
        served_doors = f" and the template's HTTP doors: {', '.join(doors)}" if doors else "; no HTTP door is declared"
        message = (
            f"{environ.get('REQUEST_METHOD', 'GET')} {environ.get('PATH_INFO', '/')} ({what}) is not served here: "
            f"this endpoint serves the AWS services {', '.join(served)} (SigV4-signed requests){served_doors}"
        )
        body = json.dumps({"message": message, "services": served, "doors": doors}).encode()
        start_response(
            f"{HTTPStatus.NOT_FOUND.value} {HTTPStatus.NOT_FOUND.phrase}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        )
        return [body]


class EngineServer(ThreadedMotoServer):
    """moto's threaded server with the services' fronts, then :class:`DynamoDBFront`, before its app."""

    def __init__(self, *args: Any, services: Callable[[], Sequence[Service]] = list, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._services = services

    def _server_entry(self) -> None:
        # The services first: IAM refuses a call its caller's role does not allow, whichever service it is for.
        app = ServicesFront(DynamoDBFront(DomainDispatcherApplication(create_backend_app)), self._services)
        self._server = make_server(self._ip_address, self._port, app, True, request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        # Its loop looks for shutdown() between two polls (every 0.5 s by default): a short poll lets an
        # engine's stop return as soon as the server has stopped.
        self._server.serve_forever(poll_interval=0.05)

    def stop(self) -> None:
        super().stop()
        if self._server is not None:
            keep_alive.close_kept(self._server)  # their threads wait for a next request
