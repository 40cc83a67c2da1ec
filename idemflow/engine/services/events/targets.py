"""A rule's state machine targets go to the engine's EventBridge service (``events-targets``, a hook).

moto 5.2.5's EventBridge matches an event against each rule's pattern and delivers it to log groups,
archives, queues and buses; any other target, a state machine's included, raises NotImplementedError and
fails PutEvents. With the hook, moto still matches and still delivers to those targets; a rule's match is
also handed to the engine's receiver (:attr:`idemflow.engine.state.EngineState.event_receiver`: the events
service), which delivers to the state machine targets as EventBridge does. Nothing is attached: state
machine targets are skipped.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from idemflow.engine import state

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

STATE_MACHINE_ARN_PREFIX = "arn:aws:states:"


def install_events_targets(patch: Patch) -> None:
    from moto.events.models import Rule

    original = Rule.send_to_targets

    def send_to_targets(self: Any, original_event: Any, transform_input: bool = True) -> None:
        if not self.event_pattern.matches_event(original_event):
            return
        receiver = state.current().event_receiver
        if receiver is not None:
            receiver(self.name, original_event)
        others = [t for t in self.targets if not str(t.get("Arn", "")).startswith(STATE_MACHINE_ARN_PREFIX)]
        if others:  # every other target as moto delivers it
            clone = copy.copy(self)
            clone.targets = others
            original(clone, original_event, transform_input)

    patch.set(Rule, "send_to_targets", send_to_targets)
