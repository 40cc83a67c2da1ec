"""The documentation speaks the contract's words, shows the current definition, and its links resolve.

README.md is the front page; the rest is in docs/, one page per subject. Each check reads the page that
holds the text it checks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from idemflow.contract import RecordStatus, WorkflowError
from idemflow.diagram import PAGE_NAME, diagram_block, embedded_block
from idemflow.template import load_template
from tests.paths import (
    CONTRACT_DOC,
    DEFINITION_PATH,
    DEPLOY_DOC,
    DOCS_PATH,
    PROJECT_ROOT,
    PROTOCOL_DOC,
    README_PATH,
)

README = README_PATH.read_text()
PROTOCOL = PROTOCOL_DOC.read_text()
CONTRACT = CONTRACT_DOC.read_text()


def test_diagram_is_generated_from_the_current_definition() -> None:
    assert PROJECT_ROOT / PAGE_NAME == PROTOCOL_DOC
    assert embedded_block(PROTOCOL) == diagram_block(), f"run `idemflow diagram --write` and commit {PAGE_NAME}"


def test_every_state_appears_in_the_diagram() -> None:
    states = json.loads(DEFINITION_PATH.read_text())["States"]
    block = embedded_block(PROTOCOL) or ""
    assert all(re.search(rf"\b{name}\b", block) for name in states)


def test_every_error_name_is_in_the_contract_and_every_status_in_the_record() -> None:
    for error in WorkflowError:
        assert f"`{error.value}`" in CONTRACT, error
    record = PROTOCOL.split("\n## The record\n", 1)[1]
    for status in RecordStatus:
        assert f"`{status.value}`" in record, status


def test_every_template_parameter_is_documented_with_the_deployment() -> None:
    deploy = DEPLOY_DOC.read_text()
    for name in load_template()["Parameters"]:
        assert f"`{name}`" in deploy, name


def test_the_two_setup_commands_exist_in_the_makefile_and_ci_runs_the_test_one() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert "make demo" in README and "make test" in README
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (PROJECT_ROOT / ".ci" / "run").read_text()


def test_what_make_test_needs_beyond_python_is_said_and_installed() -> None:
    # make test needs Node and npm (asl-validator); make bench runs the suite, so it installs asl-validator
    # too.
    assert "Node.js" in README and "npm" in README and "asl-validator" in README
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    targets = {line.split(":")[0]: line for line in makefile.splitlines() if re.match(r"^[a-z]+:", line)}
    assert "$(NODE_STAMP)" in targets["test"] and "$(NODE_STAMP)" in targets["bench"]


def test_the_side_effect_contract_names_real_fault_helpers_and_contract_errors() -> None:
    from idemflow import contract
    from idemflow.engine.faults import Faults

    section = CONTRACT.split("## The side-effect contract", 1)[1].split("\n## ", 1)[0]
    helpers = set(re.findall(r"`(\w+)\((?:fn|\")", section))
    assert helpers == {"fail_next", "timeout_next", "crash_next", "lose_response_next", "before_dynamodb"}
    assert all(callable(getattr(Faults, name, None)) for name in helpers)
    for name in (
        *contract.SIDE_EFFECT_REQUEST_FIELDS,
        *contract.LAMBDA_TRANSIENT_ERRORS,
        *contract.OUTCOME_UNKNOWN_ERRORS,
    ):
        assert f"`{name}`" in section or f"{name}`" in section, name


# -- links: every relative link of README.md and docs/*.md resolves, its anchor too ---------------------------
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.I)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def pages() -> list[Path]:
    return [README_PATH, *sorted(DOCS_PATH.glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text (inline markup and link targets dropped), lower case,
    punctuation other than ``-`` and ``_`` removed, each space a ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors of a page: each heading's (a repeated one gets ``-1``, ``-2``, ... as on GitHub) and each
    ``<a id>``."""
    text = FENCE.sub("", markdown)
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in HEADING.findall(text):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found | set(HTML_ANCHOR.findall(text))


def links(markdown: str) -> list[str]:
    return LINK.findall(FENCE.sub("", markdown))


def test_the_anchor_rules_are_githubs() -> None:
    assert slug("Performance (`make bench`)") == "performance-make-bench"
    assert slug("Start a project around your function: `idemflow init`") == (
        "start-a-project-around-your-function-idemflow-init"
    )
    assert slug("Fidelity: the engine answers as AWS does") == "fidelity-the-engine-answers-as-aws-does"
    assert slug("What it guarantees, and what it does not") == "what-it-guarantees-and-what-it-does-not"
    assert slug("snake_case and [a link](x.md)") == "snake_case-and-a-link"
    assert anchors('# A\n\n## A\n\n```\n# not a heading\n```\n<a id="x-y"></a>') == {"a", "a-1", "x-y"}
    assert links("[a](b.md#c) [ext](https://x.y) ![img](i.png)\n```\n[no](code.md)\n```\n") == [
        "b.md#c",
        "https://x.y",
        "i.png",
    ]


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix())
def test_every_relative_link_resolves_to_a_file_and_its_anchor(page: Path) -> None:
    broken = []
    for target in links(page.read_text()):
        if EXTERNAL.match(target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no file {linked}")
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked.read_text())):
            broken.append(f"{target}: no heading or anchor #{anchor} in {linked}")
    assert broken == []


def test_every_docs_page_is_linked_from_the_front_page() -> None:
    linked = {(README_PATH.parent / target.partition("#")[0]).resolve() for target in links(README)}
    assert [p.name for p in sorted(DOCS_PATH.glob("*.md")) if p.resolve() not in linked] == []
