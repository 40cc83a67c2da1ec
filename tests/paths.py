"""Where the tests find the project they test: the checkout this folder is in (the package names none)."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TEMPLATE_PATH = PROJECT_ROOT / "template.yaml"
README_PATH = PROJECT_ROOT / "README.md"
DOCS_PATH = PROJECT_ROOT / "docs"
"""The documentation beyond the front page (README.md), one page per subject."""
PROTOCOL_DOC = DOCS_PATH / "protocol.md"
CONTRACT_DOC = DOCS_PATH / "contract.md"
DOORS_DOC = DOCS_PATH / "doors.md"
DEPLOY_DOC = DOCS_PATH / "deploy.md"
LAYOUT_DOC = DOCS_PATH / "layout.md"


def _definition_path() -> Path:
    from idemflow.diagram import definition_path

    return definition_path(TEMPLATE_PATH)


DEFINITION_PATH = _definition_path()
"""The workflow's definition: the file its template's DefinitionUri names (one place, read from the template)."""
