"""IAM: the roles the template declares (``service``)."""
