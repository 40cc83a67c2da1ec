"""The key grammar (docs/contract.md, "Keys"; idemflow.contract.KEY_RULE) as the CLI and the client apply it
before anything starts: a key outside it is refused with the rule in the message, never changed into another."""

from __future__ import annotations

from typing import Any

import pytest

from idemflow import keys
from idemflow.contract import KEY_RULE, MAX_KEY_LENGTH

pytestmark = pytest.mark.unit

PAYLOAD = {"amount": 1}


@pytest.mark.parametrize(
    "key",
    ["k", "order-2026-0001", "k" * MAX_KEY_LENGTH, "a b", "commande-été-№7-🔑", '"quoted"', "x\u00a0y"],
)
def test_a_key_of_the_grammar_is_taken_as_it_is(key: str) -> None:
    assert keys.key_problem(key) is None
    keys.check_input(key, PAYLOAD)


@pytest.mark.parametrize(
    ("key", "why"),
    [
        (None, "must be a string"),
        (42, "must be a string"),
        ("", "is empty"),
        ("k" * (MAX_KEY_LENGTH + 1), f"{MAX_KEY_LENGTH + 1} characters long"),
        (" k", "whitespace at an end"),
        ("k ", "whitespace at an end"),
        ("\tk", "whitespace at an end"),
        ("k\u3000", "whitespace at an end"),
        ("a\nb", "control character"),
        ("a\x7fb", "control character"),
        ("a\x85b", "control character"),
    ],
)
def test_a_key_outside_the_grammar_is_refused_with_the_rule(key: Any, why: str) -> None:
    with pytest.raises(keys.IdempotencyKeyInvalidError) as refused:
        keys.check_input(key, PAYLOAD)
    assert why in str(refused.value) and KEY_RULE in str(refused.value)
