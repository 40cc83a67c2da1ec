"""S3: the buckets (``service``) and their events to EventBridge as AWS sends them (``event_notifications``)."""
