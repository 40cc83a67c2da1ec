"""The Pipes service: the template's pipes in moto's Pipes backend, each with its poller."""

from __future__ import annotations

from typing import Any

from idemflow.engine.services.base import Service
from idemflow.engine.services.iam.service import Iam
from idemflow.engine.services.pipes.models import PIPE_ARN, Pipe, PipeStats, read_pipe
from idemflow.engine.services.pipes.queue import QueuePoller
from idemflow.engine.services.pipes.role import creation_failure, stack_failure
from idemflow.engine.services.pipes.stream import StreamPoller
from idemflow.engine.services.stepfunctions.service import StateMachine
from idemflow.template import ResourceType, Stack, TemplateError


class Pipes(Service):
    name = "pipes"
    resource_types = (ResourceType("AWS::Pipes::Pipe", read_pipe, name_property="Name", arn=PIPE_ARN),)
    moto_backends = ("pipes",)

    def open(self) -> None:
        self.pipes: list[Pipe] = []
        self.stats: dict[str, PipeStats] = {}

    def deploy(self, stack: Stack) -> None:
        machines = {m.arn: m for m in stack.all_models(StateMachine)}
        for _, s in stack.stacks():
            for pipe in s.models(Pipe).values():
                where = f"Resources.{pipe.logical_id}"
                if pipe.source_kind == "unknown":
                    raise TemplateError(
                        f"{where}.Source: only an SQS queue, a Kinesis stream or a DynamoDB table's stream is served "
                        "locally as a pipe's source"
                    )
                if pipe.stream is not None and pipe.invocation_type != "FIRE_AND_FORGET":
                    raise TemplateError(
                        f"{where}.TargetParameters.StepFunctionStateMachineParameters.InvocationType: a stream "
                        "source's pipe is served locally with FIRE_AND_FORGET only"
                    )
                if pipe.filters and pipe.stream is None:
                    raise TemplateError(f"{where}.SourceParameters.FilterCriteria: served locally for streams only")
                machine = machines.get(pipe.target)
                if machine is None:
                    raise TemplateError(f"{where}.Target: only a state machine of the template is served locally")
                if pipe.invocation_type == "REQUEST_RESPONSE" and machine.type != "EXPRESS":
                    # PipeTargetStateMachineParameters: REQUEST_RESPONSE is not supported for STANDARD workflows.
                    raise TemplateError(
                        f"{where}.TargetParameters.StepFunctionStateMachineParameters.InvocationType: "
                        "REQUEST_RESPONSE is not supported for a STANDARD state machine (use FIRE_AND_FORGET)"
                    )
                # Pipes checks the role's source permissions when it creates the pipe (.role).
                reason = creation_failure(pipe, self.context.service(Iam).decide)
                if reason is not None:
                    raise TemplateError(stack_failure(pipe, reason))
                self.pipes.append(pipe)
                self.stats[pipe.name] = PipeStats()
                self._register(pipe)

    def _register(self, pipe: Pipe) -> None:
        """The pipe in moto's Pipes backend, as CloudFormation creates it: ListPipes, DescribePipe, StopPipe and
        StartPipe answer for it (Amazon EventBridge Pipes API reference), and its poller follows its desired
        state."""
        batching = {"BatchSize": pipe.batch_size, "MaximumBatchingWindowInSeconds": pipe.batching_window}
        source_parameters: dict[str, Any] = {"SqsQueueParameters": batching}
        if pipe.stream is not None:
            stream: dict[str, Any] = {
                **batching,
                "StartingPosition": pipe.stream.starting_position,
                "MaximumRetryAttempts": pipe.stream.maximum_retry_attempts,
                "MaximumRecordAgeInSeconds": pipe.stream.maximum_record_age,
            }
            if pipe.stream.dead_letter_arn is not None:
                stream["DeadLetterConfig"] = {"Arn": pipe.stream.dead_letter_arn}
            key = "DynamoDBStreamParameters" if pipe.source_kind == "dynamodb" else "KinesisStreamParameters"
            source_parameters = {key: stream}
        if pipe.filters:
            source_parameters["FilterCriteria"] = {"Filters": [{"Pattern": p} for p in pipe.filters]}
        target_parameters: dict[str, Any] = {
            "StepFunctionStateMachineParameters": {"InvocationType": pipe.invocation_type}
        }
        if pipe.input_template is not None:
            target_parameters["InputTemplate"] = pipe.input_template
        self.context.client("pipes").create_pipe(
            Name=pipe.name,
            Source=pipe.source,
            Target=pipe.target,
            RoleArn=self.context.service(Iam).role_arn,
            DesiredState="RUNNING" if pipe.running else "STOPPED",
            SourceParameters=source_parameters,
            TargetParameters=target_parameters,
        )

    def desired_running(self, pipe: Pipe) -> bool:
        """Whether the pipe should poll now: its desired state in moto's backend (StopPipe, StartPipe)."""
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.pipes.models import pipes_backends

        found = pipes_backends[DEFAULT_ACCOUNT_ID][self.context.region].pipes.get(pipe.name)
        return found is not None and found.desired_state == "RUNNING"

    def start(self) -> None:
        for pipe in self.pipes:  # a stopped pipe's poller waits for StartPipe
            kind = QueuePoller if pipe.stream is None else StreamPoller
            poller = kind(self.context, pipe, self.stats[pipe.name], self.desired_running)
            self.context.background.start(f"pipe-{pipe.name}", poller.poll)
