"""The one moto version the engine's changes were written for, and the check that refuses any other.

A leaf that imports no moto: :mod:`idemflow.engine` calls :func:`check_moto` before anything imports moto, so
that another version is refused in one line saying what to install, not with a traceback from moto's
internals.
"""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Final

from idemflow.engine.errors import MotoVersionError

__all__ = ["PINNED_MOTO", "check_moto", "installed_moto"]

#: The moto version whose internals every change was written and tested against (pyproject.toml pins
#: the same, and a unit test checks that they agree).
PINNED_MOTO: Final = "5.2.5"


@functools.cache  # read once per process: every `from idemflow.engine import Engine` checks it
def installed_moto() -> str:
    return importlib.metadata.version("moto")


def check_moto() -> None:
    """Raise :class:`MotoVersionError` (one line, what to do) unless the pinned moto is installed."""
    try:
        installed = installed_moto()
    except importlib.metadata.PackageNotFoundError:
        installed = "none"
    if installed != PINNED_MOTO:
        raise MotoVersionError(
            f"the embedded engine patches moto {PINNED_MOTO}'s internals, but moto {installed} is installed: "
            "install the pinned version (pip install "
            "'moto[apigateway,awslambda,dynamodb,dynamodbstreams,events,kinesis,s3,sns,sqs,stepfunctions]"
            f"=={PINNED_MOTO}', "
            "or `make test`, which installs the project's pins)"
        )
