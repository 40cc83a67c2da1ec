"""CloudWatch Logs: the log groups the template declares (``service``)."""
