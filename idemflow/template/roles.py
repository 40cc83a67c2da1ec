"""The IAM roles a template deploys, as the SAM transform writes them and CloudFormation resolves them.

The template is run through the SAM transform ``sam deploy`` runs (aws-sam-translator, in-process and offline): it
makes a role for each SAM function and state machine without a ``Role`` of its own, expands SAM's policy templates
(``DynamoDBCrudPolicy``, ``LambdaInvokePolicy``, ``SQSSendMessagePolicy``, ``StepFunctionsExecutionPolicy``...) into
statements, and names the managed policies it attaches by ARN. Then the transformed template is resolved by the
template's :class:`~idemflow.template.resolver.Resolver`, with the resource types the caller gives (the engine's),
so that every ``Ref``, ``Fn::GetAtt``, ``Fn::Sub`` and ``Fn::If`` in a policy gives the name or ARN the engine
deploys, and a role whose ``Condition`` is false does not exist.

What the transform needs offline (the notes of the embedded engine, "SAM tooling offline"): a region (given here to
the translator's boto3 session, rather than through ``AWS_DEFAULT_REGION``: the process's environment is not
changed), a managed-policy loader (:func:`~idemflow.template.managed_policies.managed_policy_map`, no call to IAM),
and packaged artifacts: a local ``CodeUri``, ``ContentUri`` or ``DefinitionUri`` is replaced by an S3 URI standing
for it, and an application's ``Location`` by an S3 URL, both kept in :attr:`Transformed.artifacts`; the
applications are given back to the resolver as written, which nests each by its template.
"""

from __future__ import annotations

import copy
import functools
import importlib.metadata
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from idemflow import disk_cache
from idemflow.template.errors import TemplateError
from idemflow.template.loader import load_template
from idemflow.template.managed_policies import MANAGED_POLICIES, managed_policy_map
from idemflow.template.resolver import Resolver, ResourceType, parameter_values
from idemflow.template.values import mapping

_ROLE = "AWS::IAM::Role"
_APPLICATION = "AWS::Serverless::Application"
_ARTIFACTS = ("CodeUri", "ContentUri", "DefinitionUri")
_BUCKET = "idemflow-local-artifacts"


@dataclass(frozen=True)
class Policy:
    """One policy document of a role: an inline policy (by its ``PolicyName``) or a managed one (by its ARN)."""

    name: str
    document: dict[str, Any]
    managed: bool = False


@dataclass(frozen=True)
class Role:
    """A role the stack creates, resolved."""

    logical_id: str
    path: str
    """The stack it belongs to: ``""`` for the template itself, else its nested application's path (``Workflow``)."""
    name: str
    arn: str
    assumed_by: tuple[str, ...]
    """The logical ids of the resources that pass the role (a function's ``Role``, a state machine's ``RoleArn``, a
    rule's target's, a pipe's, an API method's ``Credentials``), in the stack's order."""
    services: tuple[str, ...]
    """The service principals its trust policy lets assume it (``states.amazonaws.com``)."""
    policies: tuple[Policy, ...] = field(default_factory=tuple)

    @property
    def documents(self) -> list[dict[str, Any]]:
        return [policy.document for policy in self.policies]


@dataclass(frozen=True)
class Transformed:
    """A template as the SAM transform leaves it, with the local paths it was given S3 stand-ins for."""

    template: dict[str, Any]
    artifacts: dict[str, str]
    """Each stand-in (``s3://idemflow-local-artifacts/<LogicalId>/<Property>``) to the path written in the template."""


def transform(template: dict[str, Any], region: str) -> Transformed:
    """``template`` (as :func:`~idemflow.template.loader.load_template` reads it; not changed) through the SAM
    transform, offline. An application keeps its ``Location`` as written.

    The transform depends on the template and the region only (parameter values are CloudFormation's to resolve,
    after it): an engine started again on the same template reuses the result of the first."""
    text, artifacts = _transform(json.dumps(template), region)  # the resources' order is kept: roles list users in it
    return Transformed(json.loads(text), dict(artifacts))  # a copy of its own (JSON text reads faster than deepcopy)


MAX_KEPT_TRANSFORMS: Final = 64
_TRANSFORM_FORMAT: Final = 1
"""Bumped when what :func:`_translate` gives changes for the same template (the stand-ins, say)."""


