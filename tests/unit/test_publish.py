"""Publishing: the template carries what ``sam publish`` needs, at the package's version, and a project
nests it by ``ApplicationId`` and ``SemanticVersion`` (the engine nests the installed package's copy).

The Metadata properties and their constraints are the AWS SAM Developer Guide's ("AWS SAM template
Metadata section properties", https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/
serverless-sam-template-publishing-applications-metadata-properties.html); an application's ARN is
``arn:aws:serverlessrepo:<region>:<account>:applications/<name>`` (the Serverless Application Repository
API's ``applicationId``)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from idemflow.engine.stack import resolve_stack
from idemflow.template import SAR_APPLICATION, TemplateError, load_template, published_workflow
from idemflow.workflow import packaged_template
from tests.paths import PROJECT_ROOT, TEMPLATE_PATH

NAME = load_template(TEMPLATE_PATH)["Metadata"][SAR_APPLICATION]["Name"]
APP = f"arn:aws:serverlessrepo:eu-west-1:123456789012:applications/{NAME}"


def test_the_template_carries_what_sam_publish_requires() -> None:
    published = load_template(TEMPLATE_PATH)["Metadata"][SAR_APPLICATION]
    assert re.fullmatch(r"[a-zA-Z0-9\-]{1,140}", published["Name"])
    assert 1 <= len(published["Description"]) <= 256
    assert (
        re.fullmatch(r"[a-z0-9](([a-z0-9]|-(?!-))*[a-z0-9])?", published["Author"]) and len(published["Author"]) <= 127
    )
    assert len(published["Labels"]) <= 10
    assert all(re.fullmatch(r"[a-zA-Z0-9+\-_:/@]{1,127}", label) for label in published["Labels"])
    assert (PROJECT_ROOT / published["ReadmeUrl"]).is_file()
    # No intrinsic function: the key does not support them.
    assert all(isinstance(value, (str, list)) for value in published.values())


def test_the_published_version_is_the_packages() -> None:
    version = load_template(TEMPLATE_PATH)["Metadata"][SAR_APPLICATION]["SemanticVersion"]
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    assert version == pyproject["project"]["version"] == metadata.version("idemflow")


def test_the_published_workflow_at_the_installed_version_is_the_packaged_template() -> None:
    version = load_template(packaged_template())["Metadata"][SAR_APPLICATION]["SemanticVersion"]
    assert published_workflow(APP, version, "here") == packaged_template().resolve()
    gov = APP.replace("arn:aws:", "arn:aws-us-gov:").replace("eu-west-1", "us-gov-west-1")
    assert published_workflow(gov, version, "here") == packaged_template().resolve()


@pytest.mark.parametrize(
    ("application_id", "version", "message"),
    [
        (APP, "9.9.9", "SemanticVersion: '9.9.9', while the installed idemflow ships"),
        (APP.rsplit("/", 1)[0] + "/another-app", None, "application 'another-app' is not this workflow"),
        ("idempotent-workflow", None, "is not an application's ARN"),
        (APP.replace(":123456789012:", ":1234:"), None, "is not an application's ARN"),
    ],
)
def test_another_application_or_version_is_refused_by_name(
    application_id: str, version: str | None, message: str
) -> None:
    installed = load_template(packaged_template())["Metadata"][SAR_APPLICATION]["SemanticVersion"]
    with pytest.raises(TemplateError, match=re.escape(message)):
        published_workflow(application_id, version or installed, "Resources.App.Location")


def _nesting(tmp_path: Path, location: str) -> Path:
    template = tmp_path / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Resources:\n"
        "  Workflow:\n"
        "    Type: AWS::Serverless::Application\n"
        f"    Properties:\n      Location:\n{location}"
    )
    return template


def test_a_template_nesting_the_published_workflow_deploys_the_installed_copy(tmp_path: Path) -> None:
    version = load_template(packaged_template())["Metadata"][SAR_APPLICATION]["SemanticVersion"]
    template = _nesting(tmp_path, f"        ApplicationId: {APP}\n        SemanticVersion: '{version}'\n")
    stack = resolve_stack(template)
    assert set(stack.workflows()) == {"Workflow"}
    assert stack.nested["Workflow"].metadata[SAR_APPLICATION]["SemanticVersion"] == version


def test_a_location_that_is_neither_a_path_nor_an_application_is_refused(tmp_path: Path) -> None:
    template = _nesting(tmp_path, "        ApplicationId: x\n")
    with pytest.raises(
        TemplateError, match=r"Resources.Workflow.Location: a local template path .* or this workflow's"
    ):
        resolve_stack(template)
