"""Parsed once, not per execution: the definition (``parse-cache``) and JSONPath expressions
(``jsonpath-cache``). Speedups: the same programs and paths, parsed once.

``parse-cache``: ExecutionWorker._get_evaluation_entrypoint runs the ANTLR parser on the definition for
every execution (about half of an execution's time), and CreateStateMachine once more to validate it. The
parsed program is reused, keyed by the definition text: the validation's parse serves every execution.
Checked safe to share between concurrent executions: every piece of per-execution state
lives in the Environment (env.heap, env.stack, frames), and the only attribute a component writes after
parsing is its lazily created ``heap_key`` (a random id used to key env.heap). Two executions creating
the same component's key at once could each store state under a different key (a retry counter lost,
say), so every key is created before the program is shared (_warm_heap_keys, once per definition).
Sharing costs nothing per execution, and since nothing else is written there is nothing a copy would
protect. The cache outlives the change: removed (an engine stopped), moto parses as before; installed
again (the next engine of the process), the programs parsed for the same texts serve again, so that an
engine does not parse the workflow's definition anew.

The programs are also kept on disk, by the same change: every process that starts an engine (each pytest
worker, ``idemflow run``, ``serve``, ``demo``) would parse the same definitions again. A program is a
tree of moto's components: pickled once parsed (heap keys made), it loads much faster than it parses. A file is named
by the definition text's SHA-256, in a folder per moto version, Python version and format
(:func:`program_cache_dir`): moto's parser is pinned, so a program is a function of the text. A file that
does not load (cut short, another format) is parsed again and rewritten; files are written whole
(a temporary file renamed), so concurrent processes read either nothing or a complete program. Like
``__pycache__``, the folder is the user's own: only this code writes there.

``jsonpath-cache``: jsonpath_ng rebuilds its yacc parser on every ``parse()``, and the interpreter parses
each JSONPath (and each ResultPath) every time a state uses it. Both module functions are cached per
expression string (a parsed path is only read). Like the programs, the parsed paths outlive the change: each
engine of a process installs it again, and finds the paths the engines before it parsed.
"""

from __future__ import annotations

import collections
import functools
import importlib.metadata
import pickle
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from idemflow import disk_cache

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

_MAX_CACHED_PROGRAMS: Final[int] = 64
MAX_CACHED_PATHS: Final[int] = 4096

_program_cache_lock = threading.Lock()
_program_cache: collections.OrderedDict[str, Any] = collections.OrderedDict()
_cache_stats = {"hits": 0, "misses": 0, "loaded": 0}

#: Where programs are kept on disk: the user's cache folder (:mod:`idemflow.disk_cache`), ``asl-programs``.
CACHE_DIR_VARIABLE: Final = disk_cache.CACHE_DIR_VARIABLE
MAX_KEPT_PROGRAMS: Final = 256
_PROGRAM_FORMAT: Final = 1
"""Bumped when what is pickled changes (the warmed heap keys, say)."""


def program_cache_dir() -> Path | None:
    """The folder of this process's parsed programs on disk, or None when they are not kept there."""
    python = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    # The installed moto: the registry has checked it is the pinned one before any program is parsed.
    version = f"moto-{importlib.metadata.version('moto')}-{python}-v{_PROGRAM_FORMAT}"
    return disk_cache.cache_folder("asl-programs", version)


def _program_file(definition: str) -> Path | None:
    return disk_cache.cache_file(program_cache_dir(), definition, ".pickle")


def _load_program(path: Path | None) -> Any:
    """The program kept at ``path``; None when there is none, or it does not load."""
    data = disk_cache.read_kept(path)
    if data is None:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # cut short or from another format: parsed again and rewritten
        return None


def _keep_program(path: Path | None, program: Any) -> None:
    """Keep ``program`` at ``path``, and the folder's :data:`MAX_KEPT_PROGRAMS` most recently used (the checker,
    the mutants and tests make definitions of their own)."""
    try:
        data = pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, RecursionError):
        return
    disk_cache.keep(path, data, MAX_KEPT_PROGRAMS)


def _iter_components(root: Any) -> Iterator[Any]:
    seen: set[int] = set()
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, list | tuple | set | frozenset):
            todo.extend(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif type(obj).__module__.startswith("moto.stepfunctions.parser.") and hasattr(obj, "__dict__"):
            yield obj
            todo.extend(vars(obj).values())


def _warm_heap_keys(program: Any) -> None:
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    for component in _iter_components(program):
        if isinstance(component, EvalComponent):
            _ = component.heap_key


def _cached_program(definition: str) -> Any:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    with _program_cache_lock:
        program = _program_cache.get(definition)
        if program is not None:
            _program_cache.move_to_end(definition)
            _cache_stats["hits"] += 1
            return program
        # Parsing under the lock: a concurrent first run of the same definition waits for this
        # parse instead of repeating it (threads would not parse faster side by side anyway).
        path = _program_file(definition)
        program = _load_program(path)
        if program is not None:
            _cache_stats["loaded"] += 1
        else:
            program = AmazonStateLanguageParser.parse(definition)[0]
            _warm_heap_keys(program)  # before it is kept: every process that loads it shares the keys
            _keep_program(path, program)
        _program_cache[definition] = program
        _cache_stats["misses"] += 1
        while len(_program_cache) > _MAX_CACHED_PROGRAMS:
            _program_cache.popitem(last=False)
        return program


def parse_cache_info() -> dict[str, int]:
    """Hits, misses (of the process's cache: parsed, or ``loaded`` from disk) and size of the definition
    cache (for tests and benchmarks)."""
    with _program_cache_lock:
        return {**_cache_stats, "size": len(_program_cache)}


def _get_evaluation_entrypoint(self: Any) -> Any:
    return _cached_program(self._evaluation_details.state_machine_details.definition)


def install_parse_cache(patch: Patch) -> None:
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    validate = StepFunctionsParserBackend._validate_definition

    def _validate_definition(definition: str) -> None:
        # CreateStateMachine parses to validate: the program it parsed serves the executions too. A
        # definition that does not parse is validated again by moto, which raises its own error for it.
        try:
            _cached_program(definition)
        except Exception:
            validate(definition)

    patch.set(ExecutionWorker, "_get_evaluation_entrypoint", _get_evaluation_entrypoint)
    patch.set(StepFunctionsParserBackend, "_validate_definition", staticmethod(_validate_definition))


_path_parsers: dict[Any, Any] = {}
"""Each module's own ``parse`` (what moto imported), cached: kept by the function, for every install."""


def _cached_parser(parse: Any) -> Any:
    cached = _path_parsers.get(parse)
    if cached is None:
        cached = _path_parsers[parse] = functools.lru_cache(maxsize=MAX_CACHED_PATHS)(parse)
    return cached


def install_jsonpath_cache(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    for module in (json_path, result_path):
        patch.set(module, "parse", _cached_parser(module.parse))
