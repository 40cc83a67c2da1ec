"""The side effects the workflow's promises are tested against: found, not listed.

An example puts its function under the workflow's path, race, fault and interleaving tests by placing a
``side_effect.py`` beside its own tests (``tests/<example>/`` or ``examples/<example>/tests/``) that
defines:

* ``NAME``: the id its tests run under;
* ``TEMPLATE``: the template that deploys it with the workflow;
* ``PAYLOAD`` and ``OTHER_PAYLOAD``: two payloads it accepts (a key reused with the other is refused);
* ``REJECTED_PAYLOAD`` and ``REJECTED_ERROR``: a payload it refuses, and the error it refuses it with;
* ``GUARDED``: whether it guards itself against a second invocation for a key (the contract's own guard);
* ``effects(engine, key)``: how many effects it left for a key, read from its own table.

With a function that guards itself nothing shows a defect of the workflow; with one that does not (every
invocation writes a row), one effect per key is the workflow's doing alone.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from idemflow.engine import Engine
from tests.paths import PROJECT_ROOT, TEMPLATE_PATH

SPEC_GLOBS = ("tests/*/side_effect.py", "examples/*/tests/side_effect.py")

DECLINED = "SideEffectDeclinedError"
"""The function's own error, as the tests inject it: any name the definition does not retry (it says nothing
happened)."""


@dataclass(frozen=True)
class SideEffect:
    name: str
    template: Path
    payload: Any
    other_payload: Any
    rejected_payload: Any
    rejected_error: str
    guarded: bool
    count: Callable[[Engine, str], int]
    source: Path
    """The side_effect.py it was read from."""

    def effects(self, engine: Engine, key: str) -> int:
        return self.count(engine, key)

    def transient_error(self, engine: Engine) -> str:
        """The error the template tells the workflow to retry (its SideEffectTransientError)."""
        return engine.workflow.stack.parameters["SideEffectTransientError"]


def _load(path: Path) -> ModuleType:
    """The module at ``path``: imported by its dotted name inside a package (so it is the one module its
    neighbours import), else from its file under a name of its own."""
    relative = path.relative_to(PROJECT_ROOT).with_suffix("")
    if all((PROJECT_ROOT / Path(*relative.parts[:i]) / "__init__.py").is_file() for i in range(1, len(relative.parts))):
        return importlib.import_module(".".join(relative.parts))
    spec = importlib.util.spec_from_file_location("side_effect_" + "_".join(relative.parts[:-1]), path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _side_effect(path: Path) -> SideEffect:
    spec = _load(path)
    return SideEffect(
        name=spec.NAME,
        template=Path(spec.TEMPLATE),
        payload=spec.PAYLOAD,
        other_payload=spec.OTHER_PAYLOAD,
        rejected_payload=spec.REJECTED_PAYLOAD,
        rejected_error=spec.REJECTED_ERROR,
        guarded=bool(spec.GUARDED),
        count=spec.effects,
        source=path,
    )


def discover(root: Path = PROJECT_ROOT) -> tuple[SideEffect, ...]:
    paths = sorted(p for pattern in SPEC_GLOBS for p in root.glob(pattern))
    return tuple(_side_effect(p) for p in paths)


SIDE_EFFECTS = discover()
IDS = [s.name for s in SIDE_EFFECTS]
DEFAULT = next(s for s in SIDE_EFFECTS if s.template.resolve() == TEMPLATE_PATH.resolve())
"""The side effect the project's template deploys when SideEffectFunctionArn is empty."""
