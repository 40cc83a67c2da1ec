"""What a resolved template is: its resources (with the model a service read of each), outputs, nested stacks."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar


def physical_id(name: str) -> str:
    """A stable stand-in for an identifier AWS generates (an API's ``a1b2c3d4e5``): ten lower-case letters
    and digits derived from the resource's local name, so a redeployment keeps its URLs."""
    digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    return "".join(alphabet[(digest >> (5 * i)) % 36] for i in range(10))


@dataclass(frozen=True)
class Resource:
    """A resource of the stack: declared in the template (its Condition true), or made by SAM from a
    function's or state machine's ``Events``."""

    logical_id: str
    type: str
    model: Any = None
    """What the service that runs this type read of it; None when the engine does not run it."""
    made_by: str | None = None
    """``<LogicalId>.Events.<Name>`` for a resource SAM makes from an event source."""

    @property
    def served(self) -> bool:
        return self.model is not None


_M = TypeVar("_M")


@dataclass(frozen=True)
class Stack:
    name: str
    region: str
    account_id: str
    parameters: dict[str, str]
    resources: dict[str, Resource] = field(default_factory=dict)
    """Every resource, served or not, by logical id (SAM's event resources by ``made_by``)."""
    outputs: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    """The template's top-level ``Metadata``, as written (CloudFormation does not resolve it)."""

    nested: dict[str, Stack] = field(default_factory=dict)
    """The stacks of its ``AWS::Serverless::Application`` resources, by logical id."""
    listed: list[tuple[str, str, str]] = field(default_factory=list)
    """``(logical id, type, physical id)`` of each resource as CloudFormation lists it once SAM's transform has
    run (ListStackResources): a SAM function as its Lambda function, its role, its event sources' resources."""

    def models(self, kind: type[_M]) -> dict[str, _M]:
        """The models of this stack's resources that a service read as ``kind``, by logical id."""
        return {lid: r.model for lid, r in self.resources.items() if isinstance(r.model, kind)}

    def unserved(self) -> list[tuple[str, Resource]]:
        """The resources the engine accepts but does not run, with their stack's path, nested ones too."""
        return [(path, r) for path, stack in self.stacks() for r in stack.resources.values() if not r.served]

    def stacks(self, path: str = "") -> Iterator[tuple[str, Stack]]:
        """This stack and every nested one, with its path (``""``, ``"App"``, ``"App.Inner"``)."""
        yield path, self
        for logical_id, child in self.nested.items():
            yield from child.stacks(f"{path}.{logical_id}" if path else logical_id)

    def all_models(self, kind: type[_M]) -> list[_M]:
        """The models read as ``kind`` of this stack and every nested one."""
        return [m for _, stack in self.stacks() for m in stack.models(kind).values()]
