"""The embedded engine's own errors, in one leaf module that imports nothing of the engine (nor moto).

The modules that raise them import them from here, and so does the CLI, which recognises each by its type
without loading the engine: ``idemflow record`` against an endpoint never imports moto.
"""

from __future__ import annotations

__all__ = [
    "BackgroundError",
    "EngineError",
    "LambdaServiceError",
    "MockConfigError",
    "MotoVersionError",
    "UnknownFunctionError",
]


class EngineError(RuntimeError):
    """The engine cannot start or deploy; the message says what to do."""


class MotoVersionError(RuntimeError):
    """The installed moto is not the version the engine's changes were written for."""


class BackgroundError(RuntimeError):
    """A background loop failed, or did not stop when asked; the message names the loop."""


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
