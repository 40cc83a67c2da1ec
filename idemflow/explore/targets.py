"""The templates the interleaving checker explores, declared by the project.

``[tool.idemflow.explore]`` in the ``pyproject.toml`` of the current directory names them::

    [tool.idemflow.explore]
    targets = { project = "template.yaml", outbox = "examples/outbox/template.yaml" }

Each runs with the payload of its sample event (``events/event.json`` beside it); a template whose
``Metadata.Idemflow.Effects`` says where its side effect writes also has its effects counted (the checker's
invariant on effects), through :meth:`idemflow.engine.view.WorkflowView.effects`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idemflow.contract import sample_payload
from idemflow.explore.errors import TargetsError


@dataclass(frozen=True)
class Target:
    """A template holding the workflow, and a payload its side effect accepts."""

    name: str
    template: Path
    payload: Any


def load_targets(repo: Path | None = None) -> dict[str, Target]:
    """The project's targets, in the order it declares them (the first one is the main one)."""
    root = Path.cwd() if repo is None else repo
    pyproject = root / "pyproject.toml"
    try:
        declared = tomllib.loads(pyproject.read_text())["tool"]["idemflow"]["explore"]["targets"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise TargetsError(
            f"{pyproject}: no [tool.idemflow.explore] targets ({exc}): name the templates to explore, "
            'e.g. targets = { project = "template.yaml" }'
        ) from exc
    targets = {}
    for name, location in dict(declared).items():
        template = root / str(location)
        try:
            payload = sample_payload(template)
        except (OSError, ValueError, KeyError) as exc:
            raise TargetsError(f"target {name}: {template}: no sample event beside it ({exc})") from exc
        targets[str(name)] = Target(str(name), template, payload)
    if not targets:
        raise TargetsError(f"{pyproject}: [tool.idemflow.explore] targets is empty")
    return targets
