"""One botocore data loader per data path for a process: the engine gives it to its own session and moto's
(:func:`sharing_data`), the fork server and the test processes to every session (``forkserver.share_botocore_loaders``).

botocore gives each session a data loader of its own, and a loader keeps what it reads (the endpoints, each
service's model) for its session only. A process that started an engine read the DynamoDB model three times
(the engine's clients, moto's lookup of a backend's regions, moto's request parsing with its own extras) and the
endpoints twice: reading them was the largest part of a first start. A loader only reads files and keeps what it
read, so the sessions that share one get the same answers; a session whose data path differs (``AWS_DATA_PATH``, its
``data_path``) gets the loader of that path. moto's request parsing keeps its own loader: it adds moto's extras
to what it reads.
"""

from __future__ import annotations

import functools

import botocore.loaders
import botocore.session


def sharing_data(session: botocore.session.Session) -> botocore.session.Session:
    """``session``, reading its data through the process's loader for its data path: given before it read any."""
    session.register_component("data_loader", loader(session.get_config_variable("data_path")))
    return session


@functools.cache
def loader(data_path: str | None = None) -> botocore.loaders.Loader:
    """The process's loader for ``data_path`` (botocore's search path string; None: the default path's)."""
    made = botocore.loaders.create_loader(data_path)
    made._search_paths = _SearchPaths(made.search_paths)
    return made


class _SearchPaths(list[str]):
    """A shared loader's search paths, each once: every boto3 Session appends boto3's data folder to its loader's
    (``Session._setup_loader``), which, shared, would grow by one entry a session for the process's life (a
    handler that makes a session per invocation, under ``serve``, for hours)."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)
