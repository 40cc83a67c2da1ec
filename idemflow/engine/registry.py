"""Every change the embedded engine makes to moto: listed, installed and removed in one place.

The engine runs on moto's Step Functions interpreter and changes it. Each change is one function,
``install_<name>(patch)`` in a module of ``idemflow/engine/changes/`` (one module per concern), that
makes every change through the :class:`Patch` it is given: that is how this module keeps what moto held
before (:func:`original`) and puts it back (:func:`remove`). All of them rewrite moto internals that
were read and tested against one version, :data:`PINNED_MOTO`; :func:`apply` refuses any other version
with one line saying what to do, before it touches anything.

Four kinds of change:

* ``fix``: moto answers differently from AWS;
* ``engine``: what a local engine needs (scaled waits, bounded memory, joinable threads);
* ``speedup``: the same answers, less work;
* ``hook``: the engine's own parts plugged into moto (the Lambda runtime, faults and gates, the end of
  an execution, mocked service integrations). Hooks are always installed: they do nothing until the
  engine attaches its parts (``hooks.install``, ``hooks.set_gate``, ``mock_config.install``).

:data:`CHANGES` lists each change with the upstream behaviour it corrects (or the cost it removes) and
the tests that prove it: for a fix, a conformance test (``tests/conformance``, the AWS behaviour, with
its source) and, where one exists, the unit test that shows moto's own behaviour without it.
``tests/unit/test_registry.py`` checks that every installer in the package is listed here once and
that each named test exists; ``tests/conformance/test_fixes_are_needed.py`` that each fix's
conformance tests fail without it; ``tests/functional/test_without_speedups.py`` that the workflow
keeps its promises with every speedup left out.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Final, Literal

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

#: The moto version whose internals every change was written and tested against (pyproject.toml pins
#: the same; ``tests/unit/test_registry.py`` checks that they agree).
PINNED_MOTO: Final = "5.2.5"

#: The package holding the installers (``Change.installer`` is relative to it).
PACKAGE: Final = "idemflow.engine.changes"


class MotoVersionError(RuntimeError):
    """The installed moto is not the version the engine's changes were written for."""


Kind = Literal["fix", "engine", "speedup", "hook"]


@dataclass(frozen=True)
class Change:
    name: str
    kind: Kind
    """``fix``: moto answers differently from AWS; ``engine``: what a local engine needs (scaled waits,
    bounded memory, joinable threads); ``speedup``: same answers, less work; ``hook``: the engine's own
    parts plugged into moto."""
    installer: str
    """``module.install_function`` in :data:`PACKAGE`."""
    corrects: str
    """moto 5.2.5's behaviour that the change replaces, in a sentence."""
    proven_by: tuple[str, ...]
    """pytest node ids (``path::test``) that fail without the change."""


_P = "tests/unit/test_patches.py::"
_S = "tests/unit/test_speedups.py::"
_H = "tests/unit/test_hooks.py::"
_C = "tests/conformance/"

