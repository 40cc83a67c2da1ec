"""The charge example's tests that deploy the project's template (whose default side effect is the charge)
on the embedded engine, waits scaled to zero: the functional tests' engine, key and fault clean-up."""

from tests.functional.conftest import _clean_faults, engine, key

__all__ = ["_clean_faults", "engine", "key"]
