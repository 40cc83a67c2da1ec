"""The functions' packages: each bundles its own code only (issue #18, "a small package").

Powertools comes from a layer (``PowertoolsLayer``, built by ``sam build`` from ``layers/powertools``, or
Powertools' public layer), and boto3 from the Lambda runtime, which ships it: "The Python runtimes include
the AWS SDK for Python (Boto3)" (AWS Lambda Developer Guide, "Building Lambda functions with Python",
https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html). ``make test`` builds the template and
fails when a built function is over 1 MB (``python -m bench.sizes``); these tests keep what runs locally
equal to what the layer ships, and every import of a function provided by something.
"""

from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path

from idemflow.engine.catalog import resource_types
from idemflow.template import Resolver, load_template
from tests.paths import PROJECT_ROOT, TEMPLATE_PATH

LAYER = PROJECT_ROOT / "layers" / "powertools"
RUNTIME_PROVIDES = {"boto3", "botocore", "s3transfer", "jmespath", "urllib3", "dateutil", "six"}
"""The packages the python3.12 Lambda runtime ships beside boto3 (boto3 and its dependencies)."""


def pins(requirements: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements file (comments and blank lines skipped)."""
    found = {}
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"{requirements}: {line!r} is not pinned with =="
            found[name.strip().lower()] = version.strip()
    return found


def test_the_layer_pins_what_the_handlers_run_with_locally() -> None:
    layer = pins(LAYER / "requirements.txt")
    assert "aws-lambda-powertools" in layer and "aws-xray-sdk" in layer  # the Tracer's SDK too
    assert {name: metadata.version(name) for name in layer} == layer


def test_no_function_bundles_a_dependency() -> None:
    for requirements in sorted((PROJECT_ROOT / "functions").glob("*/requirements.txt")):
        assert pins(requirements) == {}, f"{requirements}: take it from the layer or the runtime"


def _third_party_imports(source: Path) -> set[str]:
    tree = ast.parse(source.read_text())
    names = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    return {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - {"__future__"}


def test_every_import_of_a_function_comes_from_the_layer_or_the_runtime() -> None:
    from_layer = {
        top.strip()
        for name in pins(LAYER / "requirements.txt")
        for top in (metadata.distribution(name).read_text("top_level.txt") or name.replace("-", "_")).split()
    }
    for app in sorted((PROJECT_ROOT / "functions").glob("*/app.py")):
        missing = _third_party_imports(app) - from_layer - RUNTIME_PROVIDES
        assert not missing, f"{app} imports {sorted(missing)}: neither the layer nor the runtime provides it"


def _layers(overrides: dict[str, str]) -> object:
    template = load_template(TEMPLATE_PATH)
    params = {name: str(spec.get("Default", "")) for name, spec in template["Parameters"].items()} | overrides
    resolver = Resolver(template, "s", "eu-west-1", "123456789012", params, TEMPLATE_PATH, (), resource_types())
    return resolver.value(resolver.properties("ChargeFunction")["Layers"], "ChargeFunction.Layers")


def test_the_charge_function_uses_the_built_layer_by_default() -> None:
    assert _layers({}) == ["arn:aws:lambda:eu-west-1:123456789012:layer:s-PowertoolsLayer:1"]


def test_a_public_layer_version_uses_powertools_public_layer() -> None:
    # The public layer's ARN as Powertools documents it for python3.12 on arm64
    # (https://docs.powertools.aws.dev/lambda/python/latest/#lambda-layer).
    assert _layers({"PowertoolsPublicLayerVersion": "27"}) == [
        "arn:aws:lambda:eu-west-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-arm64:27"
    ]


def test_the_charge_function_runs_on_the_layers_architecture_and_runtime() -> None:
    template = load_template(TEMPLATE_PATH)
    fn = template["Globals"]["Function"]
    layer = template["Resources"]["PowertoolsLayer"]
    assert layer["Properties"]["CompatibleRuntimes"] == [fn["Runtime"]]
    assert layer["Properties"]["CompatibleArchitectures"] == fn["Architectures"]
    assert layer["Metadata"]["BuildArchitecture"] == fn["Architectures"][0]
    charge = template["Resources"]["ChargeFunction"]["Properties"]
    assert "Runtime" not in charge and "Architectures" not in charge  # Globals', the layer's
    # The Makefile builds the wheels for that runtime and architecture.
    makefile = (LAYER / "Makefile").read_text()
    assert "--python-version 3.12" in makefile and fn["Runtime"] == "python3.12"
    assert "manylinux2014_aarch64" in makefile and fn["Architectures"] == ["arm64"]


def test_import_idemflow_gives_its_version_and_public_names_without_loading_botocore_or_moto() -> None:
    # As Powertools re-exports its utility's surface: the contract's names and the key checks with the
    # package, the client (botocore) and the engine (moto) when first named.
    import importlib.metadata

    import idemflow

    assert idemflow.__version__ == importlib.metadata.version("idemflow")
    for name in idemflow.__all__:
        assert getattr(idemflow, name) is not None, name
    assert (
        idemflow.WorkflowError.KEY_REUSED == "IdempotencyKeyReused" and idemflow.start.__module__ == "idemflow.client"
    )
    assert loaded_by("idemflow", ("botocore", "moto")) == set()


def test_the_help_says_what_the_demo_does() -> None:
    from idemflow.cli import demo
    from idemflow.cli.parser import build_parser

    help_text = build_parser().format_help()
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    assert f"{words[demo.STEPS]} checked steps" in help_text


def test_the_engines_errors_are_one_leaf_module_that_the_cli_recognises_by_type() -> None:
    # idemflow.engine.errors imports nothing of idemflow: the CLI imports it (and so recognises an engine error
    # by its type, not its name) without loading the engine or moto.
    import ast
    from pathlib import Path

    from idemflow.cli.errors import EXIT_USAGE, as_cli_error
    from idemflow.engine import errors

    tree = ast.parse(Path(errors.__file__).read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)][1:]  # __future__ only
    refused = errors.EngineError("cannot use MockConfigFile.json")
    refused.__cause__ = errors.MockConfigError("bad entry")
    error = as_cli_error(refused)
    assert error is not None and error.code == EXIT_USAGE
    assert loaded_by("idemflow.cli.errors", ("moto",)) == set()


def loaded_by(module: str, packages: tuple[str, ...]) -> set[str]:
    """Which of ``packages`` importing ``module`` loads, in a fresh interpreter."""
    import subprocess
    import sys

    script = f"import sys, {module}; print(','.join(p for p in {packages!r} if p in sys.modules))"
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    return set(filter(None, found.split(",")))


def test_runtime_dependencies_take_ranges_tested_at_their_lower_bounds() -> None:
    # DEVELOPERS: pin exactly what the engine patches (moto); what a user's own project also depends on gets a
    # compatible range, tested at its lower bound: constraints.txt holds each lower bound, make test installs
    # with it, and the environment running this test has exactly those versions.
    import re
    import tomllib
    from importlib import metadata
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    dependencies = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    constraints = pins(root / "constraints.txt")
    ranged: dict[str, str] = {}
    for requirement in dependencies:
        name, spec = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?(.*)", requirement).groups()  # type: ignore[union-attr]
        if name == "moto":
            assert spec.startswith("==")
            continue
        lower = re.fullmatch(r">=([\w.]+),<([\w.]+)", spec)
        assert lower, f"{requirement}: a compatible range >=lower,<upper"
        ranged[name.lower()] = lower.group(1)
    assert ranged == constraints
    assert {name: metadata.version(name) for name in constraints} == constraints
    assert "-c constraints.txt" in (root / "Makefile").read_text()