@functools.lru_cache(maxsize=32)
def _transform(text: str, region: str) -> tuple[str, dict[str, str]]:
    """The transform of ``text`` in ``region``: this process's, or kept on disk by an earlier process
    (:mod:`idemflow.disk_cache`), since importing the translator alone costs some 0.7 s of CPU, each time a
    process starts an engine; the translator's version names the folder, as it decides the result."""
    # The managed-policy names the loader gives are an input too: a policy added to the table is seen at once.
    key = json.dumps([region, sorted(managed_policy_map().items()), text])
    path = disk_cache.cache_file(_transforms_folder(), key, ".json")
    kept = disk_cache.read_kept(path)
    if kept is not None:
        try:
            made = json.loads(kept)
            return json.dumps(made["template"]), dict(made["artifacts"])
        except (ValueError, KeyError, TypeError):  # cut short or another format: transformed again
            pass
    result = _translate(text, region)
    disk_cache.keep(
        path, json.dumps({"template": result.template, "artifacts": result.artifacts}).encode(), MAX_KEPT_TRANSFORMS
    )
    return json.dumps(result.template), result.artifacts


def _transforms_folder() -> Path | None:
    try:
        version = importlib.metadata.version("aws-sam-translator")
    except importlib.metadata.PackageNotFoundError:
        return None
    return disk_cache.cache_folder("sam-transforms", f"aws-sam-translator-{version}-v{_TRANSFORM_FORMAT}")


def _translate(text: str, region: str) -> Transformed:
    template = json.loads(text)
    # Imported here: the transform brings boto3 and pydantic, which reading a template without roles never needs.
    import boto3
    from samtranslator.metrics.metrics import DummyMetricsPublisher, Metrics
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator
    from samtranslator.utils.py27hash_fix import to_py27_compatible_template, undo_mark_unicode_str_in_template

    given = copy.deepcopy(template)
    artifacts: dict[str, str] = {}
    applications: dict[str, Any] = {}
    for logical_id, resource in (given.get("Resources") or {}).items():
        props = resource.get("Properties") or {}
        for key in _ARTIFACTS:
            if isinstance(props.get(key), str) and "://" not in props[key]:
                stand_in = f"s3://{_BUCKET}/{logical_id}/{key}"
                artifacts[stand_in] = props[key]
                props[key] = stand_in
        if resource.get("Type") == _APPLICATION:
            applications[logical_id] = copy.deepcopy(template["Resources"][logical_id])
            stand_in = f"https://{_BUCKET}.s3.amazonaws.com/{logical_id}/template.yaml"
            artifacts[stand_in] = str(props.get("Location"))
            props["Location"] = stand_in
    globals_function = (given.get("Globals") or {}).get("Function") or {}
    if isinstance(globals_function.get("CodeUri"), str) and "://" not in globals_function["CodeUri"]:
        stand_in = f"s3://{_BUCKET}/Globals/CodeUri"
        artifacts[stand_in] = globals_function["CodeUri"]
        globals_function["CodeUri"] = stand_in

    parameters: dict[str, Any] = {}
    to_py27_compatible_template(given, parameters)
    # The translator records metrics for a publisher; a dummy one, published, keeps it from warning at exit.
    metrics = Metrics("ServerlessTransform", DummyMetricsPublisher())
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region), metrics=metrics)
    try:
        made = translator.translate(given, parameter_values=parameters, get_managed_policy_map=managed_policy_map)
    except InvalidDocumentException as exc:
        raise TemplateError(f"the SAM transform refuses the template: {exc.message}") from exc
    finally:
        metrics.publish()
    result: dict[str, Any] = undo_mark_unicode_str_in_template(made)
    # The resolver nests an application by its template, as `sam build` and CloudFormation do.
    result["Resources"].update(applications)
    return Transformed(result, artifacts)


def template_roles(
    template_path: Path,
    *,
    types: Mapping[str, ResourceType],
    parameter_overrides: dict[str, str] | None = None,
    stack_name: str = "idemflow",
    region: str = "us-east-1",
    account_id: str = "123456789012",
) -> dict[str, Role]:
    """Every role the stack of ``template_path`` creates (nested stacks' too), by ``<path>.<LogicalId>`` (a role of
    the template itself by its logical id). ``types``: the resource types the caller knows, as for
    :func:`~idemflow.template.resolver.resolve_stack` (only how they are named is used: nothing is read or run)."""
    named = {kind: replace(spec, read=None) for kind, spec in types.items()}
    overrides = dict(parameter_overrides or {})
    roles = _roles(template_path, overrides, stack_name, region, account_id, named, "", ())
    return {f"{role.path}.{role.logical_id}" if role.path else role.logical_id: role for role in roles}


