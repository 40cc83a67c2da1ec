"""The permission mutants (``make privileges``): which deletions a template yields, each a whole template without
one grant. The small templates here are the generator's inputs, not copies of the project's template."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from idemflow.mutants.campaign import Outcome, Verdict
from idemflow.mutants.privileges import (
    TemplateDeletion,
    load_privileges_config,
    privilege_deletions,
    summary,
    template_id,
)
from idemflow.template.loader import load_template
from tests.paths import PROJECT_ROOT, TEMPLATE_PATH

NO_VALUE = {"Ref": "AWS::NoValue"}


def _function(*policies: Any) -> dict[str, Any]:
    return {"Type": "AWS::Serverless::Function", "Properties": {"Handler": "app.handler", "Policies": list(policies)}}


def _statement(sid: str, *actions: str) -> dict[str, Any]:
    return {"Sid": sid, "Effect": "Allow", "Action": list(actions) if len(actions) > 1 else actions[0], "Resource": "x"}


def test_each_statement_policy_template_and_action_of_a_sam_resource_is_deleted() -> None:
    template = {
        "Resources": {
            "Fn": _function(
                {"LambdaInvokePolicy": {"FunctionName": "f"}},
                {
                    "Statement": [
                        _statement("Records", "dynamodb:GetItem", "dynamodb:PutItem"),
                        _statement("One", "a:B"),
                    ]
                },
            ),
            "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
        }
    }
    before = copy.deepcopy(template)
    deletions = {d.id: d.template for d in privilege_deletions(template)}

    assert list(deletions) == [
        "Fn/LambdaInvokePolicy",
        "Fn/Records",
        "Fn/Records/dynamodb:GetItem",
        "Fn/Records/dynamodb:PutItem",
        "Fn/One",
    ]
    assert template == before  # each mutant is a copy
    policies = lambda t: t["Resources"]["Fn"]["Properties"]["Policies"]  # noqa: E731
    assert policies(deletions["Fn/LambdaInvokePolicy"]) == [policies(template)[1]]
    assert [s["Sid"] for s in policies(deletions["Fn/Records"])[1]["Statement"]] == ["One"]
    assert policies(deletions["Fn/Records/dynamodb:GetItem"])[1]["Statement"][0]["Action"] == ["dynamodb:PutItem"]


def test_statements_inside_fn_if_branches_are_deleted_and_a_sole_statement_takes_its_entry() -> None:
    branch = {"Statement": [_statement("OnlyWhenTrue", "lambda:InvokeFunction")]}
    template = {"Resources": {"Sm": _function({"Fn::If": ["Cond", branch, NO_VALUE]})}}
    sm = template["Resources"]["Sm"]
    sm["Type"] = "AWS::Serverless::StateMachine"

    (deletion,) = privilege_deletions(template)

    assert deletion.id == "Sm/OnlyWhenTrue"
    assert deletion.template["Resources"]["Sm"]["Properties"]["Policies"] == [{"Fn::If": ["Cond", NO_VALUE, NO_VALUE]}]


def test_an_iam_role_s_statements_are_deleted_an_fn_if_statement_by_its_branch() -> None:
    role = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {"Statement": [_statement("Trust", "sts:AssumeRole")]},
            "Policies": [
                {
                    "PolicyName": "Door",
                    "PolicyDocument": {
                        "Statement": [
                            _statement("Start", "states:StartExecution"),
                            {"Fn::If": ["Standard", _statement("Describe", "states:DescribeExecution"), NO_VALUE]},
                        ]
                    },
                },
                {"PolicyName": "Alone", "PolicyDocument": {"Statement": [_statement("Read", "sqs:A", "sqs:B")]}},
            ],
        },
    }
    role_template = {"Resources": {"Role": role}}
    deletions = {d.id: d.template for d in privilege_deletions(role_template)}

    assert list(deletions) == ["Role/Start", "Role/Describe", "Role/Read", "Role/Read/sqs:A", "Role/Read/sqs:B"]
    door = lambda t: t["Resources"]["Role"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]  # noqa: E731
    assert door(deletions["Role/Describe"])[1] == {"Fn::If": ["Standard", NO_VALUE, NO_VALUE]}
    assert door(deletions["Role/Start"]) == [door(role_template)[1]]
    # The sole statement of a policy goes with its policy (IAM refuses a policy without a statement).
    assert [p["PolicyName"] for p in deletions["Role/Read"]["Resources"]["Role"]["Properties"]["Policies"]] == ["Door"]
    # The trust policy is not a grant.
    assert not any("Trust" in d for d in deletions)


def test_the_project_declares_its_templates_tests_and_explanations_and_each_role_of_the_template_is_cut() -> None:
    config = load_privileges_config(PROJECT_ROOT)
    assert config.templates[0] == Path("template.yaml")
    assert Path("examples/outbox/template.yaml") in config.templates
    assert (PROJECT_ROOT / config.explained).is_file()

    template = load_template(TEMPLATE_PATH)
    roles = {d.id.split("/")[0] for d in privilege_deletions(template)}
    written = {
        logical_id
        for logical_id, resource in template["Resources"].items()
        if (resource.get("Properties") or {}).get("Policies")
    }
    assert roles == written
    assert template_id(Path("template.yaml"), "Fn/One") == "template.yaml:Fn/One"


def test_the_last_line_counts_refused_explained_and_unexplained() -> None:
    def outcome(verdict: Verdict) -> Outcome:
        return Outcome(TemplateDeletion(verdict.value, "", Path("template.yaml"), ""), verdict, "", 0.0)

    outcomes = [outcome(v) for v in (Verdict.KILLED, Verdict.TIMEOUT, Verdict.EQUIVALENT, Verdict.SURVIVED)]
    attached = ["a/AWSLambdaBasicExecutionRole", "a/AWSXrayWriteOnlyAccess"]
    line = summary(outcomes, attached, {"a/AWSXrayWriteOnlyAccess": "X-Ray on AWS only"})
    assert line == "privileges: 4 cut, 2 refused by a test, 2 explained, 2 unexplained"
