"""The embedded engine's own errors, in one leaf module that imports nothing of the engine (nor moto).

The modules that raise them import them from here, and so does the CLI, which recognises each by its type
without loading the engine: ``idemflow record`` against an endpoint never imports moto.
"""

from __future__ import annotations

__all__ = [
    "BackgroundError",
    "DeliveryRefused",
    "EngineError",
    "InvalidJsonBody",
    "InvalidStatusOverride",
    "LambdaServiceError",
    "MappingTemplateError",
    "MockConfigError",
    "MotoVersionError",
    "OverrideAppliedTwice",
    "PolicyError",
    "UnknownFunctionError",
    "UnsupportedJsonPath",
]


class EngineError(RuntimeError):
    """The engine cannot start or deploy; the message says what to do."""


class MotoVersionError(RuntimeError):
    """The installed moto is not the version the engine's changes were written for."""


class BackgroundError(RuntimeError):
    """A background loop failed, or did not stop when asked; the message names the loop."""


class PolicyError(ValueError):
    """An IAM policy the evaluator cannot decide on as AWS would (an operator it does not know, a malformed
    statement); the message names the statement and what is wrong."""


class DeliveryRefused(Exception):
    """A service's delivery that the destination's resource policy does not allow (SNS to a queue whose policy does
    not let the topic send): a client-side error of that delivery; the message is the denial."""


class MockConfigError(ValueError):
    """The mock configuration file is unusable; the message names the file and the faulty entry."""


class LambdaServiceError(Exception):
    """An error of the Lambda service itself (not of the handler): Step Functions sees ``Lambda.<code>``."""

    def __init__(self, code: str, message: str, status: int = 500):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


class UnknownFunctionError(LambdaServiceError):
    def __init__(self, name: str):
        super().__init__("ResourceNotFoundException", f"Function not found: {name}", 404)


# -- API Gateway mapping templates (idemflow/engine/services/apigateway/vtl.py) ------------------------------
class MappingTemplateError(ValueError):
    """A mapping template cannot be rendered; the message says why."""


class OverrideAppliedTwice(MappingTemplateError):
    """A template set the same ``$context.requestOverride`` / ``responseOverride`` value twice, which API
    Gateway answers with a 5XX ("Overrides are final", developer guide, apigateway-override-request-
    response-parameters)."""


class InvalidJsonBody(MappingTemplateError):
    """``$input.json`` or ``$input.path`` was called on a body that is not JSON. (The door never gets here:
    its request validator refuses such a body before the template runs.)"""


class UnsupportedJsonPath(MappingTemplateError):
    """A JSONPath expression outside the supported subset (``$``, ``.name``, ``['name']``, ``[n]``)."""


class InvalidStatusOverride(MappingTemplateError):
    """``$context.responseOverride.status`` is not an HTTP status code (100-599)."""
