"""The template loader reads with libyaml when PyYAML has it, for speed: it must read every template of the
project exactly as PyYAML's pure-Python safe loader does (YAML 1.1: ``yes`` is true, ``0755`` is 493)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from idemflow.template import loader as template
from tests.paths import PROJECT_ROOT


def project_templates() -> list[Path]:
    """Every template.yaml of the checkout, but for those in a hidden folder (the environments, sam's build,
    pytest's cache with the wheel test's venv) or in what npm or a build put there: those folders are not
    walked at all (every pytest worker collects this module, and walking the environments cost each one more
    than collecting)."""
    found = []
    for folder, subfolders, files in os.walk(PROJECT_ROOT):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in {"node_modules", "build"})
        if "template.yaml" in files:
            found.append(Path(folder) / "template.yaml")
    return sorted(found)


TEMPLATES = project_templates()


class _PurePythonLoader(yaml.SafeLoader):
    pass


_PurePythonLoader.add_multi_constructor("!", template._construct_tag)  # type: ignore[no-untyped-call]


def test_the_loader_is_libyamls_when_there_is_one() -> None:
    assert yaml.__with_libyaml__ and issubclass(template._CfnLoader, yaml.CSafeLoader)


@pytest.mark.parametrize("path", TEMPLATES, ids=[str(p.relative_to(PROJECT_ROOT)) for p in TEMPLATES])
def test_every_template_reads_as_the_pure_python_loader_reads_it(path: Path) -> None:
    expected: Any = yaml.load(path.read_text(), Loader=_PurePythonLoader)
    assert template.load_template(path) == expected


def test_yaml_1_1_scalars_read_the_same(tmp_path: Path) -> None:
    path = tmp_path / "template.yaml"
    path.write_text("Resources: {}\nValues: [yes, 0755, null, 1.10, '0755', !Ref X, !GetAtt A.B]\n")
    assert template.load_template(path)["Values"] == [
        True,
        493,
        None,
        1.1,
        "0755",
        {"Ref": "X"},
        {"Fn::GetAtt": ["A", "B"]},
    ]


def test_each_read_is_a_copy_of_its_own_and_a_changed_file_is_read_anew(tmp_path: Path) -> None:
    # The parsed template is kept by its text (a test run reads the same templates hundreds of times):
    # what one caller changes is not what the next reads, and a file rewritten (in the same instant, to
    # the same size) is read as it is now.
    path = tmp_path / "template.yaml"
    path.write_text("Resources: {A: {Type: X, Properties: {N: 1}}}\n")
    first = template.load_template(path)
    first["Resources"]["A"]["Properties"]["N"] = 99

    assert template.load_template(path)["Resources"]["A"]["Properties"] == {"N": 1}
    path.write_text("Resources: {A: {Type: X, Properties: {N: 2}}}\n")
    assert template.load_template(path)["Resources"]["A"]["Properties"] == {"N": 2}


def test_a_template_that_does_not_parse_is_refused_every_time(tmp_path: Path) -> None:
    path = tmp_path / "template.yaml"
    path.write_text("Resources: [unclosed\n")
    for _ in range(2):
        with pytest.raises(template.TemplateError, match="cannot read the template"):
            template.load_template(path)