#: Every change, in the order :func:`apply` installs them.
CHANGES: Final[tuple[Change, ...]] = (
    # -- fixes: moto answers differently from AWS ------------------------------------------------------
    Change(
        "atomic-writes",
        "fix",
        "dynamodb.install_atomic_writes",
        "Conditional writes are not atomic under threads: two concurrent attribute_not_exists puts can both win.",
        (
            _P + "test_unpatched_moto_5_2_5_loses_conditional_write_race",
            _C + "test_dynamodb.py::test_one_of_many_concurrent_conditional_puts_wins",
        ),
    ),
    Change(
        "start-time",
        "fix",
        "executions.install_start_time",
        "$$.Execution.StartTime is a Python datetime: reading it breaks DescribeExecution.",
        (
            _P + "test_unpatched_moto_5_2_5_start_time_breaks_describe_execution",
            _C + "test_choice_context_sizes.py::test_start_time_and_entered_time_are_utc_with_milliseconds",
        ),
    ),
    Change(
        "start-sync-execution",
        "fix",
        "sync.install_start_sync_execution",
        "StartSyncExecution is not implemented (404).",
        (
            _P + "test_unpatched_moto_5_2_5_has_no_start_sync_execution",
            _C + "test_executions.py::test_express_sync_execution_returns_the_output_and_an_express_arn",
        ),
    ),
    Change(
        "timestamps",
        "fix",
        "clock.install_timestamps",
        "Timestamp comparisons reject fractional seconds and offsets; EnteredTime is isoformat(), not ...SSSZ.",
        (
            _P + "test_unpatched_moto_5_2_5_timestamps_with_fractions_or_offsets_never_compare",
            _C + "test_choice_context_sizes.py::test_timestamps_with_fractional_seconds_compare_as_instants",
            _C + "test_choice_context_sizes.py::test_start_time_and_entered_time_are_utc_with_milliseconds",
        ),
    ),
    Change(
        "payload-size",
        "fix",
        "payload.install_payload_size",
        "Sizes are counted on ASCII-escaped JSON, below 262,144 only, and a task's input after Parameters never.",
        (
            _P + "test_unpatched_moto_5_2_5_counts_escaped_ascii_not_utf8",
            _P + "test_unpatched_moto_5_2_5_never_checks_a_tasks_input_after_parameters",
            _C + "test_choice_context_sizes.py::test_a_result_of_exactly_the_quota_in_utf8_bytes_passes",
            _C + "test_choice_context_sizes.py::test_a_tasks_input_after_parameters_over_the_quota_fails_the_task",
        ),
    ),
    Change(
        "dynamodb-task-failures",
        "fix",
        "dynamodb.install_dynamodb_task_failures",
        "A DynamoDB task names the interpreter's own failures (States.DataLimitExceeded, a mocked Throw) "
        "DynamoDB.AmazonDynamoDBException.",
        (
            _P + "test_unpatched_moto_5_2_5_names_a_dynamodb_tasks_own_failure_amazon_dynamodb_exception",
            _C + "test_choice_context_sizes.py::test_a_tasks_input_after_parameters_over_the_quota_fails_the_task",
            "tests/functional/test_mock_config.py::test_without_the_dynamodb_task_failures_fix_a_mocked_throw_loses_its_name",
        ),
    ),
    Change(
        "execution-names",
        "fix",
        "executions.install_execution_names",
        "A StartExecution without a name is named None; the second nameless start fails ExecutionAlreadyExists.",
        (_C + "test_executions.py::test_a_start_without_a_name_is_named_with_a_uuid",),
    ),
    Change(
        "dynamodb-error-names",
        "fix",
        "dynamodb.install_dynamodb_error_names",
        "A DynamoDB task fails DynamoDB.<error code>; AWS names the SDK for Java exception class instead.",
        (
            _C + "test_dynamodb.py::test_a_validation_error_is_named_after_the_sdk_class",
            _C + "test_dynamodb.py::test_throttling_codes_are_named_after_the_sdk_classes",
        ),
    ),
    Change(
        "states-runtime",
        "fix",
        "errors.install_states_runtime",
        "States.Runtime is caught by States.ALL and by its own name.",
        (
            _C + "test_errors.py::test_states_all_does_not_catch_states_runtime",
            _C + "test_errors.py::test_states_all_does_not_catch_a_failed_intrinsic",
            _C + "test_errors.py::test_states_runtime_is_not_caught_by_its_own_name",
        ),
    ),
    Change(
        "json-to-string",
        "fix",
        "intrinsics.install_json_to_string",
        "States.JsonToString escapes non-ASCII text as \\uXXXX (Python's ensure_ascii).",
        (
            _C + "test_intrinsics.py::test_json_to_string_writes_non_ascii_text_as_it_is",
            "tests/functional/test_workflow.py::test_a_non_ascii_payload_is_fingerprinted_as_the_client_fingerprints_it",
        ),
    ),
    Change(
        "execution-output",
        "fix",
        "executions.install_execution_output",
        "DescribeExecution returns a string output as it is, not as JSON, and other outputs with spaces.",
        (_C + "test_choice_context_sizes.py::test_an_execution_whose_output_is_a_string_describes_it_as_json",),
    ),
    # -- engine: what a local engine needs ----------------------------------------------------------------
    Change(
        "worker-thread",
        "engine",
        "executions.install_worker_thread",
        "An execution's thread is anonymous: waiting for an execution means polling its status.",
        (_P + "test_unpatched_moto_5_2_5_keeps_no_thread_to_join",),
    ),
    Change(
        "wait-time-scale",
        "engine",
        "clock.install_wait_time_scale",
        "Wait states and Retry intervals sleep real time, and a stopped execution sleeps its interval out.",
        (
            _P + "test_unpatched_moto_5_2_5_sleeps_real_time",
            _P + "test_unpatched_moto_5_2_5_wait_timestamp_uses_local_time",
        ),
    ),
    Change(
        "thread-list",
        "engine",
        "executions.install_thread_list",
        "Every interpreter thread is kept for ever in a list moto never empties (~75 KB per execution).",
        (_P + "test_unpatched_moto_5_2_5_keeps_every_interpreter_thread",),
    ),
    # -- speedups: the same answers, less work ------------------------------------------------------------
    Change(
        "parse-cache",
        "speedup",
        "parse_cache.install_parse_cache",
        "The definition is parsed (ANTLR) on every execution: about half of an execution's time.",
        (_P + "test_unpatched_moto_5_2_5_parses_the_definition_for_every_execution",),
    ),
    Change(
        "jsonpath-cache",
        "speedup",
        "parse_cache.install_jsonpath_cache",
        "jsonpath_ng rebuilds its parser on every parse(); JSONPath and ResultPath expressions are parsed per use.",
        (_H + "test_without_the_speedup_jsonpath_is_parsed_every_time",),
    ),
    Change(
        "condition-cache",
        "speedup",
        "dynamodb_speedups.install_condition_cache",
        "Condition expressions are parsed on every request.",
        (_S + "test_unpatched_moto_5_2_5_parses_a_condition_on_every_request",),
    ),
    Change(
        "item-size",
        "speedup",
        "dynamodb_speedups.install_item_size",
        "An item's size is measured in quadratic time.",
        (_S + "test_unpatched_moto_5_2_5_measures_an_item_in_quadratic_time",),
    ),
    Change(
        "update-expression-cache",
        "speedup",
        "dynamodb_speedups.install_update_expression_cache",
        "Update expressions are parsed twice per request.",
        (_S + "test_unpatched_moto_5_2_5_parses_an_update_expression_twice_per_request",),
    ),
    Change(
        "validator-copy",
        "speedup",
        "dynamodb_speedups.install_validator_copy",
        "The update expression tree is deep-copied in Python before validation.",
        (_S + "test_unpatched_moto_5_2_5_deep_copies_the_update_tree_in_python",),
    ),
    Change(
        "action-lookup",
        "speedup",
        "dispatch_speedups.install_action_lookup",
        "The handler's methods are listed with inspect.getmembers on every request.",
        (_S + "test_unpatched_moto_5_2_5_lists_the_handler_methods_per_request",),
    ),
    Change(
        "module-list-cache",
        "speedup",
        "dispatch_speedups.install_module_list_cache",
        "The server lists moto's package directory on every request.",
        (_H + "test_without_the_speedup_the_server_lists_its_modules_per_request",),
    ),
    Change(
        "lazy-failure-logs",
        "speedup",
        "logs.install_lazy_failure_logs",
        "A failing state builds repr() of its program subtree before the log level is checked.",
        (_H + "test_without_the_speedup_a_failing_state_builds_reprs_for_nothing",),
    ),
    Change(
        "in-process-clients",
        "speedup",
        "clients.install_in_process_clients",
        "The interpreter builds a new boto3 client per task and sends it through HTTP to its own server.",
        (
            _H + "test_without_the_speedup_each_task_builds_a_client",
            _H + "test_without_the_speedup_interpreter_clients_call_moto_port",
        ),
    ),
    # -- hooks: the engine's own parts ---------------------------------------------------------------------
    Change(
        "lambda-invoke",
        "hook",
        "lambda_invoke.install_lambda_invoke",
        "Lambda without Docker only echoes the request body: invocations go to the local runtime.",
        (_H + "test_without_the_hook_moto_only_echoes_the_request",),
    ),
    Change(
        "dynamodb-task",
        "hook",
        "tasks.install_dynamodb_task",
        "DynamoDB tasks cannot be faulted: the engine's Faults and Gate see each request first.",
        (_H + "test_without_the_hook_the_dynamodb_call_is_not_throttled",),
    ),
    Change(
        "lambda-task",
        "hook",
        "tasks.install_lambda_task",
        "Lambda tasks cannot be ordered by a scheduler: the engine's Gate sees each request and response.",
        (_H + "test_without_the_hook_a_gate_never_sees_a_lambda_request",),
    ),
    Change(
        "execution-end",
        "hook",
        "execution_end.install_execution_end",
        "Nothing signals the end of an execution: the engine waits on an event instead of polling.",
        (_H + "test_without_the_hook_execution_done_is_never_set",),
    ),
    Change(
        "events-targets",
        "hook",
        "events_targets.install_events_targets",
        "A rule with a state machine target fails PutEvents (NotImplementedError): the events service delivers.",
        (_H + "test_without_the_hook_a_state_machine_target_fails_put_events",),
    ),
    Change(
        "mock-config",
        "hook",
        "mock_config.install_mock_config",
        "<arn>#<TestCase> (Step Functions Local's mocked service integrations) is not understood.",
        ("tests/functional/test_mock_config.py::test_without_the_hook_a_test_case_arn_is_rejected",),
    ),
)


