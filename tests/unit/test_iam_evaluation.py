"""AWS's policy evaluation logic for a role's session, rule by rule, each with the IAM User Guide page it follows
(https://docs.aws.amazon.com/IAM/latest/UserGuide/<page>.html), and why moto's evaluator is not the one used."""

from __future__ import annotations

import json
from typing import Any

import pytest

from idemflow.engine.errors import PolicyError
from idemflow.engine.services.iam.evaluation import Evaluator, session_arn

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/idemflow-Role"
TABLE = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/idemflow-Table"
OTHER_TABLE = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/idemflow-Other"
QUEUE = f"arn:aws:sqs:us-east-1:{ACCOUNT}:idemflow-Queue"
RULE = f"arn:aws:events:us-east-1:{ACCOUNT}:rule/idemflow-Rule"


def statement(effect: str = "Allow", **fields: Any) -> dict[str, Any]:
    return {"Effect": effect, **fields}


def role(*statements: dict[str, Any]) -> Evaluator:
    return Evaluator(ROLE, [("Policy", {"Version": "2012-10-17", "Statement": list(statements)})])


# -- reference_policies_evaluation-logic, ..._policy-eval-basics, ..._AccessPolicyLanguage_Interplay -------------
def test_an_allow_is_needed_else_the_call_is_implicitly_denied_with_awss_message() -> None:
    decision = role(statement(Action="dynamodb:GetItem", Resource=TABLE)).decide("dynamodb:PutItem", TABLE)

    assert not decision.allowed and not decision.explicit_deny and decision.statement is None
    # troubleshoot_access-denied: "because no <type> policy allows the <action> action".
    assert decision.message == (
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/idemflow-Role/idemflow is not authorized to perform: "
        f"dynamodb:PutItem on resource: {TABLE} because no identity-based policy allows the dynamodb:PutItem action"
    )


def test_an_explicit_deny_wins_over_any_allow_and_says_so() -> None:
    evaluator = role(
        statement(Sid="All", Action="dynamodb:*", Resource="*"),
        statement("Deny", Sid="NoDeletes", Action="dynamodb:DeleteItem", Resource=TABLE),
    )

    allowed, denied = evaluator.decide("dynamodb:PutItem", TABLE), evaluator.decide("dynamodb:DeleteItem", TABLE)

    assert allowed.allowed and allowed.statement is not None and allowed.statement.sid == "All"
    assert allowed.message == ""
    assert not denied.allowed and denied.explicit_deny
    assert denied.statement is not None and (denied.statement.policy, denied.statement.sid) == ("Policy", "NoDeletes")
    # troubleshoot_access-denied-authorization-id: "... with an explicit deny in an identity-based policy".
    assert denied.message == (
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/idemflow-Role/idemflow is not authorized to perform: "
        f"dynamodb:DeleteItem on resource: {TABLE} with an explicit deny in an identity-based policy"
    )


def test_the_statements_of_every_policy_of_the_role_count() -> None:
    evaluator = Evaluator(
        ROLE,
        [
            ("Reads", {"Statement": [statement(Action="dynamodb:GetItem", Resource=TABLE)]}),
            ("Writes", {"Statement": statement(Action="dynamodb:PutItem", Resource=TABLE)}),  # one statement, no list
        ],
    )
    decision = evaluator.decide("dynamodb:PutItem", TABLE)
    assert decision.allowed and decision.statement is not None and decision.statement.policy == "Writes"
    assert evaluator.decide("dynamodb:GetItem", TABLE).allowed


# -- reference_policies_elements_action, reference_policies_elements_notaction ------------------------------------
def test_action_names_are_case_insensitive_and_take_wildcards() -> None:
    evaluator = role(statement(Action=["DynamoDB:getitem", "sqs:Send*", "lambda:Invoke?unction"], Resource="*"))

    assert evaluator.decide("dynamodb:GetItem", TABLE).allowed
    assert evaluator.decide("sqs:SendMessageBatch", QUEUE).allowed
    assert evaluator.decide("lambda:InvokeFunction", "*").allowed
    assert not evaluator.decide("lambda:InvokeAsync", "*").allowed
    assert not evaluator.decide("sqs:ReceiveMessage", QUEUE).allowed


