"""Reaching a deployed workflow for ``start``, ``record`` and ``history``: boto3 clients and stack outputs.

Any endpoint works: AWS (the usual credentials and region), Step Functions Local, or ``idemflow serve``.
"""

from __future__ import annotations

import argparse
from typing import Any

from idemflow import client
from idemflow.cli import collector
from idemflow.cli.errors import EXIT_USAGE, CliError


def clients(args: argparse.Namespace, *services: str) -> list[Any]:
    """boto3 clients for --endpoint-url/--region, or AWS's defaults without them.

    With --endpoint-url, the usual credentials are used when configured (environment, profile), else
    dummy ones (local endpoints accept any); the EC2 instance metadata service is not asked, and the
    region defaults to us-east-1 (``idemflow serve``'s).
    """
    import boto3
    import botocore.session
    from botocore.config import Config

    core = botocore.session.Session()
    if args.endpoint_url:
        core.get_component("credential_provider").remove("iam-role")
        if core.get_credentials() is None:
            core.set_credentials("local", "local")
    session = boto3.session.Session(botocore_session=core, region_name=args.region)
    region = session.region_name or ("us-east-1" if args.endpoint_url else None)
    if region is None:
        raise CliError("no AWS region: pass --region or set AWS_REGION", EXIT_USAGE)
    # A local endpoint serves every operation on one host: no "sync-" prefix for StartSyncExecution.
    config = Config(inject_host_prefix=not args.endpoint_url, retries={"mode": "standard", "max_attempts": 3})
    made = [session.client(s, endpoint_url=args.endpoint_url, region_name=region, config=config) for s in services]
    collector.release()  # the console script's imports and clients are made
    return made


def given_or_stack_output(value: str | None, option: str, cfn: Any, stack_name: str | None, output: str) -> str:
    """``value`` (given as ``option``), else the stack's output ``output`` (--stack-name)."""
    if value:
        return value
    if not stack_name:
        raise CliError(f"pass {option}, or --stack-name to read the stack's output {output}", EXIT_USAGE)
    try:
        return client.stack_output(cfn, stack_name, output)
    except ValueError as exc:
        raise CliError(str(exc)) from None
