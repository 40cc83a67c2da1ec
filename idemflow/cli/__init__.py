"""``idemflow``: run the idempotent workflow locally, serve it, or drive a deployed one.

``run``, ``serve`` and ``demo`` deploy ``template.yaml`` into the embedded engine (no AWS account, no
Docker); ``start``, ``record`` and ``history`` talk to any endpoint: AWS, Step Functions Local, or
``idemflow serve``. Expected errors are one line on stderr and exit status 2 (usage, input) or 1
(failed executions, runtime errors).

The modules: :mod:`~idemflow.cli.app` (``main``), :mod:`~idemflow.cli.parser` (the arguments),
:mod:`~idemflow.cli.inputs` (their checks), :mod:`~idemflow.cli.commands` and :mod:`~idemflow.cli.demo`
(what each command does), :mod:`~idemflow.cli.embedded` and :mod:`~idemflow.cli.endpoint` (the engine,
or a remote endpoint), :mod:`~idemflow.cli.output` (what is printed), :mod:`~idemflow.cli.errors`.
"""

from idemflow.cli.app import console, main
from idemflow.cli.errors import CliError
from idemflow.cli.inputs import sample_payload
from idemflow.cli.parser import build_parser

__all__ = ["CliError", "build_parser", "console", "main", "sample_payload"]