def test_not_action_applies_to_every_action_but_those_listed() -> None:
    evaluator = role(statement(NotAction="dynamodb:Delete*", Resource=TABLE))

    assert evaluator.decide("dynamodb:PutItem", TABLE).allowed
    assert not evaluator.decide("dynamodb:DeleteItem", TABLE).allowed


# -- reference_policies_elements_resource, reference_policies_elements_notresource --------------------------------
def test_resources_are_case_sensitive_and_take_wildcards() -> None:
    evaluator = role(
        statement(Action="dynamodb:*", Resource=f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/idemflow-Tabl?"),
        statement(Action="sqs:*", Resource=f"arn:aws:sqs:*:{ACCOUNT}:idemflow-*"),
    )

    assert evaluator.decide("dynamodb:GetItem", TABLE).allowed
    assert not evaluator.decide("dynamodb:GetItem", TABLE.replace("Table", "table")).allowed
    assert not evaluator.decide("dynamodb:GetItem", TABLE + "s").allowed  # ? is exactly one character
    assert evaluator.decide("sqs:SendMessage", QUEUE).allowed
    assert not evaluator.decide("sqs:SendMessage", QUEUE.replace("idemflow", "Idemflow")).allowed


def test_not_resource_applies_to_every_resource_but_those_listed() -> None:
    evaluator = role(
        statement(Action="dynamodb:*", Resource="*"),
        statement("Deny", Action="dynamodb:*", NotResource=TABLE),
    )

    assert evaluator.decide("dynamodb:PutItem", TABLE).allowed
    assert evaluator.decide("dynamodb:PutItem", OTHER_TABLE).explicit_deny


# -- reference_policies_elements_condition_operators --------------------------------------------------------------
def test_a_condition_that_does_not_hold_skips_its_statement_and_a_missing_key_fails_it() -> None:
    evaluator = role(
        statement(Action="sqs:SendMessage", Resource=QUEUE, Condition={"ArnEquals": {"aws:SourceArn": RULE}})
    )

    assert evaluator.decide("sqs:SendMessage", QUEUE, {"aws:SourceArn": RULE}).allowed
    other = evaluator.decide("sqs:SendMessage", QUEUE, {"aws:SourceArn": RULE + "2"})
    assert not other.allowed and not other.explicit_deny  # skipped: an implicit deny, not an explicit one
    assert not evaluator.decide("sqs:SendMessage", QUEUE).allowed  # the key is absent


def test_string_equals_on_source_account_and_key_names_are_case_insensitive() -> None:
    evaluator = role(
        statement(
            Action="states:StartExecution", Resource="*", Condition={"StringEquals": {"aws:SourceAccount": ACCOUNT}}
        )
    )

    assert evaluator.decide("states:StartExecution", "*", {"AWS:SourceAccount": ACCOUNT}).allowed
    assert not evaluator.decide("states:StartExecution", "*", {"aws:SourceAccount": "210987654321"}).allowed


def test_string_like_and_negated_operators_and_if_exists() -> None:
    evaluator = role(
        statement(
            Action="s3:GetObject",
            Resource="*",
            Condition={
                "StringLike": {"s3:prefix": ["home/*", "shared/?"]},
                "StringNotEqualsIfExists": {"aws:PrincipalTag/team": "blocked"},
            },
        )
    )

    assert evaluator.decide("s3:GetObject", "*", {"s3:prefix": "home/a/b"}).allowed
    assert evaluator.decide("s3:GetObject", "*", {"s3:prefix": "shared/x"}).allowed
    assert not evaluator.decide("s3:GetObject", "*", {"s3:prefix": "shared/xy"}).allowed
    assert not evaluator.decide(
        "s3:GetObject", "*", {"s3:prefix": "home/a", "aws:PrincipalTag/team": "blocked"}
    ).allowed


def test_arn_like_compares_each_of_the_six_segments() -> None:
    evaluator = role(
        statement(
            Action="sqs:SendMessage",
            Resource=QUEUE,
            Condition={"ArnLike": {"aws:SourceArn": f"arn:aws:events:*:{ACCOUNT}:rule/*"}},
        )
    )

    assert evaluator.decide("sqs:SendMessage", QUEUE, {"aws:SourceArn": RULE}).allowed
    assert not evaluator.decide(
        "sqs:SendMessage", QUEUE, {"aws:SourceArn": RULE.replace(ACCOUNT, "210987654321")}
    ).allowed
    assert not evaluator.decide("sqs:SendMessage", QUEUE, {"aws:SourceArn": "rule/idemflow-Rule"}).allowed  # not an ARN


def test_null_checks_whether_a_key_is_present() -> None:
    evaluator = role(statement("Deny", Action="*", Resource="*", Condition={"Null": {"aws:SourceArn": "true"}}))

    assert evaluator.decide("sqs:SendMessage", QUEUE).explicit_deny
    assert not evaluator.decide("sqs:SendMessage", QUEUE, {"aws:SourceArn": RULE}).explicit_deny


def test_an_operator_the_engine_does_not_decide_is_refused_not_guessed() -> None:
    evaluator = role(statement(Action="*", Resource="*", Condition={"DateLessThan": {"aws:CurrentTime": "2030-01-01"}}))

    with pytest.raises(PolicyError, match="DateLessThan"):
        evaluator.decide("sqs:SendMessage", QUEUE, {"aws:CurrentTime": "2026-01-01"})


def test_a_statement_without_an_action_or_resource_is_refused() -> None:
    with pytest.raises(PolicyError, match=r"Policy: Statement\[0\]"):
        role(statement(Action="*"))


# -- reference_policies_evaluation-logic_policy-eval-basics: identity-based and resource-based ---------------------
def test_in_one_account_a_resource_policy_naming_the_role_may_allow_and_may_deny() -> None:
    evaluator = role(statement(Action="dynamodb:GetItem", Resource=TABLE))
    allows = {"Statement": [statement(Principal={"AWS": ROLE}, Action="sqs:SendMessage", Resource=QUEUE)]}
    denies = {"Statement": [statement("Deny", Principal="*", Action="dynamodb:*", Resource=TABLE)]}
    someone_else = {"Statement": [statement(Principal={"AWS": ROLE + "2"}, Action="sqs:*", Resource=QUEUE)]}

    assert evaluator.decide("sqs:SendMessage", QUEUE, resource_policy=allows).allowed
    assert not evaluator.decide("sqs:SendMessage", QUEUE, resource_policy=someone_else).allowed
    denied = evaluator.decide("dynamodb:GetItem", TABLE, resource_policy=denies)
    assert denied.explicit_deny
    assert denied.message.endswith("with an explicit deny in a resource-based policy")


def test_a_service_principal_is_allowed_by_a_resource_policy_naming_it_under_its_conditions_only() -> None:
    # A queue policy for SNS (SNS Developer Guide, "Example cases for Amazon SNS access control", "Publish messages
    # to an Amazon SQS queue"): the service principal, ArnEquals on aws:SourceArn; a service has no identity-based
    # policy, so nothing else allows it (reference_policies_evaluation-logic: an Allow is needed).
    sns = Evaluator("sns.amazonaws.com", [], service=True)
    topic = f"arn:aws:sns:us-east-1:{ACCOUNT}:orders"
    keys = {"aws:SourceArn": topic, "aws:SourceAccount": ACCOUNT}
    policy = {
        "Statement": [
            statement(
                Principal={"Service": "sns.amazonaws.com"},
                Action="sqs:SendMessage",
                Resource=QUEUE,
                Condition={"ArnEquals": {"aws:SourceArn": topic}},
            )
        ]
    }
    for_events = {"Statement": [{**policy["Statement"][0], "Principal": {"Service": "events.amazonaws.com"}}]}
    by_account = {
        "Statement": [
            statement(
                Principal="*",
                Action="sqs:*",
                Resource=QUEUE,
                Condition={"StringEquals": {"aws:SourceAccount": ACCOUNT}},
            )
        ]
    }

    assert sns.decide("sqs:SendMessage", QUEUE, keys, policy).allowed
    assert not sns.decide("sqs:SendMessage", QUEUE, {**keys, "aws:SourceArn": topic + "2"}, policy).allowed
    assert not sns.decide("sqs:SendMessage", QUEUE, keys, for_events).allowed
    assert sns.decide("sqs:SendMessage", QUEUE, keys, by_account).allowed
    refused = sns.decide("sqs:SendMessage", QUEUE, keys, {})
    assert refused.message == (
        f"User: sns.amazonaws.com is not authorized to perform: sqs:SendMessage on resource: {QUEUE} because no "
        "resource-based policy allows the sqs:SendMessage action"
    )


# -- the cache -----------------------------------------------------------------------------------------------------
def test_decisions_are_cached_per_action_resource_and_context() -> None:
    evaluator = role(statement(Action="dynamodb:GetItem", Resource=TABLE))

    first = evaluator.decide("dynamodb:GetItem", TABLE)
    assert evaluator.decide("dynamodb:GetItem", TABLE) is first
    assert evaluator.cache_info.hits == 1
    evaluator.decide("dynamodb:GetItem", TABLE, {"aws:SourceAccount": ACCOUNT})
    evaluator.decide("dynamodb:GetItem", OTHER_TABLE)
    assert evaluator.cache_info.misses == 3


def test_a_session_is_named_after_the_roles_name_without_its_path() -> None:
    assert session_arn(f"arn:aws:iam::{ACCOUNT}:role/service-role/Runner", "s1") == (
        f"arn:aws:sts::{ACCOUNT}:assumed-role/Runner/s1"
    )
    with pytest.raises(PolicyError):
        session_arn(TABLE, "s1")


# -- why not moto's evaluator (moto/iam/access_control.py, moto 5.2.5) ---------------------------------------------
MOTO_DISAGREES = [
    # (statement, action, resource, context, what AWS decides)
    pytest.param(statement(Action="DynamoDB:GetItem", Resource="*"), "dynamodb:GetItem", TABLE, None, True, id="case"),
    pytest.param(
        statement(Action="lambda:Invoke?unction", Resource="*"), "lambda:InvokeFunction", "*", None, True, id="?"
    ),
    pytest.param(
        statement(Action="dynamodb:*", NotResource=TABLE), "dynamodb:GetItem", TABLE, None, False, id="NotResource"
    ),
    pytest.param(
        statement(Action="sqs:*", Resource="*", Condition={"StringLike": {"aws:SourceArn": "arn:aws:sns:*"}}),
        "sqs:SendMessage",
        QUEUE,
        {"aws:SourceArn": RULE},
        False,
        id="StringLike",
    ),
    pytest.param(
        statement(Action="sqs:*", Resource="*", Condition={"StringEquals": {"aws:SourceAccount": ACCOUNT}}),
        "sqs:SendMessage",
        QUEUE,
        {},
        False,
        id="missing-key",
    ),
]


@pytest.mark.parametrize(("raw", "action", "resource", "context", "aws"), MOTO_DISAGREES)
def test_moto_decides_these_otherwise_and_this_evaluator_as_aws_documents(
    raw: dict[str, Any], action: str, resource: str, context: dict[str, str] | None, aws: bool
) -> None:
    from moto.iam.access_control import IAMPolicy, PermissionResult

    moto = IAMPolicy(json.dumps({"Version": "2012-10-17", "Statement": [raw]})).is_action_permitted(
        action, resource, incoming_condition_values=context
    )
    assert (moto == PermissionResult.PERMITTED) != aws
    assert role(raw).decide(action, resource, context).allowed == aws


def test_moto_turns_an_allow_whose_condition_fails_into_an_explicit_deny() -> None:
    from moto.iam.access_control import IAMPolicy, PermissionResult

    conditional = statement(Action="sqs:*", Resource="*", Condition={"StringEquals": {"aws:SourceAccount": ACCOUNT}})
    unconditional = statement(Action="sqs:*", Resource="*")
    document = json.dumps({"Statement": [conditional, unconditional]})
    context = {"aws:SourceAccount": "210987654321"}

    assert IAMPolicy(document).is_action_permitted("sqs:SendMessage", QUEUE, None, context) == PermissionResult.DENIED
    assert role(conditional, unconditional).decide("sqs:SendMessage", QUEUE, context).allowed
