"""The exhaustive strategy's reduction: fewer schedules, the same states.

``Checker.exhaustive`` skips the orders that only swap two independent requests of an order already
explored (sleep sets): a clock invocation with anything, two reads with each other. Its soundness is what
these tests show on the real definition: the reduced enumeration ends in every state every order ends in,
and finds the violations every order finds; a definition that breaks the reduction's one assumption about
the clock is refused instead of explored.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine import Engine
from idemflow.explore import BASE_PARAMETERS, Checker, ReductionAssumptionError, Settings, load_targets
from idemflow.explore import checker as checker_module
from idemflow.explore.__main__ import main
from idemflow.mutants.config import load_config
from tests.paths import TEMPLATE_PATH

from .test_interleavings import mutant

TARGET = load_targets()["project"]


@pytest.fixture(scope="module")
def light_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's template nested in one whose side effect returns at once: the same definition, the
    same clock and the same requests, at half the cost of a schedule of the charge function (the comparison
    enumerates every order)."""
    directory = tmp_path_factory.mktemp("light")
    (directory / "fn").mkdir()
    (directory / "fn" / "app.py").write_text("def handler(event, context):\n    return {'ok': True}\n")
    template = directory / "template.yaml"
    template.write_text(
        textwrap.dedent(
            f"""\
            Transform: AWS::Serverless-2016-10-31
            Parameters:
              IdempotencyWindowSeconds: {{Type: String}}
              InProgressPollSeconds: {{Type: String}}
              InProgressMaxPolls: {{Type: String}}
            Resources:
              Effect:
                Type: AWS::Serverless::Function
                Properties: {{CodeUri: fn/, Handler: app.handler, Runtime: python3.12, Timeout: 10}}
              Workflow:
                Type: AWS::Serverless::Application
                Properties:
                  Location: {os.path.relpath(TEMPLATE_PATH, directory)}
                  Parameters:
                    SideEffectFunctionArn: !GetAtt Effect.Arn
                    IdempotencyWindowSeconds: !Ref IdempotencyWindowSeconds
                    InProgressPollSeconds: !Ref InProgressPollSeconds
                    InProgressMaxPolls: !Ref InProgressMaxPolls
            """
        )
    )
    return template


def end_states(monkeypatch: pytest.MonkeyPatch, checker: Checker, reduced: bool) -> tuple[int, set[Any], set[str]]:
    """The schedules explored, and what each ended in: every execution's outcome, the record's status and
    owner, the effects, the record lifetimes, when each execution ended, the violations."""
    states: set[Any] = set()
    final_checks = checker_module._Schedule._final_checks

    def noting(schedule: Any) -> None:
        final_checks(schedule)
        record = schedule.record or {}
        owner = record.get("owner")
        states.add(
            (
                tuple(sorted(schedule.out.outcomes.items())),
                record.get("status"),
                schedule.arns.index(owner) if owner in schedule.arns else owner,
                checker.settings.effects(checker.engine, schedule.key) if checker.settings.effects else None,
                schedule.lifetime,
                schedule.invoked_lifetimes,
                tuple(sorted(schedule.ended_in.items())),
                tuple(sorted(v.invariant for v in schedule.out.violations)),
            )
        )

    monkeypatch.setattr(checker_module._Schedule, "_final_checks", noting)
    report = checker.exhaustive(reduced=reduced)
    monkeypatch.setattr(checker_module._Schedule, "_final_checks", final_checks)
    assert report.complete
    return report.schedules, states, set(report.violations)


def both_ways(
    monkeypatch: pytest.MonkeyPatch, template: Path, definition: str
) -> dict[bool, tuple[int, set[Any], set[str]]]:
    overrides = {**BASE_PARAMETERS, "InProgressMaxPolls": "0"}
    with Engine(template, wait_time_scale=0, parameter_overrides=overrides, definition_text=definition) as engine:
        checker = Checker(engine, Settings(executions=2, events=(), payload={"orderId": "o-1"}))
        try:
            return {reduced: end_states(monkeypatch, checker, reduced) for reduced in (True, False)}
        finally:
            checker.close()


def test_the_reduced_enumeration_ends_in_every_state_and_finds_every_violation_every_order_does(
    monkeypatch: pytest.MonkeyPatch, light_template: Path
) -> None:
    # A broken protocol, so that the states compared include violations: an acquisition that may replace a
    # COMPLETED record whose expiry has not passed. (The unbroken definition with every single event, compared
    # the same way once by hand: the same 24 end states, 526 schedules against 3,880; docs/proof.md.)
    found = both_ways(monkeypatch, light_template, mutant("AcquireLock.ConditionExpression#1.1"))

    (reduced, reduced_states, reduced_violations), (every, every_states, every_violations) = found[True], found[False]
    assert reduced_states == every_states
    assert len(every_states) > 1  # more than one way for the race to end: the comparison says something
    assert reduced_violations == every_violations
    assert "completed record changed" in reduced_violations, reduced_violations
    assert reduced * 4 < every, (reduced, every)


def clock_ends_the_execution() -> str:
    """The real definition, but for ComputeLease, which ends the execution in success instead of acquiring."""
    config = load_config(Path.cwd())
    definition = json.loads((config.repo / config.definition).read_text())
    definition["States"]["ComputeLease"]["Next"] = "Ended"
    definition["States"]["Ended"] = {"Type": "Succeed"}
    return json.dumps(definition)


def test_a_definition_whose_clock_ends_the_execution_is_refused_not_explored() -> None:
    with Engine(
        TARGET.template,
        wait_time_scale=0,
        parameter_overrides={**BASE_PARAMETERS, "InProgressMaxPolls": "0"},
        definition_text=clock_ends_the_execution(),
    ) as engine:
        checker = Checker(engine, Settings(executions=2, events=(), payload=TARGET.payload))
        try:
            with pytest.raises(ReductionAssumptionError, match="A succeeded right after its clock invocation"):
                checker.exhaustive()
            # The random strategy makes no such assumption: it runs the same definition.
            assert checker.sample(3, seed=1).schedules == 3
        finally:
            checker.close()


def test_the_command_says_why_it_refuses_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    definition = tmp_path / "clock-ends.asl.json"
    definition.write_text(clock_ends_the_execution())

    code = main(["--target", "project", "--only", "fail-fast", "--definition", str(definition), "--seed", "1"])

    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().count("\n") == 0 and "succeeded right after its clock invocation" in err, err
