"""The user's cache folder for what every process would otherwise compute again from the same text.

A process that starts an engine (each pytest worker, ``idemflow run``, ``serve``, ``demo``) parses the same
definitions and runs the same templates through the SAM transform: both are functions of their text (and of a
pinned library's version), so each result is kept in a file named by the text's SHA-256, in a folder per
library version and format. Like ``__pycache__``, the folder is the user's own: only this code writes there.

Where: ``$IDEMFLOW_CACHE_DIR`` (empty: nothing is kept), else the user's cache folder (``$XDG_CACHE_HOME``,
else ``~/.cache``) + ``idemflow``. Files are written whole (a temporary file renamed), so concurrent processes
read either nothing or a complete file; a file that does not load is computed again and rewritten. A folder
keeps its most recently *used* files: one read is marked used (its time set to now), so the project's own
texts, written once and read by every process after, are not pushed out by the texts a run makes of its own
(a test's unique names, the checker's and the mutants' definitions).

A leaf: it imports nothing of idemflow, so the template reader and the engine both use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Final

CACHE_DIR_VARIABLE: Final = "IDEMFLOW_CACHE_DIR"


def cache_folder(*parts: str) -> Path | None:
    """The folder ``parts`` below the cache root, or None when nothing is kept (``IDEMFLOW_CACHE_DIR=``)."""
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured is not None:
        if not configured:
            return None
        root = Path(configured)
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "idemflow"
    return root.joinpath(*parts)


def cache_file(folder: Path | None, text: str, suffix: str) -> Path | None:
    """Where the result for ``text`` is kept in ``folder``: named by the text's SHA-256."""
    return None if folder is None else folder / f"{hashlib.sha256(text.encode()).hexdigest()}{suffix}"


def read_kept(path: Path | None) -> bytes | None:
    """The bytes kept at ``path`` (marked used), or None when there are none."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    with contextlib.suppress(OSError):  # a folder that cannot be written: only the order is lost
        os.utime(path)
    return data


def keep(path: Path | None, data: bytes, max_kept: int) -> None:
    """Write ``data`` to ``path`` whole, then keep the folder's ``max_kept`` most recently used files of the same
    suffix. A folder that cannot be written only means the next process computes again."""
    if path is None:
        return
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
        temporary = None
        kept = sorted(path.parent.glob(f"*{path.suffix}"), key=lambda f: f.stat().st_mtime_ns, reverse=True)
        for old in kept[max_kept:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
