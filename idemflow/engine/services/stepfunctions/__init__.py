"""Step Functions: the state machines and their executions (``service``), and every change to moto's
interpreter: executions and their clock, StartSyncExecution, redrive, payload sizes, errors, intrinsics, the
optimized integrations' tasks, mocked service integrations (``mock_config``, ``mocked_starts``) and its speedups.
"""
