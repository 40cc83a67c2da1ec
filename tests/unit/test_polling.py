"""tests/polling.py: the one polling helper, with a deadline and a message that names what it waited for."""

from __future__ import annotations

import itertools

import pytest

from tests.polling import wait_until


def test_returns_the_first_true_value_without_waiting_longer() -> None:
    answers = iter([None, 0, "", {"status": "SUCCEEDED"}, "never asked"])

    assert wait_until(lambda: next(answers), timeout=5, what="the answer", interval=0.001) == {"status": "SUCCEEDED"}
    assert next(answers) == "never asked", "called again after a true value"


def test_names_what_it_waited_for_at_the_deadline() -> None:
    calls = itertools.count(1)

    with pytest.raises(AssertionError, match=r"^gave up waiting for the worker to exit after 0.02 s$"):
        wait_until(lambda: next(calls) < 0, timeout=0.02, what="the worker to exit", interval=0.001)
    assert next(calls) > 2, "polled more than once before giving up"


def test_a_zero_timeout_asks_once() -> None:
    calls = itertools.count(1)

    with pytest.raises(AssertionError, match="the record"):
        wait_until(lambda: next(calls) < 0, timeout=0, what="the record")
    assert next(calls) == 2


@pytest.mark.parametrize(("timeout", "interval"), [(-1, 0.01), (1, 0), (1, -0.5)])
def test_a_negative_timeout_or_a_non_positive_interval_is_refused(timeout: float, interval: float) -> None:
    with pytest.raises(ValueError, match="timeout must be >= 0 and interval > 0"):
        wait_until(lambda: True, timeout=timeout, what="nothing", interval=interval)
