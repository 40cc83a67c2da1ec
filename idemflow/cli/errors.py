"""What can go wrong, and how it is reported: exit statuses, :class:`CliError`, the one-line message.

Expected errors, the CLI's own and those of the libraries it drives (botocore, the template resolver,
the embedded engine), end as one line on stderr and exit status 2 (usage, input) or 1 (failed
executions, runtime errors).
"""

from __future__ import annotations

import sys

from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from idemflow import client, keys
from idemflow.engine.errors import BackgroundError, EngineError, MockConfigError, MotoVersionError
from idemflow.template import TemplateError

PROG = "idemflow"
EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


class CliError(Exception):
    """An expected error: printed as one line, exit status ``code``."""

    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


def as_cli_error(exc: Exception) -> CliError | None:
    """``exc`` as the error to report, or None when it is not an expected one (a bug: let it raise)."""
    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, keys.IdempotencyKeyInvalidError | keys.IdempotencyPayloadInvalidError):
        return CliError(f"{exc.error_name}: {exc}", EXIT_USAGE)  # bad input, named as the workflow names it
    if isinstance(exc, ClientError | BotoCoreError):
        return _aws_error(exc)
    if isinstance(exc, MotoVersionError):  # raised before moto is imported (idemflow.engine's first use)
        return CliError(str(exc), EXIT_FAILED)
    if isinstance(exc, client.ExecutionTimeoutError | TemplateError):
        return CliError(str(exc), EXIT_USAGE if isinstance(exc, TemplateError) else EXIT_FAILED)
    return _engine_error(exc)


def _aws_error(exc: ClientError | BotoCoreError) -> CliError:
    if isinstance(exc, EndpointConnectionError):
        return CliError(f"{exc} (is the endpoint running? e.g. idemflow serve)")
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        message = str(error.get("Message", exc))
        if message.lstrip().lower().startswith(("<!doctype", "<html")):
            # Not an AWS API's answer (a web page): its status says enough, the page would not.
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
            return CliError(
                f"{exc.operation_name}: the endpoint answered HTTP {status} with a web page, not an AWS API's "
                "answer: is --endpoint-url the engine (idemflow serve) or Step Functions Local?"
            )
        return CliError(f"{exc.operation_name}: {error.get('Code', 'error')}: {message}")
    return CliError(str(exc))


def _engine_error(exc: Exception) -> CliError | None:
    # idemflow.engine.errors imports nothing of the engine: the remote commands still never load it (nor moto).
    if isinstance(exc, BackgroundError):
        return CliError(str(exc), EXIT_FAILED)
    if not isinstance(exc, EngineError):
        return None
    # A template or mock config file that cannot be used is bad input (exit 2), like bad arguments.
    bad_input = isinstance(exc.__cause__, TemplateError | MockConfigError)
    return CliError(str(exc), EXIT_USAGE if bad_input else EXIT_FAILED)


def report(error: CliError) -> int:
    """Print ``error`` as one line on stderr; its exit status."""
    print(f"{PROG}: error: {' '.join(str(error).split())}", file=sys.stderr)
    return error.code
