"""The idempotent workflow itself, shipped inside the package: ``template.yaml`` with its definition
(``statemachine/``), the example functions (``functions/``), the build files of their Powertools layer
(``layers/``) and sample events (``events/``).

In a checkout these are links to the project's top-level files (SAM's layout, which ``sam build`` reads);
the wheel carries copies. What the tools deploy by default is :func:`default_template`: the
``template.yaml`` of the current directory, as ``sam`` looks for it, else this packaged one.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATE_NAME = "template.yaml"


def packaged_template() -> Path:
    """The workflow's template as the package ships it."""
    return Path(__file__).parent / TEMPLATE_NAME


def packaged_workflow() -> Path:
    """The folder holding the packaged template, its definition, functions and events."""
    return Path(__file__).parent


def default_template(directory: Path | None = None) -> Path:
    """``template.yaml`` in ``directory`` (default: the current one) when there is one, else the packaged one."""
    here = (Path.cwd() if directory is None else directory) / TEMPLATE_NAME
    return here if here.is_file() else packaged_template()
