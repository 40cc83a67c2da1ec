"""Every change the embedded engine makes to moto: listed, installed and removed in one place.

The engine runs on moto's Step Functions interpreter and changes it. Each change is one function,
``install_<name>(patch)`` in the package of the service it changes (``idemflow/engine/services/<service>/``;
what spans every service in ``idemflow/engine/core/``), imported here, that makes every change through
the :class:`~idemflow.engine.patching.Patch` it is given: that is how what moto held before is kept
(:func:`original`) and put back (:func:`remove`). All of them rewrite moto internals that were read and
tested against one version, :data:`PINNED_MOTO`; :func:`apply` refuses any other version
with one line saying what to do, before it touches anything.

Four kinds of change:

* ``fix``: moto answers differently from AWS;
* ``engine``: what a local engine needs (scaled waits, bounded memory, joinable threads);
* ``speedup``: the same answers, less work;
* ``hook``: the engine's own parts plugged into moto (the Lambda runtime, faults and gates, the end of
  an execution, mocked service integrations). Hooks are always installed: they do nothing until the
  engine attaches its parts (its state: :mod:`idemflow.engine.state`).

:data:`CHANGES` lists each change with the upstream behaviour it corrects (or the cost it removes). The
project's tests say which of them prove each change needed (for a fix, a conformance test with the AWS
behaviour's source, and the unit test that shows moto's own behaviour without it), and check that every
installer of the package is listed here once and every change has its proofs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Final, Literal

# Before the installers' modules import moto: it holds back moto's Batch and EC2 (lazy_moto says why).
import idemflow.engine.core.lazy_moto  # noqa: F401

# isort: split
from idemflow.engine import patching
from idemflow.engine.core.dispatch_speedups import (
    install_action_lookup,
    install_module_list_cache,
    install_one_model_loader,
    install_random_strings,
    install_regions_data_loader,
)
from idemflow.engine.core.in_process_clients import install_in_process_clients, install_request_environ
from idemflow.engine.core.keep_alive import install_keep_alive
from idemflow.engine.core.model_tracking import install_untracked_models
from idemflow.engine.core.moto_version import PINNED_MOTO, check_moto
from idemflow.engine.core.serialize_speedups import (
    install_iso_timestamps,
    install_json_parse,
    install_serializer_keys,
)
from idemflow.engine.core.server_speedups import install_access_log, install_request_headers
from idemflow.engine.errors import MotoVersionError
from idemflow.engine.patching import Patch
from idemflow.engine.services.dynamodb.atomic_writes import install_atomic_writes
from idemflow.engine.services.dynamodb.compact_items import install_compact_items
from idemflow.engine.services.dynamodb.speedups import (
    install_condition_cache,
    install_item_size,
    install_tree_walk,
    install_update_expression_cache,
    install_update_validation_cache,
    install_validator_copy,
)
from idemflow.engine.services.events.targets import install_events_targets
from idemflow.engine.services.kinesis.shards import install_kinesis_shards
from idemflow.engine.services.lambda_.invoke import install_lambda_invoke
from idemflow.engine.services.pipes.source_writes import install_source_writes
from idemflow.engine.services.s3.event_notifications import install_s3_events
from idemflow.engine.services.sns.delivery import install_sns_delivery
from idemflow.engine.services.sns.queue_policy import install_sns_queue_policy
from idemflow.engine.services.sqs.message_size import install_sqs_message_size
from idemflow.engine.services.sqs.move_tasks import install_sqs_move_tasks
from idemflow.engine.services.sqs.recreated_queues import install_sqs_recreated_queues
from idemflow.engine.services.stepfunctions.clock import install_timestamps, install_wait_time_scale
from idemflow.engine.services.stepfunctions.dynamodb_tasks import (
    install_dynamodb_error_names,
    install_dynamodb_task_failures,
)
from idemflow.engine.services.stepfunctions.ended_environments import install_ended_environments
from idemflow.engine.services.stepfunctions.execution_end import install_execution_end
from idemflow.engine.services.stepfunctions.execution_index import install_execution_index
from idemflow.engine.services.stepfunctions.executions import (
    install_atomic_starts,
    install_execution_names,
    install_execution_output,
    install_start_time,
    install_stop_date,
    install_thread_list,
    install_worker_thread,
)
from idemflow.engine.services.stepfunctions.failure_logs import install_lazy_failure_logs
from idemflow.engine.services.stepfunctions.failures import install_cause_length, install_states_runtime
from idemflow.engine.services.stepfunctions.history_values import install_shared_history_values
from idemflow.engine.services.stepfunctions.http_tasks import install_http_invoke
from idemflow.engine.services.stepfunctions.interpreter_speedups import (
    install_inline_states,
    install_json_copy,
    install_program_state_copy,
)
from idemflow.engine.services.stepfunctions.intrinsics import install_intrinsic_failures, install_json_to_string
from idemflow.engine.services.stepfunctions.mocked_starts import install_mock_config
from idemflow.engine.services.stepfunctions.parse_cache import install_jsonpath_cache, install_parse_cache
from idemflow.engine.services.stepfunctions.payload import install_input_size, install_payload_size
from idemflow.engine.services.stepfunctions.redrive import install_redrive
from idemflow.engine.services.stepfunctions.sfn_tasks import install_sfn_task_casing, install_sync_child_end
from idemflow.engine.services.stepfunctions.sync import install_start_sync_execution
from idemflow.engine.services.stepfunctions.task_gates import (
    install_dynamodb_task,
    install_lambda_task,
    install_sfn_task,
)
from idemflow.engine.services.stepfunctions.task_permissions import install_task_permissions
from idemflow.engine.services.stepfunctions.validation import install_required_members

__all__ = [
    "CHANGES",
    "PINNED_MOTO",
    "Change",
    "MotoVersionError",
    "Patch",
    "apply",
    "check_moto",
    "left_out",
    "names",
    "original",
    "remove",
]


Kind = Literal["fix", "engine", "speedup", "hook"]


@dataclass(frozen=True)
class Change:
    name: str
    kind: Kind
    """``fix``: moto answers differently from AWS; ``engine``: what a local engine needs (scaled waits,
    bounded memory, joinable threads); ``speedup``: same answers, less work; ``hook``: the engine's own
    parts plugged into moto."""
    installer: Callable[[Patch], None]
    """The function that makes the change, ``install_<name>`` in the module of the service it changes."""
    corrects: str
    """moto 5.2.5's behaviour that the change replaces, in a sentence."""


