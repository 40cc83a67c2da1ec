"""The engine's changes to moto 5.2.5, one module per concern; ``idemflow/engine/registry.py`` lists,
installs and removes them (each module's ``install_<name>`` functions are its changes).

Fixes and what the engine needs: ``dynamodb`` (atomic writes, a DynamoDB task's error names), ``kinesis``
(a shard read and written by one thread at a time), ``executions`` (names, output, start time, threads),
``sync`` (StartSyncExecution), ``clock`` (waits and timestamps), ``payload`` (payload sizes), ``errors``
(States.Runtime), ``intrinsics`` (States.JsonToString). Speedups: ``parse_cache``, ``dynamodb_speedups``,
``dispatch_speedups``, ``logs``, ``clients`` (which also holds the in-process dispatch the engine uses).
Hooks: ``lambda_invoke``, ``tasks`` (faults and gates), ``execution_end``, ``mock_config``.
"""
