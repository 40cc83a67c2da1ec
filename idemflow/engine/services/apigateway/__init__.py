"""API Gateway REST APIs, in one place: the template's resources (:mod:`.models`), the request pipeline
(:mod:`.pipeline`), the mapping templates' VTL (:mod:`.vtl`), and the service that serves them on the
engine's endpoint (:mod:`.service`)."""
