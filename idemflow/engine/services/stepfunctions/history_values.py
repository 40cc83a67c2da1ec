"""One copy of each value an execution's history repeats (``shared-history-values``, an engine change).

moto's interpreter writes every history event's details as it is given them: each state's input and output
as a JSON text of its own, though one state's output is the text the next state's ``StateEntered`` event
carries as its input, and a Task's result is again the state's output; and every ``inputDetails`` and
``outputDetails`` is a new ``{"truncated": false}``. A kept Standard execution holds its history for as long
as the engine keeps it, so each repeat is memory for every execution kept. The change makes an event's texts
the very objects an earlier event of the same execution holds when they are equal (it remembers the last few
texts of the execution: consecutive events are where the repeats are), its timestamp the previous event's
when they are the same millisecond, and its truncation details one shared, never-changed dict for each
value. The history's answers are the same, value for value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

#: How many of an execution's latest texts an event's texts are compared with.
RECENT: Final = 4
#: The texts worth sharing: short ones cost less than the comparison.
MIN_LENGTH: Final = 64
_TEXTS: Final = ("input", "output", "parameters")
_DETAILS: Final = ("inputDetails", "outputDetails")
_SHARED_DETAILS: Final[dict[bool, dict[str, bool]]] = {False: {"truncated": False}, True: {"truncated": True}}
_RECENT_ATTR: Final = "_idemflow_recent_texts"


def _shared(body: dict[str, Any], recent: list[str]) -> None:
    for field in _TEXTS:
        text = body.get(field)
        if not isinstance(text, str) or len(text) < MIN_LENGTH:
            continue
        for earlier in recent[1:]:
            if earlier == text:
                body[field] = earlier
                break
        else:
            recent.append(text)
            if len(recent) > RECENT + 1:
                del recent[1]
    for field in _DETAILS:
        details = body.get(field)
        if type(details) is dict and len(details) == 1 and type(details.get("truncated")) is bool:
            body[field] = _SHARED_DETAILS[details["truncated"]]


def install_shared_history_values(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager

    publish: Callable[..., None] = EventManager.__dict__["_publish_history_event"]

    @functools.wraps(publish)
    def _publish_history_event(self: Any, *args: Any, **kwargs: Any) -> None:
        recent = self.__dict__.setdefault(_RECENT_ATTR, [""])  # [the last timestamp, the latest texts...]
        details = kwargs.get("event_details")
        if isinstance(details, dict):
            for body in details.values():
                if isinstance(body, dict):
                    _shared(body, recent)
        timestamp = kwargs.get("timestamp")
        if isinstance(timestamp, str):  # events of one millisecond: one text
            if timestamp == recent[0]:
                kwargs["timestamp"] = recent[0]
            else:
                recent[0] = timestamp
        publish(self, *args, **kwargs)

    patch.set(EventManager, "_publish_history_event", _publish_history_event)
