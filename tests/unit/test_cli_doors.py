"""The doors' descriptions (idemflow/cli/doors.py): what serve, the demo and the costs read of each."""

from __future__ import annotations

from idemflow.cli import demo, doors


def test_each_door_is_described_once_with_its_opening_parameter() -> None:
    names = [door.name for door in doors.DOORS]
    assert len(set(names)) == len(names)
    assert all(door.parameter in door.opens for door in doors.DOORS if door.opens)
    assert [door.cost for door in doors.DOORS if door.cost] == [
        "queue message",
        "topic message",
        "event",
        "stream record",
        "table item",
    ]


def test_the_demo_opens_the_doors_it_shows_as_their_descriptions_say() -> None:
    assert [door.name for door in demo.DEMOED] == ["HTTP", "queue", "topic"]
    assert demo.DOORS_OVERRIDES == {
        "InProgressPollSeconds": "1",
        "InProgressMaxPolls": "30",
        "HttpFrontDoor": "true",
        "WorkflowType": "EXPRESS",
        "QueueFrontDoor": "true",
        "QueueVisibilityTimeout": "0",
        "TopicFrontDoor": "true",
    }
    assert demo.STEPS == 10


def test_a_keys_deliveries_are_shown_the_run_first_whatever_order_they_listed_in() -> None:
    run = {"sourceId": "b", "replayed": False, "outcome": "COMPLETED"}
    replay = {"sourceId": "a", "replayed": True, "outcome": "COMPLETED"}
    assert doors.in_order([replay, run]) == doors.in_order([run, replay]) == [run, replay]
    again = {"sourceId": "0", "replayed": True, "outcome": "COMPLETED"}
    assert doors.in_order([replay, again, run]) == [run, again, replay]
