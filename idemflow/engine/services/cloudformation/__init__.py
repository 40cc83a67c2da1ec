"""CloudFormation: the stack and its nested applications as the engine deployed them (``service``)."""