#: Every change, in the order :func:`apply` installs them.
CHANGES: Final[tuple[Change, ...]] = (
    # -- first: an engine change whose requests atomic-writes' lock is then taken around -----------------
    Change(
        "compact-items",
        "engine",
        install_compact_items,
        "Every item is kept as Python objects (an object and a dict per attribute): about 3 KB per record of a"
        " dozen short strings, kept as long as the table, and walked by every full garbage collection.",
    ),
    # -- fixes: moto answers differently from AWS ------------------------------------------------------
    Change(
        "atomic-writes",
        "fix",
        install_atomic_writes,
        "Conditional writes are not atomic under threads: two concurrent attribute_not_exists puts can both win.",
    ),
    Change(
        "kinesis-shards",
        "fix",
        install_kinesis_shards,
        "A PutRecord during a GetRecords fails the read (OrderedDict mutated), and two at once may share a number.",
    ),
    Change(
        "start-time",
        "fix",
        install_start_time,
        "$$.Execution.StartTime is a Python datetime: reading it breaks DescribeExecution.",
    ),
    Change(
        "stop-date",
        "fix",
        install_stop_date,
        "StopExecution answers no stopDate: the worker sets it when the stopped run ends, after the answer.",
    ),
    Change(
        "start-sync-execution",
        "fix",
        install_start_sync_execution,
        "StartSyncExecution is not implemented (404).",
    ),
    Change(
        "required-members",
        "fix",
        install_required_members,
        "A request without a required member reaches the backend: DescribeExecution fails on None (500).",
    ),
    Change(
        "timestamps",
        "fix",
        install_timestamps,
        "Timestamp comparisons reject fractional seconds and offsets; EnteredTime is isoformat(), not ...SSSZ.",
    ),
    Change(
        "payload-size",
        "fix",
        install_payload_size,
        "Sizes are counted on ASCII-escaped JSON, below 262,144 only, and a task's input after Parameters never.",
    ),
    Change(
        "input-size",
        "fix",
        install_input_size,
        "StartExecution and StartSyncExecution start an execution with an input of any size.",
    ),
    Change(
        "dynamodb-task-failures",
        "fix",
        install_dynamodb_task_failures,
        "A DynamoDB task names the interpreter's own failures (States.DataLimitExceeded, a mocked Throw) "
        "DynamoDB.AmazonDynamoDBException.",
    ),
    Change(
        "execution-names",
        "fix",
        install_execution_names,
        "A StartExecution without a name is named None; the second nameless start fails ExecutionAlreadyExists.",
    ),
    Change(
        "atomic-starts",
        "fix",
        install_atomic_starts,
        "A new execution is listed before it has a status (ListExecutions fails 500) and two starts of one "
        "name can both run.",
    ),
    Change(
        "dynamodb-error-names",
        "fix",
        install_dynamodb_error_names,
        "A DynamoDB task fails DynamoDB.<error code>; AWS names the SDK for Java exception class instead.",
    ),
    Change(
        "states-runtime",
        "fix",
        install_states_runtime,
        "States.Runtime is caught by States.ALL and by its own name.",
    ),
    Change(
        "cause-length",
        "fix",
        install_cause_length,
        "A failure's cause is kept whole in the history and the state data, at any length.",
    ),
    Change(
        "json-to-string",
        "fix",
        install_json_to_string,
        "States.JsonToString escapes non-ASCII text as \\uXXXX (Python's ensure_ascii).",
    ),
    Change(
        "intrinsic-failures",
        "fix",
        install_intrinsic_failures,
        "An intrinsic's failure reaches the cause as a Python exception naming moto's class, not the state.",
    ),
    Change(
        "sfn-task-casing",
        "fix",
        install_sfn_task_casing,
        "A states:startExecution or aws-sdk:sfn task sends StateMachineArn/ExecutionArn as written (botocore "
        "refuses it: States.Runtime) and answers in botocore's casing (executionArn, output).",
    ),
    Change(
        "sqs-message-size",
        "fix",
        install_sqs_message_size,
        "A message's size is its body's characters: non-ASCII bytes and attributes are not counted.",
    ),
    Change(
        "sqs-move-tasks",
        "fix",
        install_sqs_move_tasks,
        "StartMessageMoveTask, ListMessageMoveTasks and CancelMessageMoveTask raise NotImplementedError.",
    ),
    Change(
        "sqs-recreated-queues",
        "fix",
        install_sqs_recreated_queues,
        "A queue deleted and created again: CreateQueue accepted at once; redrive policies keep the deleted queue.",
    ),
    Change(
        "s3-events",
        "fix",
        install_s3_events,
        "S3's EventBridge events: eTag, reason ObjectCreated, one sequencer for all, a numeric time, every bus.",
    ),
    Change(
        "sns-queue-policy",
        "hook",
        install_sns_queue_policy,
        "SNS delivers to a subscribed queue whatever the queue's policy: each delivery is decided against it.",
    ),
    Change(
        "sns-delivery",
        "fix",
        install_sns_delivery,
        "A delivery to a deleted SQS queue fails the Publish call and is lost; UnsubscribeURL names no subscription.",
    ),
    Change(
        "execution-output",
        "fix",
        install_execution_output,
        "DescribeExecution returns a string output as it is, not as JSON, and other outputs with spaces.",
    ),
    Change(
        "redrive",
        "fix",
        install_redrive,
        "RedriveExecution raises NotImplementedError; executions say nothing of redrives ($$ has no RedriveCount).",
    ),
    Change(
        "http-invoke",
        "fix",
        install_http_invoke,
        "http:invoke is not implemented: CreateStateMachine refuses an HTTP Task (\"Unknown service 'http'\") and"
        " an ErrorEquals naming States.Http.StatusCode.<code>.",
    ),
    # -- engine: what a local engine needs ----------------------------------------------------------------
    Change(
        "worker-thread",
        "engine",
        install_worker_thread,
        "An execution's thread is anonymous: waiting for an execution means polling its status.",
    ),
    Change(
        "wait-time-scale",
        "engine",
        install_wait_time_scale,
        "Wait states and Retry intervals sleep real time, a stopped execution sleeps its interval out, and a"
        " state machine's TimeoutSeconds is real time, not the execution's (its scaled waits count at full length).",
    ),
    Change(
        "thread-list",
        "engine",
        install_thread_list,
        "Every interpreter thread is kept for ever in a list moto never empties, with its execution's frames.",
    ),
    Change(
        "untracked-models",
        "engine",
        install_untracked_models,
        "Every model instance moto makes is kept for ever in a list for its dashboard: each Express execution's"
        " state machine copy, every item version a write replaced.",
    ),
    Change(
        "shared-history-values",
        "engine",
        install_shared_history_values,
        "Each history event holds its own copy of the state data's JSON text, though consecutive events repeat it,"
        ' and its own {"truncated": false}.',
    ),
    Change(
        "ended-environments",
        "engine",
        install_ended_environments,
        "A succeeded execution keeps its interpreter's whole environment (frames, context, pools) while it is"
        " kept, though only its history and output are read again.",
    ),
    Change(
        "sync-child-end",
        "engine",
        install_sync_child_end,
        "A .sync task reads its child's DescribeExecution every 0.5 s of real time until the child has ended.",
    ),
    # -- speedups: the same answers, less work ------------------------------------------------------------
    Change(
        "parse-cache",
        "speedup",
        install_parse_cache,
        "The definition is parsed (ANTLR) on every execution: about half of an execution's time.",
    ),
    Change(
        "jsonpath-cache",
        "speedup",
        install_jsonpath_cache,
        "jsonpath_ng rebuilds its parser on every parse(); JSONPath and ResultPath expressions are parsed per use.",
    ),
    Change(
        "execution-index",
        "speedup",
        install_execution_index,
        "Starting, describing or stopping an execution scans every execution the state machine keeps.",
    ),
    Change(
        "condition-cache",
        "speedup",
        install_condition_cache,
        "Condition expressions are parsed on every request.",
    ),
    Change(
        "item-size",
        "speedup",
        install_item_size,
        "An item's size is computed in quadratic time.",
    ),
    Change(
        "update-expression-cache",
        "speedup",
        install_update_expression_cache,
        "Update expressions are parsed twice per request.",
    ),
    Change(
        "validator-copy",
        "speedup",
        install_validator_copy,
        "The update expression tree is deep-copied in Python before validation.",
    ),
    Change(
        "update-validation-cache",
        "speedup",
        install_update_validation_cache,
        "An update expression's action counts, overlapping paths and key attributes are checked on every request.",
    ),
    Change(
        "tree-walk",
        "speedup",
        install_tree_walk,
        "Each pass over an update expression's tree builds its processing map and checks abstract classes per node.",
    ),
    Change(
        "action-lookup",
        "speedup",
        install_action_lookup,
        "The handler's methods are listed with inspect.getmembers on every request.",
    ),
    Change(
        "module-list-cache",
        "speedup",
        install_module_list_cache,
        "The server lists moto's package directory on every request.",
    ),
    Change(
        "one-model-loader",
        "speedup",
        install_one_model_loader,
        "Each service model is read by a new data loader, which lists botocore's service folders again.",
    ),
    Change(
        "regions-data-loader",
        "speedup",
        install_regions_data_loader,
        "A backend's regions are looked up in a session of moto's, which reads the endpoints and the model again.",
    ),
    Change(
        "random-strings",
        "speedup",
        install_random_strings,
        "Each response's request id draws its 52 characters through Random.choice, three calls a character.",
    ),
    Change(
        "serializer-keys",
        "speedup",
        install_serializer_keys,
        "Every member of every response value probes six alias providers (and a regex per alias) for its key.",
    ),
    Change(
        "iso-timestamps",
        "speedup",
        install_iso_timestamps,
        "Every timestamp of a response is parsed with dateutil (a history event's is an ISO 8601 string).",
    ),
    Change(
        "json-parse",
        "speedup",
        install_json_parse,
        "A JSON request (every DynamoDB request) is parsed by walking its input shape, a handler looked up by name"
        " for every value.",
    ),
    Change(
        "lazy-failure-logs",
        "speedup",
        install_lazy_failure_logs,
        "A failing state builds repr() of its program subtree before the log level is checked.",
    ),
    Change(
        "json-copy",
        "speedup",
        install_json_copy,
        "The state data is copied with copy.deepcopy (a memo and a type dispatch per value) on every read.",
    ),
    Change(
        "inline-states",
        "speedup",
        install_inline_states,
        "Each Task state, and each program (an execution's, a Map iteration's, a Parallel branch's), runs on a"
        " thread started for it and waited for, though no TimeoutSeconds is set that could end the wait first.",
    ),
    Change(
        "program-state-copy",
        "speedup",
        install_program_state_copy,
        "The program state is deep-copied through copy's generic path (__reduce_ex__) twice per state, to read its"
        " class, and for each frame.",
    ),
    Change(
        "in-process-clients",
        "speedup",
        install_in_process_clients,
        "The interpreter builds a new boto3 client per task and sends it through HTTP to its own server.",
    ),
    Change(
        "request-environ",
        "speedup",
        install_request_environ,
        "A botocore request dispatched in-process (a function's DynamoDB call through the endpoint) becomes moto's"
        " request through a whole WSGI environ built by werkzeug's EnvironBuilder.",
    ),
    Change(
        "keep-alive",
        "speedup",
        install_keep_alive,
        "The server closes the connection after every response: each SDK call of a function opens a new one.",
    ),
    Change(
        "request-headers",
        "speedup",
        install_request_headers,
        "The server parses each request's header lines with the email package's feed parser.",
    ),
    Change(
        "access-log",
        "speedup",
        install_access_log,
        "The server formats an access log line for every response, which the werkzeug logger then drops.",
    ),
    # -- hooks: the engine's own parts ---------------------------------------------------------------------
    Change(
        "lambda-invoke",
        "hook",
        install_lambda_invoke,
        "Lambda without Docker only echoes the request body: invocations go to the local runtime.",
    ),
    Change(
        "dynamodb-task",
        "hook",
        install_dynamodb_task,
        "DynamoDB tasks cannot be faulted: the engine's Faults and Gate see each request first.",
    ),
    Change(
        "lambda-task",
        "hook",
        install_lambda_task,
        "Lambda tasks cannot be ordered by a scheduler: the engine's Gate sees each request and response.",
    ),
    Change(
        "sfn-task",
        "hook",
        install_sfn_task,
        "StartExecution tasks cannot be faulted nor ordered: the engine's Faults and Gate see each request, and "
        "the Gate a .sync child's end.",
    ),
    Change(
        "task-permissions",
        "hook",
        install_task_permissions,
        "Tasks run whatever their state machine's role allows: each call is decided against the role's policies.",
    ),
    Change(
        "execution-end",
        "hook",
        install_execution_end,
        "Nothing signals the end of an execution: the engine waits on an event instead of polling.",
    ),
    Change(
        "events-targets",
        "hook",
        install_events_targets,
        "A rule with a state machine target fails PutEvents (NotImplementedError): the events service delivers.",
    ),
    Change(
        "source-writes",
        "hook",
        install_source_writes,
        "Nothing signals a write to a queue or a stream: a pipe's poller reads its source again and again.",
    ),
    Change(
        "mock-config",
        "hook",
        install_mock_config,
        "<arn>#<TestCase> (Step Functions Local's mocked service integrations) is not understood.",
    ),
)


