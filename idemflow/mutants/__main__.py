"""``python -m idemflow.mutants`` (``make mutants``): the campaign over the project in the current directory.

What it mutates and runs is the project's: the definition is its template's ``DefinitionUri`` (the
``template.yaml`` here), the test selection and the file explaining equivalent mutants are
``[tool.idemflow.mutants]`` in its ``pyproject.toml``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from idemflow.mutants.campaign import (
    DEFAULT_JOBS,
    DEFAULT_TIMEOUT,
    Verdict,
    load_equivalent,
    markdown_report,
    report_line,
    run_campaign,
    stale_entries,
    summary_line,
)
from idemflow.mutants.config import MutantsConfig, load_config
from idemflow.mutants.errors import MutantsError
from idemflow.mutants.generate import generate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m idemflow.mutants",
        description="Delete each condition clause, Catch, Retry and Choice rule of the definition, one at a "
        "time, and run the fast tests against each mutant.",
    )
    parser.add_argument(
        "--tests", nargs="+", metavar="TEST", help="pytest selection (default: [tool.idemflow.mutants] tests)"
    )
    parser.add_argument(
        "-k",
        "--only",
        metavar="PATTERN",
        action="append",
        help="only the mutants whose id contains PATTERN (repeatable: any of them)",
    )
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help="mutants run in parallel (default 2)")
    parser.add_argument("--list", action="store_true", help="print the mutants' ids and descriptions, run nothing")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS", help="per mutant (default 600)"
    )
    parser.add_argument("--report", type=Path, metavar="PATH", help="also write the report as Markdown")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """0 when every surviving mutant is explained, 1 otherwise, 2 when the campaign could not run."""
    args = build_parser().parse_args(argv)
    repo = Path.cwd()
    try:
        if args.jobs < 1 or args.timeout <= 0:
            raise MutantsError("--jobs must be at least 1 and --timeout positive")
        try:
            config: MutantsConfig = load_config(repo)
        except ValueError as exc:
            raise MutantsError(str(exc)) from exc
        tests = args.tests or list(config.tests)
        original = json.loads((repo / config.definition).read_text())
        generation = generate(original)
        selected = [m for m in generation.mutants if args.only is None or any(p in m.id for p in args.only)]
        if not selected:
            raise MutantsError(f"no mutant id contains any of {args.only!r} (see --list)")
        if args.list:
            for mutant in selected:
                print(f"{mutant.id}: {mutant.description}")
            for site in generation.not_mutable:
                print(f"NOT MUTABLE {site.id}: {site.reason}")
            return 0
        python = Path(sys.executable)  # the project's environment, which runs this module (make mutants)
        equivalent = load_equivalent(repo / config.equivalent)
        outcomes = run_campaign(
            repo, config.definition, python, original, selected, equivalent, tests, args.jobs, args.timeout
        )
    except MutantsError as exc:
        print(f"mutants: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mutants: interrupted", file=sys.stderr)
        return 130
    warnings = stale_entries(equivalent, {m.id for m in generation.mutants}, outcomes, config.equivalent)
    for outcome in outcomes:
        print(report_line(outcome))
    for site in generation.not_mutable:
        print(f"NOT MUTABLE {site.id}: {site.reason}")
    for warning in warnings:
        print(warning)
    print(summary_line(outcomes))
    if args.report is not None:
        args.report.write_text(markdown_report(outcomes, generation.not_mutable, warnings, tests, config.definition))
    unexplained = [o for o in outcomes if o.verdict in (Verdict.SURVIVED, Verdict.ERROR)]
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
