"""SNS: the topics and subscriptions (``service``) and deliveries to SQS as AWS makes them (``delivery``)."""
