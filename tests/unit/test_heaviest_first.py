"""tests/heaviest_first.py: the order pytest-xdist's workers are given the test files in."""

from __future__ import annotations

from tests.heaviest_first import order

NODEIDS = [
    "tests/unit/test_a.py::test_1",
    "tests/unit/test_a.py::test_2",
    "tests/explore/test_b.py::test_1",
    "tests/functional/test_c.py::test_1[x]",
    "tests/functional/test_c.py::test_1[y]",
    "tests/unit/test_d.py::test_1",
]


def ordered(seconds: dict[str, float]) -> list[str]:
    return [NODEIDS[i] for i in order(NODEIDS, seconds)]


def test_files_go_longest_first_each_with_its_tests_in_their_order() -> None:
    seconds = {"tests/unit/test_a.py": 0.5, "tests/explore/test_b.py": 25.0, "tests/functional/test_c.py": 9.0}
    seconds["tests/unit/test_d.py"] = 0.5  # as long as test_a.py: after it, as collected

    assert ordered(seconds) == [NODEIDS[2], NODEIDS[3], NODEIDS[4], NODEIDS[0], NODEIDS[1], NODEIDS[5]]


def test_a_file_the_last_run_did_not_time_comes_first() -> None:
    seconds = {"tests/unit/test_a.py": 0.5, "tests/explore/test_b.py": 25.0, "tests/unit/test_d.py": 1.0}

    assert ordered(seconds)[:3] == [NODEIDS[3], NODEIDS[4], NODEIDS[2]]


def test_without_durations_the_order_is_the_collected_one() -> None:
    assert ordered({}) == NODEIDS
