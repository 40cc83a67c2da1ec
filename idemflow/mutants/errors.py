"""The mutation campaign's exceptions (``make mutants``), each said in one line."""

from __future__ import annotations


class MutantsConfigError(ValueError):
    """The project does not say what to mutate or run; the message says what to add."""


class MutantsError(Exception):
    """A reason to stop before or instead of the campaign, said in one line."""