def installed_moto() -> str:
    return importlib.metadata.version("moto")


def check_moto() -> None:
    """Raise :class:`MotoVersionError` (one line, what to do) unless the pinned moto is installed."""
    try:
        installed = installed_moto()
    except importlib.metadata.PackageNotFoundError:
        installed = "none"
    if installed != PINNED_MOTO:
        raise MotoVersionError(
            f"the embedded engine patches moto {PINNED_MOTO}'s internals, but moto {installed} is installed: "
            f"install the pinned version (pip install 'moto[server,stepfunctions,dynamodb,awslambda]=={PINNED_MOTO}', "
            "or `make test`, which installs the project's pins)"
        )


def names(kind: Kind | None = None) -> list[str]:
    """The changes' names, in installation order; only those of one kind if given."""
    return [c.name for c in CHANGES if kind is None or c.kind == kind]


def installer(change: Change) -> Callable[[Patch], None]:
    """The function that installs ``change`` (importing its module, and so moto)."""
    module, _, function = change.installer.rpartition(".")
    found: Callable[[Patch], None] = getattr(importlib.import_module(f"{PACKAGE}.{module}"), function)
    return found


# ----------------------------------------------------------------------------------------------------
# The one place that changes moto and keeps what it held
# ----------------------------------------------------------------------------------------------------

