"""The resolver: CloudFormation's intrinsic functions, conditions, parameters and nested applications, applied to
a template with the resource types the caller knows."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from idemflow.template.errors import TemplateError
from idemflow.template.loader import load_template
from idemflow.template.sam import generated_resources, published_workflow, sam_event_resources
from idemflow.template.stack import Resource, Stack, physical_id
from idemflow.template.values import NO_VALUE, cfn_string, integer, mapping, require
from idemflow.workflow import default_template

_SUB_PATTERN = re.compile(r"\$\{([^}]+)\}")
_APPLICATION = "AWS::Serverless::Application"
_REQUIRED = object()
_S = TypeVar("_S", bound=Stack)


@dataclass(frozen=True)
class ResourceType:
    """What the engine knows of one CloudFormation resource type: how CloudFormation names it (its name
    property, its ``Ref`` and ``Fn::GetAtt`` values) and, when the engine runs it, how to read it.

    Each type belongs to one module of the engine's seam (``idemflow/engine/services/``), which passes
    these to :func:`resolve_stack`; this module only applies them."""

    type: str
    read: Callable[[Resolver, str, dict[str, Any], str], Any] | None = None
    """``read(resolver, logical_id, properties, where)``: the model the service deploys; None for a type
    that is named (Ref and GetAtt work) but not run locally."""
    name_property: str | None = None
    """The property that names the resource, where CloudFormation lets the template choose the name."""
    arn: str | None = None
    """The ARN, formatted with ``region``, ``account`` and ``name``."""
    ref: str = "name"
    """What ``Ref`` returns (the resource's page in the CloudFormation User Guide, "Return values"): ``name``,
    ``arn``, ``id`` (an identifier AWS makes up, an API's say: here :func:`physical_id` of the resource's
    name) or one of :attr:`attributes` (a queue's ``QueueUrl``)."""
    attributes: Mapping[str, str | Callable[[str], str]] = field(default_factory=dict)
    """``Fn::GetAtt`` attributes beyond ``Arn`` and ``Name``: a format string (``region``, ``account``,
    ``name``) or a function of the resource's name."""
    why_not_served: str = ""
    """For a type the engine names but does not run: what that means locally, in a few words."""
    lowercase_name: bool = False
    """A name CloudFormation makes up is in lower case (an S3 bucket's: bucket names allow no capitals)."""


def _nested_parameter(value: Any, where: str) -> str:
    # A nested stack's parameters are strings: CloudFormation refuses a list (join it with Fn::Join).
    if isinstance(value, list | dict):
        raise TemplateError(
            f"{where}: a nested stack's parameter is a string, got {value!r} (join a list with Fn::Join)"
        )
    return cfn_string(value, where)


def _is_intrinsic(node: Any) -> bool:
    if not isinstance(node, dict) or len(node) != 1:
        return False
    key = str(next(iter(node)))
    return key in ("Ref", "Condition") or key.startswith("Fn::")


def _merge_globals(global_value: Any, local_value: Any) -> Any:
    """A function property merged with ``Globals`` the way the SAM transform does it, before CloudFormation
    resolves anything: mappings merge key by key, lists are concatenated, anything else (an intrinsic
    function too, since it stands for one value) is replaced by the function's own."""
    if isinstance(global_value, list) and isinstance(local_value, list):
        return global_value + local_value
    mappings = isinstance(global_value, dict) and isinstance(local_value, dict)
    if not mappings or _is_intrinsic(global_value) or _is_intrinsic(local_value):
        return local_value
    merged = dict(global_value)
    for key, value in local_value.items():
        merged[key] = _merge_globals(global_value[key], value) if key in global_value else value
    return merged


class Resolver:
    def __init__(
        self,
        template: dict[str, Any],
        stack: str,
        region: str,
        account: str,
        params: dict[str, str],
        path: Path,
        nested_in: tuple[Path, ...],
        types: Mapping[str, ResourceType],
        stack_type: type[Stack] = Stack,
    ):
        self.template = template
        self.types, self.stack_type = types, stack_type
        self.stack, self.region, self.account = stack, region, account
        self.params = params
        self.base = path.parent
        self.templates = (*nested_in, path.resolve())  # this template and those nesting it, outermost first
        self.globals_fn: dict[str, Any] = (template.get("Globals") or {}).get("Function") or {}
        self.condition_specs: dict[str, Any] = template.get("Conditions") or {}
        self.conditions: dict[str, bool] = {}
        self._evaluating: set[str] = set()
        self.declared: dict[str, Any] = template["Resources"]
        self.resources: dict[str, Any] = {}
        # CloudFormation evaluates every condition, used or not, before it creates anything: so a condition
        # may refer to parameters, pseudo parameters and other conditions, never to a resource (see ref()).
        for name in self.condition_specs:
            self.condition(name, f"Conditions.{name}")
        self._names: dict[str, str] = {}
        # CloudFormation creates a resource only when its Condition is true: the others do not exist.
        self.resources = {
            lid: res
            for lid, res in self.declared.items()
            if "Condition" not in res or self.condition(str(res["Condition"]), f"Resources.{lid}.Condition")
        }
        self._check_dependencies()
        self._check_rules(template.get("Rules") or {})
        self.nested: dict[str, Stack] = {}

    def properties(self, logical_id: str) -> dict[str, Any]:
        """A resource's properties as CloudFormation gets them: a SAM function's merged with Globals."""
        resource = self.resources[logical_id]
        props: dict[str, Any] = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::Serverless::Function":
            return dict(_merge_globals(self.globals_fn, props))
        return props

    def name(self, logical_id: str) -> str:
        """A resource's physical name: the one its name property (FunctionName, TableName, ...) gives, as
        CloudFormation uses it, else <stack>-<LogicalId>. CloudFormation adds a random suffix to a name it
        makes up; locally the suffix is dropped so that names are stable and readable in the CLI. A nested
        stack is named <parent>-<LogicalId> the same way, so the resources of two nested stacks never collide.
        Resolved when first asked for: the name property may refer to other resources (no cycle: checked)."""
        if logical_id not in self._names:
            spec = self.types.get(str(self.resources[logical_id].get("Type")))
            key = spec.name_property if spec is not None else None
            where = f"Resources.{logical_id}"
            given = self.setting(self.properties(logical_id), key, where, None) if key else None
            made = f"{self.stack}-{logical_id}".lower() if spec is not None and spec.lowercase_name else None
            self._names[logical_id] = (
                (made or f"{self.stack}-{logical_id}") if given is None else cfn_string(given, f"{where}.{key}")
            )
        return self._names[logical_id]

    # -- dependencies -----------------------------------------------------------------------------
    def _check_dependencies(self) -> None:
        """CloudFormation orders creation by the references between resources and rejects a template whose
        references form a cycle before it creates anything; locally a cycle would recurse forever (an
        application whose Parameters read its own outputs) or resolve what CloudFormation refuses."""
        graph = {lid: self._depends_on(lid) for lid in self.resources}
        done: set[str] = set()

        def visit(lid: str, path: list[str]) -> None:
            if lid in path:
                cycle = " -> ".join([*path[path.index(lid) :], lid])
                raise TemplateError(f"Resources.{lid}: circular dependency between resources: {cycle}")
            if lid not in done:
                for dependency in graph[lid]:
                    visit(dependency, [*path, lid])
                done.add(lid)

        for lid in graph:
            visit(lid, [])

    def _depends_on(self, logical_id: str) -> list[str]:
        where = f"Resources.{logical_id}"
        depends_on = self.resources[logical_id].get("DependsOn") or []
        named = {str(d) for d in ([depends_on] if isinstance(depends_on, str) else depends_on)}
        named |= self._references(self.properties(logical_id), where)
        # A created resource that names one whose Condition is false (by DependsOn, or by a reference outside
        # the Fn::If branch that holds it) fails the whole template: "Template format error: Unresolved resource
        # dependencies [X] in the Resources block of the template". Checked for every resource, whether a
        # service reads its properties or not, so that every combination of parameters is deployable.
        absent = sorted(named & (self.declared.keys() - self.resources.keys()))
        if absent:
            raise self._missing(absent[0], f"unresolved resource dependencies [{', '.join(absent)}]", where)
        return sorted(named & self.resources.keys())

    def _references(self, node: Any, where: str) -> set[str]:
        """The names a value refers to with Ref, Fn::GetAtt and Fn::Sub (of Fn::If, only the chosen branch:
        the other may name a resource that does not exist)."""
        if isinstance(node, list):
            return set().union(*(self._references(item, where) for item in node))
        if not isinstance(node, dict):
            return set()
        if len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref":
                return {str(arg)}
            if key == "Fn::GetAtt":
                return {str(arg[0] if isinstance(arg, list) else str(arg).split(".", 1)[0])}
            if key == "Fn::Sub":
                text, extra = (arg[0], arg[1]) if isinstance(arg, list) and len(arg) == 2 else (arg, {})
                extra = extra if isinstance(extra, dict) else {}
                names = {n.split(".", 1)[0] for n in _SUB_PATTERN.findall(str(text)) if not n.startswith("!")}
                return (names - extra.keys()) | self._references(list(extra.values()), where)
            if key == "Fn::If" and isinstance(arg, list) and len(arg) == 3:
                return self._references(arg[1] if self.condition(str(arg[0]), where) else arg[2], where)
        return self._references(list(node.values()), where)

    # -- conditions -------------------------------------------------------------------------------
    def condition(self, name: str, where: str) -> bool:
        if name in self.conditions:
            return self.conditions[name]
        if name not in self.condition_specs:
            raise TemplateError(f"{where}: no such condition {name!r} in Conditions")
        if name in self._evaluating:
            raise TemplateError(f"Conditions.{name}: refers to itself")
        self._evaluating.add(name)
        try:
            value = self.truth(self.condition_specs[name], f"Conditions.{name}")
        finally:
            self._evaluating.discard(name)
        self.conditions[name] = value
        return value

    def _check_rules(self, rules: dict[str, Any]) -> None:
        """CloudFormation checks the template's Rules before it creates anything: where a rule's
        RuleCondition holds, each Assert must, or the stack is refused with its AssertDescription (User Guide,
        "Rules" section; Fn::Equals, Fn::Not, Fn::And, Fn::Or and Fn::Contains over parameters)."""
        for name, rule in rules.items():
            where = f"Rules.{name}"
            rule = mapping(rule, where)
            if "RuleCondition" in rule and not self.rule_truth(rule["RuleCondition"], f"{where}.RuleCondition"):
                continue
            for i, assertion in enumerate(rule.get("Assertions") or []):
                assertion = mapping(assertion, f"{where}.Assertions[{i}]")
                if not self.rule_truth(assertion.get("Assert"), f"{where}.Assertions[{i}].Assert"):
                    described = assertion.get("AssertDescription") or "the assertion does not hold"
                    raise TemplateError(f"{where}: {described}")

    def rule_truth(self, node: Any, where: str) -> bool:
        if isinstance(node, dict) and len(node) == 1 and "Fn::Contains" in node:
            arg = node["Fn::Contains"]
            if not isinstance(arg, list) or len(arg) != 2:
                raise TemplateError(f"{where}: Fn::Contains takes [list, value]")
            values = self.value(arg[0], f"{where}[0]")
            wanted = cfn_string(self.value(arg[1], f"{where}[1]"), f"{where}[1]")
            return wanted in [cfn_string(v, f"{where}[0]") for v in (values if isinstance(values, list) else [values])]
        if isinstance(node, dict) and len(node) == 1 and next(iter(node)) in ("Fn::And", "Fn::Or", "Fn::Not"):
            ((key, arg),) = node.items()
            if not isinstance(arg, list):
                raise TemplateError(f"{where}: {key} takes a list")
            results = [self.rule_truth(item, f"{where}[{i}]") for i, item in enumerate(arg)]
            return not results[0] if key == "Fn::Not" else all(results) if key == "Fn::And" else any(results)
        return self.truth(node, where)

    def truth(self, node: Any, where: str) -> bool:
        """A condition function (Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition) as CloudFormation evaluates it."""
        if not isinstance(node, dict) or len(node) != 1:
            raise TemplateError(f"{where}: expected a condition function, got {node!r}")
        ((key, arg),) = node.items()
        if key == "Condition":
            return self.condition(str(arg), where)
        if not isinstance(arg, list):
            raise TemplateError(f"{where}: {key} takes a list")
        if key == "Fn::Equals":
            if len(arg) != 2:
                raise TemplateError(f"{where}: Fn::Equals takes two values")
            left, right = (self.value(v, f"{where}[{i}]") for i, v in enumerate(arg))
            if isinstance(left, dict | list) or isinstance(right, dict | list):
                return bool(left == right)
            return cfn_string(left, f"{where}[0]") == cfn_string(right, f"{where}[1]")
        if key == "Fn::Not":
            if len(arg) != 1:
                raise TemplateError(f"{where}: Fn::Not takes one condition")
            return not self.truth(arg[0], f"{where}[0]")
        if key in ("Fn::And", "Fn::Or"):
            if not 2 <= len(arg) <= 10:
                raise TemplateError(f"{where}: {key} takes 2 to 10 conditions")
            values = [self.truth(v, f"{where}[{i}]") for i, v in enumerate(arg)]
            return all(values) if key == "Fn::And" else any(values)
        raise TemplateError(f"{where}: {key} is not a condition function")

    # -- references -------------------------------------------------------------------------------
    def _missing(self, logical_id: str, what: str, where: str) -> TemplateError:
        declared = self.declared.get(logical_id)
        if declared is not None and "Condition" in declared:  # declared, but its condition is false
            return TemplateError(
                f"{where}: {what}: the resource is not created (its Condition {declared['Condition']} is false); "
                "refer to it only where that condition holds (Fn::If)"
            )
        return TemplateError(f"{where}: {what}: no such resource")

    def ref(self, name: str, where: str) -> Any:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::StackName": self.stack,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in pseudo:
            return pseudo[name]
        if name in self.params:
            return self.params[name]
        if self._evaluating:
            raise TemplateError(
                f"{where}: !Ref {name}: no such parameter "
                "(a condition may refer only to parameters and pseudo parameters)"
            )
        resource = self.resources.get(name)
        if resource is None:
            if "Condition" in self.declared.get(name, {}):
                raise self._missing(name, f"!Ref {name}", where)
            raise TemplateError(f"{where}: !Ref {name}: no such parameter or resource")
        kind = str(resource.get("Type"))
        spec = self.types.get(kind)
        if spec is not None and spec.ref == "arn":
            return self.arn(name)
        if spec is not None and spec.ref == "id":
            return physical_id(self.name(name))
        if spec is not None and spec.ref in spec.attributes:
            return self.attribute(spec, spec.ref, name)
        if kind == _APPLICATION:  # a nested stack's Ref is its stack ARN
            return f"arn:aws:cloudformation:{self.region}:{self.account}:stack/{self.name(name)}/local"
        return self.name(name)

    def listed(self, logical_id: str, kind: str, where: str) -> list[tuple[str, str, str]]:
        """What CloudFormation lists for a resource once SAM's transform has run, each with its physical id:
        what ``!Ref`` gives for the resource itself (a name, URL or ARN), ``<stack>-<LogicalId>`` for what SAM
        adds (CloudFormation adds a random suffix, dropped here as in :meth:`name`), a layer's version ARN."""
        listed = []
        for made_id, made_kind in generated_resources(logical_id, kind, self.properties(logical_id), where):
            if made_kind == "AWS::Lambda::LayerVersion":
                physical = f"arn:aws:lambda:{self.region}:{self.account}:layer:{self.name(logical_id)}:1"
            elif made_id == logical_id:
                physical = cfn_string(self.ref(logical_id, where), where)
            else:
                physical = f"{self.stack}-{made_id}"
            listed.append((made_id, made_kind, physical))
        return listed

    def arn(self, logical_id: str) -> str:
        kind = str(self.resources[logical_id].get("Type"))
        spec = self.types.get(kind)
        if spec is None or spec.arn is None:
            raise TemplateError(f"{logical_id}: Arn of a {kind} is not supported locally")
        return spec.arn.format(region=self.region, account=self.account, name=self.name(logical_id))

    def attribute(self, spec: ResourceType, attribute: str, logical_id: str) -> str:
        value = spec.attributes[attribute]
        name = self.name(logical_id)
        if isinstance(value, str):
            return value.format(region=self.region, account=self.account, name=name)
        return value(name)

    def get_att(self, logical_id: str, attribute: str, where: str) -> str:
        if self._evaluating:
            raise TemplateError(f"{where}: !GetAtt {logical_id}.{attribute}: a condition may not refer to a resource")
        if logical_id not in self.resources:
            raise self._missing(logical_id, f"!GetAtt {logical_id}.{attribute}", where)
        if self.resources[logical_id].get("Type") == _APPLICATION and attribute.startswith("Outputs."):
            output = attribute.removeprefix("Outputs.")
            child = self.application(logical_id)
            if output not in child.outputs:
                raise TemplateError(
                    f"{where}: !GetAtt {logical_id}.{attribute}: the nested stack has no output {output} "
                    f"(its outputs: {', '.join(sorted(child.outputs)) or 'none'})"
                )
            return child.outputs[output]
        spec = self.types.get(str(self.resources[logical_id].get("Type")))
        if spec is not None and attribute in spec.attributes:
            return self.attribute(spec, attribute, logical_id)
        if attribute == "Arn":
            return self.arn(logical_id)
        if attribute == "Name":
            return self.name(logical_id)
        raise TemplateError(f"{where}: !GetAtt {logical_id}.{attribute}: attribute not supported locally")

    def _location(self, props: dict[str, Any], where: str) -> tuple[Path, str]:
        """The template an application nests, and how to name it in messages."""
        location = require(props, "Location", where)
        if isinstance(location, dict) and set(location) == {"ApplicationId", "SemanticVersion"}:
            application_id = cfn_string(self.value(location["ApplicationId"], f"{where}.Location"), where)
            version = cfn_string(self.value(location["SemanticVersion"], f"{where}.Location"), where)
            return published_workflow(application_id, version, f"{where}.Location"), f"{application_id}@{version}"
        if not isinstance(location, str) or "://" in location:
            raise TemplateError(
                f"{where}.Location: a local template path (as `sam build` packages it) or this workflow's "
                f"{{ApplicationId, SemanticVersion}} in the Serverless Application Repository, got {location!r}"
            )
        path = (self.base / location).resolve()
        if not path.is_file():
            raise TemplateError(f"{where}.Location: {location} is not a file next to the template")
        return path, location

    def nested_template(self, logical_id: str) -> Path:
        """The template an ``AWS::Serverless::Application`` nests (a local path, or this workflow as published)."""
        props: dict[str, Any] = self.resources[logical_id].get("Properties") or {}
        return self._location(props, f"Resources.{logical_id}")[0]

    def nested_parameters(self, logical_id: str) -> dict[str, str]:
        """The parameters an ``AWS::Serverless::Application`` passes its nested stack, as CloudFormation passes them."""
        where = f"Resources.{logical_id}"
        props: dict[str, Any] = self.resources[logical_id].get("Properties") or {}
        params = self.value(props.get("Parameters") or {}, f"{where}.Parameters")
        if not isinstance(params, dict):
            raise TemplateError(f"{where}.Parameters: expected a mapping")
        return {str(k): _nested_parameter(v, f"{where}.Parameters.{k}") for k, v in params.items() if v is not NO_VALUE}

    def application(self, logical_id: str) -> Stack:
        """The nested stack of an ``AWS::Serverless::Application``, resolved once (its parameters are the
        parent's ``Parameters`` property, as CloudFormation passes them)."""
        if logical_id in self.nested:
            return self.nested[logical_id]
        where = f"Resources.{logical_id}"
        props: dict[str, Any] = self.resources[logical_id].get("Properties") or {}
        path, location = self._location(props, where)
        if path in self.templates:  # sam package would loop on it, and so would the resolver
            chain = " -> ".join(str(t) for t in (*self.templates[self.templates.index(path) :], path))
            raise TemplateError(f"{where}.Location: circular dependency: the template nests itself ({chain})")
        overrides = self.nested_parameters(logical_id)
        try:
            child = _resolve(
                path,
                overrides,
                self.name(logical_id),
                self.region,
                self.account,
                self.templates,
                self.types,
                self.stack_type,
            )
        except TemplateError as exc:
            raise TemplateError(f"{where} (nested stack {location}): {exc}") from exc
        self.nested[logical_id] = child
        return child

    # -- values -----------------------------------------------------------------------------------
    def _split(self, arg: Any, where: str) -> list[str]:
        """``Fn::Split [delimiter, string]``: the string's parts between the delimiters (AWS CloudFormation User Guide,
        "Fn::Split": https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference-split.html)."""
        if not isinstance(arg, list) or len(arg) != 2:
            raise TemplateError(f"{where}: Fn::Split takes [delimiter, string]")
        delimiter, source = self.value(arg[0], where), self.value(arg[1], where)
        if not isinstance(delimiter, str) or not delimiter or not isinstance(source, str):
            raise TemplateError(f"{where}: Fn::Split takes a non-empty delimiter and a string")
        return source.split(delimiter)

    def _select(self, arg: Any, where: str) -> Any:
        """``Fn::Select [index, list]``: the list's item at the index, from 0 ("Fn::Select": an index out of the list
        is an error, https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference-select.html)."""
        if not isinstance(arg, list) or len(arg) != 2:
            raise TemplateError(f"{where}: Fn::Select takes [index, list]")
        index, items = self.value(arg[0], where), self.value(arg[1], where)
        if not isinstance(items, list) or not str(index).isdigit() or int(index) >= len(items):
            raise TemplateError(f"{where}: Fn::Select index {index!r} is not in the list {items!r}")
        return items[int(index)]

    def value(self, node: Any, where: str) -> Any:
        if isinstance(node, list):
            items = [self.value(item, f"{where}[{i}]") for i, item in enumerate(node)]
            return [item for item in items if item is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref":
                return self.ref(str(arg), where)
            if key == "Fn::GetAtt":
                parts = arg if isinstance(arg, list) else str(arg).split(".", 1)
                return self.get_att(str(parts[0]), str(parts[1]), where)
            if key == "Fn::Sub":
                return self.sub(arg, where)
            if key == "Fn::If":
                if not isinstance(arg, list) or len(arg) != 3:
                    raise TemplateError(f"{where}: Fn::If takes [condition, value if true, value if false]")
                # Only the chosen branch is evaluated: the other may name a resource that is not created.
                chosen = arg[1] if self.condition(str(arg[0]), where) else arg[2]
                return self.value(chosen, where)
            if key in ("Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Condition"):
                return self.truth(node, where)
            if key == "Fn::Split":
                return self._split(arg, where)
            if key == "Fn::Select":
                return self._select(arg, where)
            if key.startswith("Fn::"):
                raise TemplateError(f"{where}: {key} is not supported by the local engine")
        values = {k: self.value(v, f"{where}.{k}") for k, v in node.items()}
        return {k: v for k, v in values.items() if v is not NO_VALUE}

    def setting(self, props: dict[str, Any], key: str, where: str, default: Any = _REQUIRED) -> Any:
        """A property, resolved: its default when absent or ``AWS::NoValue`` (as CloudFormation drops it), a
        TemplateError when it has none."""
        value = self.value(props[key], f"{where}.{key}") if key in props else NO_VALUE
        if value is not NO_VALUE:
            return value
        if default is _REQUIRED:
            raise TemplateError(f"{where}: missing property {key}")
        return default

    def sub(self, arg: Any, where: str) -> str:
        text, extra = (arg[0], arg[1]) if isinstance(arg, list) else (arg, {})
        variables = {k: self.value(v, f"{where}.{k}") for k, v in extra.items()}

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):  # ${!Literal} is the escape for a literal ${Literal}
                return f"${{{name[1:]}}}"
            if name in variables:
                return cfn_string(variables[name], f"{where}.{name}")
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute, where)
            return cfn_string(self.ref(name, where), where)

        return _SUB_PATTERN.sub(one, str(text))


def parameter_values(template: dict[str, Any], overrides: dict[str, str]) -> dict[str, str]:
    """The value of each parameter the template declares: its override, else its Default, checked as CloudFormation
    checks it before it creates anything."""
    declared: dict[str, Any] = template.get("Parameters", {}) or {}
    unknown = set(overrides) - set(declared)
    if unknown:
        raise TemplateError(f"Parameters: unknown parameter override(s) {sorted(unknown)}")
    values: dict[str, str] = {}
    for name, spec in declared.items():
        if name in overrides:
            value = cfn_string(overrides[name], f"Parameters.{name}")
        elif "Default" in spec:
            value = cfn_string(spec["Default"], f"Parameters.{name}.Default")
        else:
            raise TemplateError(f"Parameters.{name}: no Default and no override given")
        _check_parameter(f"Parameters.{name}", spec, value)
        values[name] = value
    return values


def _check_parameter(where: str, spec: dict[str, Any], value: str) -> None:
    """The constraints CloudFormation checks before it creates anything."""
    kind = str(spec.get("Type", "String"))
    allowed = spec.get("AllowedValues")
    if allowed is not None:
        allowed_values = [cfn_string(a, f"{where}.AllowedValues") for a in allowed]
        # A list parameter's allowed values are those of each item (cfn-lint strips the items, as here).
        items = [v.strip() for v in value.split(",")] if _is_list_type(kind) else [value]
        wrong = [item for item in items if item not in allowed_values]
        if wrong:
            raise TemplateError(f"{where}: {wrong[0]!r} is not one of {allowed}")
    pattern = spec.get("AllowedPattern")
    if pattern is not None and not re.fullmatch(pattern, value):
        raise TemplateError(f"{where}: {value!r} does not match {pattern}")
    if kind == "String":
        if "MinLength" in spec and len(value) < integer(spec["MinLength"], f"{where}.MinLength"):
            raise TemplateError(f"{where}: {value!r} is shorter than MinLength {spec['MinLength']}")
        if "MaxLength" in spec and len(value) > integer(spec["MaxLength"], f"{where}.MaxLength"):
            raise TemplateError(f"{where}: {value!r} is longer than MaxLength {spec['MaxLength']}")
    if kind == "Number":
        try:
            number = float(value)
        except ValueError as exc:
            raise TemplateError(f"{where}: {value!r} is not a number") from exc
        if "MinValue" in spec and number < float(spec["MinValue"]):
            raise TemplateError(f"{where}: {value} is below MinValue {spec['MinValue']}")
        if "MaxValue" in spec and number > float(spec["MaxValue"]):
            raise TemplateError(f"{where}: {value} is above MaxValue {spec['MaxValue']}")


def _is_list_type(kind: str) -> bool:
    return kind == "CommaDelimitedList" or kind.startswith("List<")


def substitute(definition: str, substitutions: dict[str, str], where: str = "definition") -> str:
    """Apply DefinitionSubstitutions the way CloudFormation does: text replacement of ``${Name}``."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in substitutions:
            raise TemplateError(f"{where}: placeholder ${{{name}}} has no DefinitionSubstitutions entry")
        return substitutions[name]

    return re.sub(r"\$\{(\w+)\}", one, definition)


def resolve_stack(
    template_path: Path | None = None,
    *,
    parameter_overrides: dict[str, str] | None = None,
    stack_name: str = "idemflow",
    region: str = "us-east-1",
    account_id: str = "123456789012",
    types: Mapping[str, ResourceType],
    stack_type: type[_S] = Stack,  # type: ignore[assignment]
) -> _S:
    """Resolve the template into the resources a local deployment creates. ``types``: the resource types the
    caller knows, by type name (the engine's services declare them); ``stack_type``: the class of each stack
    made (a subclass of :class:`Stack` with lookups of its own)."""
    if template_path is None:
        template_path = default_template()
    stack = _resolve(
        template_path, dict(parameter_overrides or {}), stack_name, region, account_id, (), types, stack_type
    )
    assert isinstance(stack, stack_type)
    return stack


def _resolve(
    template_path: Path,
    overrides: dict[str, str],
    stack_name: str,
    region: str,
    account_id: str,
    nested_in: tuple[Path, ...],
    types: Mapping[str, ResourceType],
    stack_type: type[Stack],
) -> Stack:
    """``resolve_stack`` for a template nested in ``nested_in`` (the templates above it, outermost first)."""
    template = load_template(template_path)
    params = parameter_values(template, overrides)
    r = Resolver(template, stack_name, region, account_id, params, template_path, nested_in, types, stack_type)
    stack = stack_type(
        name=stack_name,
        region=region,
        account_id=account_id,
        parameters=params,
        metadata=template.get("Metadata") or {},
    )

    for lid, res in r.resources.items():
        kind = str(res.get("Type"))
        where = f"Resources.{lid}"
        stack.listed.extend(r.listed(lid, kind, where))
        if kind == _APPLICATION:
            stack.nested[lid] = r.application(lid)
            continue
        spec = types.get(kind)
        props = r.properties(lid)
        model = spec.read(r, lid, props, where) if spec is not None and spec.read is not None else None
        stack.resources[lid] = Resource(lid, kind, model)
        for name, made in sam_event_resources(kind, props.get("Events"), where):
            made_by = f"{lid}.Events.{name}"
            for made_kind in made:
                stack.resources[f"{made_by}:{made_kind}"] = Resource(made_by, made_kind, made_by=made_by)
    for name, output in (template.get("Outputs") or {}).items():
        where = f"Outputs.{name}"
        if "Condition" in output and not r.condition(str(output["Condition"]), f"{where}.Condition"):
            continue  # an output whose condition is false does not exist
        value = r.value(output.get("Value"), where)
        if value is not NO_VALUE:  # AWS::NoValue removes the output, as it removes a property
            stack.outputs[name] = cfn_string(value, f"{where}.Value")
    return stack