def names(kind: Kind | None = None) -> list[str]:
    """The changes' names, in installation order; only those of one kind if given."""
    return [c.name for c in CHANGES if kind is None or c.kind == kind]


# ----------------------------------------------------------------------------------------------------
# Installing and removing: every change goes through a Patch (idemflow/engine/patching.py), whose log undoes it
# ----------------------------------------------------------------------------------------------------

# The names left out of what is installed; None: nothing is installed.
_left_out: frozenset[str] | None = None


def _undo_all() -> None:
    global _left_out
    patching.undo_all()
    _left_out = None


def apply(without: Collection[str] = (), *, hooks_too: bool = False) -> None:
    """Check moto's version, then install every change but those named in ``without``.

    ``without`` is for tests that show a change is needed (and for running with every speedup left
    out: ``without=names("speedup")``); the engine runs with all of them. Hooks are the engine's own
    parts: leaving one out is refused unless ``hooks_too`` (a test that shows a hook is needed).
    Installed once: a later call with the same ``without`` does nothing; with another, every change is
    undone first. Safe to call from several threads. The hooks read the engine's parts from its state
    (:mod:`idemflow.engine.state`), which this module neither reads nor writes.
    """
    check_moto()
    skipped = frozenset(without)
    unknown = skipped - set(names())
    if unknown:
        raise KeyError(f"no such change: {', '.join(sorted(unknown))} (changes: {', '.join(names())})")
    hooks = skipped & set(names("hook"))
    if hooks and not hooks_too:
        raise KeyError(
            f"cannot leave out {', '.join(sorted(hooks))}: a hook is the engine's own part, not a fix, "
            "engine change or speedup"
        )
    global _left_out
    with patching.lock:
        if _left_out == skipped:
            return
        _undo_all()
        try:
            for change in CHANGES:
                if change.name not in skipped:
                    change.installer(Patch(change.name))
        except BaseException:
            _undo_all()
            raise
        _left_out = skipped


def left_out() -> frozenset[str] | None:
    """The changes :func:`apply` left out, or None when nothing is installed."""
    return _left_out


def original(owner: Any, attribute: str) -> Any:
    """What ``owner`` held as ``attribute`` before any change: :func:`idemflow.engine.patching.original`."""
    return patching.original(owner, attribute)


def remove() -> None:
    """Put moto back as it was: every change undone, newest first."""
    with patching.lock:
        _undo_all()