_MISSING: Final = object()
_lock = threading.RLock()
# Undo steps, oldest first: undone newest first.
_undo: list[Callable[[], None]] = []
# (owner, attribute, what the owner itself held before any change: a value or _MISSING), first change only.
_originals: list[tuple[Any, str, Any]] = []
# The names left out of what is installed; None: nothing is installed.
_left_out: frozenset[str] | None = None


class Patch:
    """How an installer changes moto: every change goes through here, so that it can be undone."""

    def __init__(self, change: str):
        self.change = change

    def set(self, owner: Any, attribute: str, value: Any) -> None:
        """``setattr(owner, attribute, value)``, undone by restoring what ``owner`` itself held (an
        attribute it only inherited is deleted again)."""
        held = owner.__dict__.get(attribute, _MISSING)
        if not any(o is owner and a == attribute for o, a, _ in _originals):
            _originals.append((owner, attribute, held))

        def undo() -> None:
            if held is _MISSING:
                if attribute in owner.__dict__:
                    delattr(owner, attribute)
            else:
                setattr(owner, attribute, held)

        _undo.append(undo)
        setattr(owner, attribute, value)

    def append(self, target: list[Any], item: Any) -> None:
        """Add ``item`` to one of moto's lists (once), undone by taking it out again."""
        if item in target:
            return
        target.append(item)
        _undo.append(lambda: target.remove(item) if item in target else None)

    def on_undo(self, forget: Callable[[], None]) -> None:
        """Call ``forget`` when the change is undone (caches built for it)."""
        _undo.append(forget)


def _undo_all() -> None:
    global _left_out
    while _undo:
        _undo.pop()()
    _originals.clear()
    _left_out = None


def apply(without: Collection[str] = (), *, hooks_too: bool = False) -> None:
    """Check moto's version, then install every change but those named in ``without``.

    ``without`` is for tests that show a change is needed (and for running with every speedup left
    out: ``without=names("speedup")``); the engine runs with all of them. Hooks are the engine's own
    parts: leaving one out is refused unless ``hooks_too`` (a test that shows a hook is needed).
    Installed once: a later call with the same ``without`` does nothing; with another, every change is
    undone first (the engine's attached parts stay attached). Safe to call from several threads. The
    hooks are installed with nothing attached: the engine attaches its Lambda runtime and faults
    (``hooks.install``) once its server runs, and a mock configuration file (``mock_config.install``)
    when it has one.
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
    with _lock:
        if _left_out == skipped:
            return
        _undo_all()
        try:
            for change in CHANGES:
                if change.name not in skipped:
                    installer(change)(Patch(change.name))
        except BaseException:
            _undo_all()
            raise
        _left_out = skipped


def left_out() -> frozenset[str] | None:
    """The changes :func:`apply` left out, or None when nothing is installed."""
    return _left_out


def original(owner: Any, attribute: str) -> Any:
    """What ``owner`` held as ``attribute`` before any change (from its own ``__dict__``, or what it
    inherited), while changes are installed: for a test that puts one of moto's functions back."""
    with _lock:
        for o, a, held in _originals:
            if o is owner and a == attribute:
                if held is not _MISSING:
                    return held
                for base in getattr(owner, "__mro__", ())[1:]:
                    if attribute in base.__dict__:
                        return base.__dict__[attribute]
                raise KeyError(f"{owner!r} held no {attribute} before it was changed")
    raise KeyError(f"{attribute} of {owner!r} is not changed by any installed change")


def remove() -> None:
    """Put moto back as it was (every change undone, newest first) and detach the engine's parts."""
    with _lock:
        _undo_all()
    from idemflow.engine import hooks, mock_config
    from idemflow.engine.changes import clients

    hooks.install(None, None)
    hooks.set_gate(None)
    mock_config.uninstall()
    clients.reset()
