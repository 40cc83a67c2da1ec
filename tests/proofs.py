"""The tests that prove each of the embedded engine's changes to moto needed, by registry name
(``idemflow/engine/registry.py``): for a fix, a conformance test (the AWS behaviour, with its source) and,
where one exists, the unit test that shows moto's own behaviour without it. The package does not name its
tests: ``tests/unit/test_registry.py`` checks that every change has its proofs here and that each exists,
``tests/conformance/test_fixes_are_needed.py`` that each fix's conformance tests fail without it."""

from __future__ import annotations

from typing import Final

_U = "tests/unit/changes/"
_SP = "tests/unit/changes/speedups/"
_HK = "tests/unit/hooks/"
_C = "tests/conformance/"

PROVEN_BY: Final[dict[str, tuple[str, ...]]] = {
    "atomic-writes": (
        _U + "test_dynamodb.py::test_unpatched_moto_5_2_5_loses_conditional_write_race",
        _C + "test_dynamodb.py::test_one_of_many_concurrent_conditional_puts_wins",
    ),
    "kinesis-shards": (
        _U + "test_kinesis.py::test_unpatched_moto_5_2_5_fails_a_read_when_a_record_is_put_during_it",
        _U + "test_kinesis.py::test_patched_a_record_put_during_a_read_waits_for_it",
        _C + "test_kinesis.py::test_records_put_while_the_shard_is_read_are_each_read_once_in_order",
    ),
    "start-time": (
        _U + "test_executions.py::test_unpatched_moto_5_2_5_start_time_breaks_describe_execution",
        _C + "test_choice_context_sizes.py::test_start_time_and_entered_time_are_utc_with_milliseconds",
    ),
    "stop-date": (
        _U + "test_sfn_tasks.py::test_unpatched_moto_5_2_5_answers_stop_execution_without_its_stop_date",
        _U
        + "test_sfn_tasks.py::test_patched_an_sdk_stop_execution_task_aborts_the_execution_and_answers_its_stop_date",
        _C + "test_sfn_tasks.py::test_a_state_machine_stops_another_through_the_sdk_integration",
    ),
    "start-sync-execution": (
        _U + "test_sync.py::test_unpatched_moto_5_2_5_has_no_start_sync_execution",
        _C + "test_executions.py::test_express_sync_execution_returns_the_output_and_an_express_arn",
    ),
    "required-members": (
        _U + "test_validation.py::test_unpatched_moto_5_2_5_fails_on_a_missing_execution_arn",
        _C + "test_executions.py::test_a_request_without_a_required_member_is_a_validation_exception",
    ),
    "timestamps": (
        _U + "test_clock.py::test_unpatched_moto_5_2_5_timestamps_with_fractions_or_offsets_never_compare",
        _C + "test_choice_context_sizes.py::test_timestamps_with_fractional_seconds_compare_as_instants",
        _C + "test_choice_context_sizes.py::test_start_time_and_entered_time_are_utc_with_milliseconds",
    ),
    "payload-size": (
        _U + "test_payload.py::test_unpatched_moto_5_2_5_counts_escaped_ascii_not_utf8",
        _U + "test_payload.py::test_unpatched_moto_5_2_5_never_checks_a_tasks_input_after_parameters",
        _C + "test_choice_context_sizes.py::test_a_result_of_exactly_the_quota_in_utf8_bytes_passes",
        _C + "test_choice_context_sizes.py::test_a_tasks_input_after_parameters_over_the_quota_fails_the_task",
    ),
    "input-size": (
        _C + "test_executions.py::test_a_start_with_an_input_over_the_quota_is_refused",
        _C + "test_executions.py::test_a_sync_start_with_an_input_over_the_quota_is_refused",
    ),
    "dynamodb-task-failures": (
        _U + "test_payload.py::test_unpatched_moto_5_2_5_names_a_dynamodb_tasks_own_failure_amazon_dynamodb_exception",
        _C + "test_choice_context_sizes.py::test_a_tasks_input_after_parameters_over_the_quota_fails_the_task",
        "tests/functional/test_mock_config.py::test_without_the_dynamodb_task_failures_fix_a_mocked_throw_loses_its_name",
    ),
    "atomic-starts": (
        _U + "test_executions.py::test_unpatched_moto_5_2_5_lists_a_starting_execution_without_a_status",
        _U + "test_executions.py::test_unpatched_moto_5_2_5_runs_two_executions_of_one_name_started_at_once",
        _C + "test_executions.py::test_concurrent_starts_of_one_name_and_input_run_one_execution",
    ),
    "execution-names": (_C + "test_executions.py::test_a_start_without_a_name_is_named_with_a_uuid",),
    "dynamodb-error-names": (
        _C + "test_dynamodb.py::test_a_validation_error_is_named_after_the_sdk_class",
        _C + "test_dynamodb.py::test_throttling_codes_are_named_after_the_sdk_classes",
    ),
    "states-runtime": (
        _C + "test_errors.py::test_states_all_does_not_catch_states_runtime",
        _C + "test_errors.py::test_states_all_does_not_catch_a_failed_intrinsic",
        _C + "test_errors.py::test_states_runtime_is_not_caught_by_its_own_name",
    ),
    "cause-length": (_C + "test_sfn_tasks.py::test_a_cause_holds_32768_characters_at_most",),
    "json-to-string": (
        _C + "test_intrinsics.py::test_json_to_string_writes_non_ascii_text_as_it_is",
        "tests/functional/workflow/test_paths.py::test_a_non_ascii_payload_is_fingerprinted_as_the_client_fingerprints_it",
    ),
    "intrinsic-failures": (_C + "test_intrinsics.py::test_hash_over_the_limit_fails_the_execution",),
    "sfn-task-casing": (
        _U + "test_sfn_tasks.py::test_unpatched_moto_5_2_5_refuses_a_start_execution_tasks_state_machine_arn",
        _C + "test_sfn_tasks.py::test_a_sync2_task_answers_the_childs_execution_as_json",
        _C + "test_sfn_tasks.py::test_a_failed_child_fails_the_task_with_its_execution_as_the_cause",
        _U + "test_sfn_tasks.py::test_unpatched_moto_5_2_5_fails_an_sdk_stop_execution_on_its_execution_arn",
        _C + "test_sfn_tasks.py::test_an_sdk_start_execution_task_speaks_the_states_casing",
    ),
    "sqs-message-size": (
        _C + "test_sqs.py::test_a_message_over_the_queues_size_counting_its_attributes_is_refused",
        _C + "test_sqs.py::test_a_batch_entry_over_the_size_fails_alone",
    ),
    "sqs-move-tasks": (
        _C + "test_sqs_move_tasks.py::test_a_move_task_moves_every_dead_letter_to_the_destination_and_completes",
        _C + "test_sqs_move_tasks.py::test_without_a_destination_each_dead_letter_goes_back_to_the_queue_it_came_from",
        _C + "test_sqs_move_tasks.py::test_what_a_move_task_refuses",
    ),
    "sqs-recreated-queues": (
        _C + "test_sqs_queues.py::test_a_deleted_queue_is_not_created_again_under_its_name_for_60_seconds",
        _C + "test_sqs_queues.py::test_a_dead_letter_queue_created_again_is_the_one_its_queues_dead_letter_to",
    ),
    "redrive": (
        _C + "test_redrive.py::test_a_fail_state_is_entered_again_and_fails_again",
        _C + "test_redrive.py::test_an_inline_map_runs_again_only_its_unsuccessful_iterations",
        _C + "test_redrive.py::test_a_parallel_state_runs_again_only_its_unsuccessful_branches",
        _C + "test_redrive.py::test_an_execution_that_does_not_exist_or_is_express_is_refused",
    ),
    "s3-events": (
        _C + "test_s3_events.py::test_a_put_object_sends_object_created_as_recorded_on_aws",
        _C + "test_s3_events.py::test_each_write_of_a_key_has_a_greater_sequencer",
        _C + "test_s3_events.py::test_s3_sends_to_the_default_bus_only",
    ),
    "sns-queue-policy": (
        _C
        + "test_sns.py::test_a_queue_whose_policy_lets_not_the_topic_send_gets_nothing_its_dead_letter_queue_gets_it",
        _C + "test_sns.py::test_a_dead_letter_queue_whose_policy_does_not_let_the_topic_send_loses_the_message",
    ),
    "sns-delivery": (
        _C + "test_sns.py::test_a_message_arrives_in_its_envelope_naming_its_subscription",
        _C + "test_sns.py::test_a_message_for_a_deleted_queue_goes_to_the_subscriptions_dead_letter_queue",
        _C + "test_sns.py::test_without_a_dead_letter_queue_a_message_for_a_deleted_queue_is_dropped_not_refused",
    ),
    "execution-output": (
        _C + "test_choice_context_sizes.py::test_an_execution_whose_output_is_a_string_describes_it_as_json",
    ),
    "http-invoke": (
        _U + "test_http_tasks.py::test_unpatched_moto_5_2_5_refuses_a_definition_with_an_http_task",
        _C + "test_http_task.py::test_an_http_task_answers_the_json_response_with_its_status_and_headers",
        _C + "test_http_task.py::test_a_404_fails_states_http_status_code_404_and_a_catch_takes_it",
    ),
    "worker-thread": (_U + "test_executions.py::test_unpatched_moto_5_2_5_keeps_no_thread_to_join",),
    "wait-time-scale": (
        _U + "test_clock.py::test_unpatched_moto_5_2_5_sleeps_real_time",
        _U + "test_clock.py::test_unpatched_moto_5_2_5_wait_timestamp_uses_local_time",
    ),
    "sync-child-end": (
        _U + "test_sfn_tasks.py::test_unpatched_moto_5_2_5_polls_a_sync_child_every_half_second",
        _U + "test_sfn_tasks.py::test_patched_a_sync_task_learns_its_childs_end_without_sleeping",
    ),
    "compact-items": (
        _U + "test_compact_items.py::test_unpatched_moto_5_2_5_holds_an_item_as_an_object_per_attribute",
        _U + "test_compact_items.py::test_patched_answers_every_request_as_moto_does",
        _U + "test_compact_items.py::test_patched_holds_a_tables_items_deflated_with_the_tables_dictionary",
        _U + "test_compact_items.py::test_patched_holds_a_string_key_as_its_string_and_a_number_key_as_moto_does",
    ),
    "untracked-models": (
        _U + "test_model_tracking.py::test_unpatched_moto_5_2_5_tracks_every_item_version_an_update_replaced",
    ),
    "shared-history-values": (
        _U + "test_kept_executions.py::test_unpatched_moto_5_2_5_keeps_a_copy_of_the_same_text_in_each_event",
        _U + "test_kept_executions.py::test_patched_equal_texts_are_one_object_and_the_history_answers_the_same",
    ),
    "ended-environments": (
        _U + "test_kept_executions.py::test_unpatched_moto_5_2_5_keeps_a_succeeded_executions_whole_environment",
        _U + "test_kept_executions.py::test_patched_a_succeeded_execution_keeps_its_history_and_output_only",
    ),
    "thread-list": (_U + "test_executions.py::test_unpatched_moto_5_2_5_keeps_every_interpreter_thread",),
    "parse-cache": (_U + "test_parse_cache.py::test_unpatched_moto_5_2_5_parses_the_definition_for_every_execution",),
    "jsonpath-cache": (_HK + "test_server_speedups.py::test_without_the_speedup_jsonpath_is_parsed_every_time",),
    "execution-index": (
        "tests/unit/test_execution_index.py::test_unpatched_moto_5_2_5_walks_every_kept_execution_to_find_one",
    ),
    "condition-cache": (
        _SP + "test_dynamodb_speedups.py::test_unpatched_moto_5_2_5_parses_a_condition_on_every_request",
    ),
    "item-size": (_SP + "test_dynamodb_speedups.py::test_unpatched_moto_5_2_5_measures_an_item_in_quadratic_time",),
    "update-expression-cache": (
        _U
        + "speedups/test_dynamodb_speedups.py::test_unpatched_moto_5_2_5_parses_an_update_expression_twice_per_request",
    ),
    "validator-copy": (
        _SP + "test_dynamodb_speedups.py::test_unpatched_moto_5_2_5_deep_copies_the_update_tree_in_python",
    ),
    "tree-walk": (
        _SP + "test_dynamodb_speedups.py::test_unpatched_moto_5_2_5_asks_a_passs_node_classes_for_every_node",
    ),
    "update-validation-cache": (
        _SP + "test_dynamodb_speedups.py::test_unpatched_moto_5_2_5_checks_an_update_trees_own_rules_on_every_request",
    ),
    "action-lookup": (
        _SP + "test_dispatch_speedups.py::test_unpatched_moto_5_2_5_lists_the_handler_methods_per_request",
    ),
    "module-list-cache": (
        _HK + "test_server_speedups.py::test_without_the_speedup_the_server_lists_its_modules_per_request",
    ),
    "one-model-loader": (
        _SP + "test_dispatch_speedups.py::test_unpatched_moto_5_2_5_lists_the_service_folders_per_model",
    ),
    "regions-data-loader": (
        _SP + "test_dispatch_speedups.py::test_unpatched_moto_5_2_5_reads_the_model_again_for_a_backends_regions",
    ),
    "random-strings": (
        _SP + "test_dispatch_speedups.py::test_unpatched_moto_5_2_5_draws_a_request_id_a_choice_a_character",
    ),
    "serializer-keys": (
        _SP + "test_serialize_speedups.py::test_unpatched_moto_5_2_5_probes_every_member_of_every_event_for_its_key",
    ),
    "iso-timestamps": (
        _SP + "test_serialize_speedups.py::test_unpatched_moto_5_2_5_parses_each_timestamp_with_dateutil",
    ),
    "json-parse": (_SP + "test_serialize_speedups.py::test_unpatched_moto_5_2_5_looks_up_a_handler_for_every_value",),
    "lazy-failure-logs": (
        _HK + "test_server_speedups.py::test_without_the_speedup_a_failing_state_builds_reprs_for_nothing",
    ),
    "json-copy": (
        _SP + "test_interpreter_speedups.py::test_unpatched_moto_5_2_5_deep_copies_the_state_data_on_every_read",
    ),
    "program-state-copy": (
        _SP + "test_interpreter_speedups.py::test_unpatched_moto_5_2_5_copies_the_program_state_through_reduce_ex",
    ),
    "inline-states": (
        _SP + "test_interpreter_speedups.py::test_unpatched_moto_5_2_5_starts_a_thread_per_task_state_and_per_program",
    ),
    "in-process-clients": (
        _HK + "test_clients.py::test_without_the_speedup_each_task_builds_a_client",
        _HK + "test_clients.py::test_without_the_speedup_interpreter_clients_call_moto_port",
    ),
    "keep-alive": (_HK + "test_server_speedups.py::test_requests_share_one_connection_with_the_answers_of_moto",),
    "request-environ": (_HK + "test_server_speedups.py::test_unpatched_moto_5_2_5_builds_an_environ_per_request",),
    "request-headers": (
        _HK + "test_server_speedups.py::test_unpatched_python_parses_request_headers_with_the_email_parser",
    ),
    "access-log": (_HK + "test_server_speedups.py::test_unpatched_werkzeug_formats_an_access_log_line_it_then_drops",),
    "lambda-invoke": (_HK + "test_lambda_invoke.py::test_without_the_hook_moto_only_echoes_the_request",),
    "dynamodb-task": (_HK + "test_tasks.py::test_without_the_hook_the_dynamodb_call_is_not_throttled",),
    "lambda-task": (_HK + "test_lambda_invoke.py::test_without_the_hook_a_gate_never_sees_a_lambda_request",),
    "sfn-task": (
        _HK + "test_sfn_task.py::test_without_the_hook_a_gate_never_sees_a_start_execution_task",
        _HK + "test_sfn_task.py::test_without_the_hook_a_start_is_never_refused",
    ),
    "execution-end": (_HK + "test_execution_end.py::test_without_the_hook_execution_done_is_never_set",),
    "events-targets": (_HK + "test_events_targets.py::test_without_the_hook_a_state_machine_target_fails_put_events",),
    "source-writes": (_HK + "test_source_writes.py::test_without_the_hook_no_write_is_seen",),
    "mock-config": ("tests/functional/test_mock_config.py::test_without_the_hook_a_test_case_arn_is_rejected",),
    "task-permissions": ("tests/functional/test_permissions.py::test_without_the_hook_a_task_runs_whatever_its_role",),
}
