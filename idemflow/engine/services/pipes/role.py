"""What a pipe does under its execution role (``RoleArn``): EventBridge Pipes reads the source and starts the
target with it (EventBridge User Guide, "Event source permissions for Amazon EventBridge Pipes",
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-permissions.html: the permissions "vary based on
the source type", and Pipes "uses the IAM role that you specify on the pipe for enrichment and target calls").

* **The source's permissions are checked when the pipe is created.** The page lists what Pipes requires for each
  source: SQS ``sqs:ReceiveMessage``, ``sqs:DeleteMessage``, ``sqs:GetQueueAttributes``; Kinesis
  ``kinesis:DescribeStream``, ``DescribeStreamSummary``, ``GetRecords``, ``GetShardIterator``, ``ListShards``,
  ``ListStreams``, ``SubscribeToShard``; DynamoDB Streams ``dynamodb:DescribeStream``, ``GetRecords``,
  ``GetShardIterator``, ``ListStreams``; and ``sqs:SendMessage`` on a stream source's dead-letter queue. A pipe whose
  role lacks one fails its creation: recorded on AWS, the pipe ends ``CREATE_FAILED`` with the ``StateReason``
  "Input parameter is invalid from the request due to : The provided customer role does not have permissions to
  call ReceiveMessage on SQS" (terraform-aws-modules/terraform-aws-eventbridge pull request 133), and for its
  dead-letter queue "... due to : Error occurred while sending message to SQS queue: <queue ARN>", which
  CloudFormation reports as "Resource of type 'AWS::Pipes::Pipe' with identifier '<name>' did not stabilize. Status
  Reason is <reason>" (HandlerErrorCode NotStabilized; aws-samples/serverless-patterns issue 1543,
  momentohq/client-sdk-javascript pull request 1302): the stack is not deployed. Only ReceiveMessage's wording is
  on record; the other actions and sources are reported in the same words, each action's operation and its
  service's name (the first one the role lacks, in the page's order).
* **The target's is decided at each start.** "The pipe has insufficient permissions to invoke the target" is a
  customer invocation error (EventBridge User Guide, "Amazon EventBridge Pipes error handling and
  troubleshooting", https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-error-troubleshooting.html):
  from an SQS source the batch is retried "up to the maximum receive count on the source queue" (it stays on the
  queue, then its redrive policy moves it), from a stream "up to the maximum retry attempts configured on the
  pipe retry policy, or until the maximum record age expires", then the dead-letter destination, as any start the
  target refuses. ``FIRE_AND_FORGET`` starts with ``states:StartExecution``, ``REQUEST_RESPONSE`` with
  ``states:StartSyncExecution`` (Step Functions Developer Guide, "IAM policies for ... Step Functions"; the
  Service Authorization Reference's actions of the same names).

A role the stack does not create (an ARN passed as a parameter) is not decided (the IAM service's ``decide``
answers None), nor is any call when permissions are off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from idemflow.engine.services.iam.evaluation import Decision
from idemflow.engine.services.pipes.models import Pipe

#: The actions Pipes requires on each kind of source, in the page's order, and the service its StateReason names.
SOURCE_ACTIONS: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "sqs": ("SQS", ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")),
    "kinesis": (
        "Kinesis",
        (
            "kinesis:DescribeStream",
            "kinesis:DescribeStreamSummary",
            "kinesis:GetRecords",
            "kinesis:GetShardIterator",
            "kinesis:ListShards",
            "kinesis:ListStreams",
            "kinesis:SubscribeToShard",
        ),
    ),
    "dynamodb": (
        "DynamoDB",
        ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"),
    ),
}
REASON_PREFIX: Final = "Input parameter is invalid from the request due to : "

Decide = Callable[[str, str, str], Decision | None]
"""The IAM service's decision on (role ARN, action, resource); None when it is not decided."""


def creation_failure(pipe: Pipe, decide: Decide) -> str | None:
    """Why creating ``pipe`` fails under its role (its ``StateReason``), None when the role allows what Pipes needs."""
    service, actions = SOURCE_ACTIONS[pipe.source_kind]
    for action in actions:
        decision = decide(pipe.role_arn, action, pipe.source)
        if decision is not None and not decision.allowed:
            operation = action.partition(":")[2]
            return (
                f"{REASON_PREFIX}The provided customer role does not have permissions to call {operation} on " + service
            )
    dead_letter = pipe.stream.dead_letter_arn if pipe.stream is not None else None
    if dead_letter is not None:
        decision = decide(pipe.role_arn, "sqs:SendMessage", dead_letter)
        if decision is not None and not decision.allowed:
            return f"{REASON_PREFIX}Error occurred while sending message to SQS queue: {dead_letter}"
    return None


def stack_failure(pipe: Pipe, reason: str) -> str:
    """CloudFormation's report of a pipe whose creation failed (the records of the module docstring)."""
    return (
        f'Resources.{pipe.logical_id}: CREATE_FAILED: Resource handler returned message: "Resource of type '
        f"'AWS::Pipes::Pipe' with identifier '{pipe.name}' did not stabilize. Status Reason is {reason}\" "
        "(HandlerErrorCode: NotStabilized)"
    )


def target_action(pipe: Pipe) -> str:
    """The action that starts the pipe's state machine target."""
    return "states:StartExecution" if pipe.invocation_type == "FIRE_AND_FORGET" else "states:StartSyncExecution"


def target_denial(pipe: Pipe, decide: Decide) -> str | None:
    """AWS's AccessDenied message when the pipe's role may not start its target; None when it may (or undecided)."""
    decision = decide(pipe.role_arn, target_action(pipe), pipe.target)
    return decision.message if decision is not None and not decision.allowed else None
