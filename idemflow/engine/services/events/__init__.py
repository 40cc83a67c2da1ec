"""EventBridge: buses and rules (``service``) and the rules' state machine targets (``targets``)."""
