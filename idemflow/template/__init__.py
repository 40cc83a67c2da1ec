"""Read the real SAM template and resolve what a local deployment needs.

The engine and the tests deploy from ``template.yaml`` and ``statemachine/*.asl.json`` themselves:
nothing about the stack (table schemas, ARNs, substitutions, function settings) is written twice.
Supported as CloudFormation evaluates them: ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, the pseudo parameters
and ``AWS::NoValue``; ``Conditions`` with ``Fn::Equals``, ``Fn::Not``, ``Fn::And``, ``Fn::Or`` and
``Condition`` (all evaluated up front, on parameters only), ``Fn::If`` (only the chosen branch is
evaluated), and ``Condition:`` on resources and outputs (a resource whose condition is false does not
exist); ``AWS::Serverless::Application`` with a local ``Location`` (a nested stack, its parameters from
the ``Parameters`` property, its outputs read with ``!GetAtt App.Outputs.Name``, its resources named
after it), or with the ``ApplicationId`` and ``SemanticVersion`` of this workflow as published in the
Serverless Application Repository (the installed package's copy is nested: :func:`published_workflow`).
Scalars are CloudFormation strings (a YAML ``true`` is ``"true"``), a name property (``FunctionName``,
``TableName``, ...) is the physical name, and a circular dependency is refused.
Anything else is a :class:`TemplateError` naming the resource and property.
"""

from __future__ import annotations

from idemflow.template.errors import TemplateError
from idemflow.template.loader import load_template
from idemflow.template.resolver import Resolver, ResourceType, resolve_stack, substitute
from idemflow.template.sam import SAM_EVENT_RESOURCES, SAR_APPLICATION, published_as, published_workflow
from idemflow.template.stack import Resource, Stack, physical_id
from idemflow.template.values import NO_VALUE, boolean, cfn_string, integer, mapping, require

__all__ = [
    "NO_VALUE",
    "SAM_EVENT_RESOURCES",
    "SAR_APPLICATION",
    "Resolver",
    "Resource",
    "ResourceType",
    "Stack",
    "TemplateError",
    "boolean",
    "cfn_string",
    "integer",
    "load_template",
    "mapping",
    "physical_id",
    "published_as",
    "published_workflow",
    "require",
    "resolve_stack",
    "substitute",
]
