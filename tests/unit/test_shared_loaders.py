"""One botocore data loader per search path for a process (``forkserver.share_botocore_loaders``): what the fork
server gives its Lambda workers and the root conftest.py the test processes."""

from __future__ import annotations

from pathlib import Path

import boto3
import botocore.session
import pytest

from idemflow.engine.services.lambda_ import forkserver

pytestmark = pytest.mark.unit


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> object:
    # What the process had (the root conftest's sharing) comes back after the test.
    monkeypatch.setattr(botocore.session, "create_loader", botocore.session.create_loader)
    monkeypatch.delenv("AWS_DATA_PATH", raising=False)
    return forkserver.share_botocore_loaders()


def loader_of(session: boto3.session.Session) -> object:
    return session._session.get_component("data_loader")


def test_sessions_share_the_default_paths_loader_and_each_path_is_searched_once(shared: object) -> None:
    sessions = [boto3.session.Session() for _ in range(5)]

    assert all(loader_of(s) is shared for s in sessions)
    paths = shared.search_paths  # type: ignore[attr-defined]
    # Each boto3 Session appends boto3's data folder to its loader: shared, it is there once, not five times.
    assert len(paths) == len(set(paths))
    assert any(p.endswith("boto3/data") for p in paths)
    assert sessions[-1].client("dynamodb", region_name="us-east-1").meta.service_model.service_name == "dynamodb"


def test_a_session_with_another_data_path_gets_a_loader_of_its_own(
    shared: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    other = loader_of(boto3.session.Session())

    assert other is not shared
    assert str(tmp_path) in other.search_paths  # type: ignore[attr-defined]
    assert loader_of(boto3.session.Session()) is other
