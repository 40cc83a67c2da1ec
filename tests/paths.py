"""Where the tests find the project they test: the checkout this folder is in (the package names none)."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TEMPLATE_PATH = PROJECT_ROOT / "template.yaml"
README_PATH = PROJECT_ROOT / "README.md"
