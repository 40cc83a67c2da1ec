"""One botocore data loader for the sessions of the engine's process: its own and moto's.

botocore gives each session a data loader of its own, and a loader keeps what it reads (the endpoints, each
service's model) for its session only. A process that started an engine read the DynamoDB model three times
(the engine's clients, moto's lookup of a backend's regions, moto's request parsing with its own extras) and the
endpoints twice: reading them was the largest part of a first start. A loader only reads files and keeps what it read,
so the sessions that share one get the same answers; a session whose data path differs (``AWS_DATA_PATH``, its
``data_path``) gets the loader of that path. moto's request parsing keeps its own loader: it adds moto's extras
to what it reads.
"""

from __future__ import annotations

import functools
from typing import Any

import botocore.loaders
import botocore.session


def sharing_data(session: botocore.session.Session) -> botocore.session.Session:
    """``session``, reading its data through the process's loader for its data path: given before it read any."""
    session.register_component("data_loader", _loader(session.get_config_variable("data_path")))
    return session


@functools.cache
def _loader(data_path: str | None) -> Any:
    # The name botocore's sessions call to make theirs, where there is one (the tests' conftest makes it share one
    # loader across their sessions), else botocore's public one.
    create = getattr(botocore.session, "create_loader", botocore.loaders.create_loader)
    return create(data_path)