def _roles(
    path: Path,
    overrides: dict[str, str],
    stack_name: str,
    region: str,
    account: str,
    types: Mapping[str, ResourceType],
    where: str,
    nested_in: tuple[Path, ...],
) -> Iterator[Role]:
    if path.resolve() in nested_in:
        raise TemplateError(f"{path}: circular dependency: the template nests itself")
    transformed = transform(load_template(path), region).template
    params = parameter_values(transformed, overrides)
    resolver = Resolver(transformed, stack_name, region, account, params, path, nested_in, types)
    users: dict[str, set[str]] | None = None
    for logical_id, resource in resolver.resources.items():
        if resource.get("Type") == _ROLE:
            users = users if users is not None else _referenced_by(resolver)
            yield _role(resolver, logical_id, where, users)
    for logical_id, resource in resolver.resources.items():
        if resource.get("Type") == _APPLICATION:
            child = resolver.nested_template(logical_id)
            yield from _roles(
                child,
                resolver.nested_parameters(logical_id),
                resolver.name(logical_id),
                region,
                account,
                types,
                f"{where}.{logical_id}" if where else logical_id,
                (*nested_in, path.resolve()),
            )


def _role(resolver: Resolver, logical_id: str, path: str, users: dict[str, set[str]]) -> Role:
    where = f"Resources.{logical_id}"
    props = resolver.properties(logical_id)
    policies = []
    for i, policy in enumerate(resolver.setting(props, "Policies", where, [])):
        policy = mapping(policy, f"{where}.Policies[{i}]")
        document = mapping(policy.get("PolicyDocument"), f"{where}.Policies[{i}].PolicyDocument")
        policies.append(Policy(str(policy.get("PolicyName", f"{logical_id}Policy{i}")), document))
    for arn in resolver.setting(props, "ManagedPolicyArns", where, []):
        if arn not in MANAGED_POLICIES:
            raise TemplateError(
                f"{where}.ManagedPolicyArns: {arn} is not a managed policy the engine knows "
                f"(idemflow/template/managed_policies.py holds {', '.join(sorted(MANAGED_POLICIES))})"
            )
        policies.append(Policy(str(arn), copy.deepcopy(MANAGED_POLICIES[arn]), managed=True))
    trust = mapping(resolver.setting(props, "AssumeRolePolicyDocument", where, {}), f"{where}.AssumeRolePolicyDocument")
    return Role(
        logical_id=logical_id,
        path=path,
        name=resolver.name(logical_id),
        arn=resolver.arn(logical_id),
        assumed_by=tuple(lid for lid, names in users.items() if lid != logical_id and logical_id in names),
        services=tuple(_services(trust)),
        policies=tuple(policies),
    )


def _referenced_by(resolver: Resolver) -> dict[str, set[str]]:
    """The logical ids each resource's properties name (a Ref, a Fn::GetAtt, a Fn::Sub's ``${Name}`` or
    ``${Name.Attribute}``), in the stack's order; the resources that hold or attach policies name no role they use."""
    return {
        lid: _names(resolver.properties(lid), set())
        for lid, resource in resolver.resources.items()
        if resource.get("Type") not in (_ROLE, "AWS::IAM::Policy", "AWS::IAM::InstanceProfile")
    }


_SUB_NAME: Final = re.compile(r"\$\{([^}.]+)")


def _names(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, list):
        for item in node:
            _names(item, found)
    elif isinstance(node, dict):
        if len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref":
                found.add(str(arg))
                return found
            if key == "Fn::GetAtt":
                found.add(str(arg[0] if isinstance(arg, list) else str(arg).split(".", 1)[0]))
                return found
            if key == "Fn::Sub":
                found.update(_SUB_NAME.findall(str(arg[0] if isinstance(arg, list) else arg)))
        for value in node.values():
            _names(value, found)
    return found


def _services(trust: dict[str, Any]) -> Iterator[str]:
    statements = trust.get("Statement") or []
    for statement in statements if isinstance(statements, list) else [statements]:
        principal = statement.get("Principal") if isinstance(statement, dict) else None
        service = principal.get("Service") if isinstance(principal, dict) else None
        yield from [service] if isinstance(service, str) else (service or [])
