"""Parsed once, not per execution: the definition (``parse-cache``) and JSONPath expressions
(``jsonpath-cache``). Speedups: the same programs and paths, parsed once.

``parse-cache``: ExecutionWorker._get_evaluation_entrypoint runs the ANTLR parser on the definition for
every execution (about half of an execution's time), and CreateStateMachine once more to validate it. The
parsed program is reused, keyed by the definition text: the validation's parse serves every execution.
Checked safe to share between concurrent executions: every piece of per-execution state
lives in the Environment (env.heap, env.stack, frames), and the only attribute a component writes after
parsing is its lazily created ``heap_key`` (a random id used to key env.heap). Two executions creating
the same component's key at once could each store state under a different key (a retry counter lost,
say), so every key is created before the program is shared (_warm_heap_keys, ~4 ms once per
definition). Measured on a 10-state definition: parse 44 ms, deep copy of the parsed program 1.3 ms;
sharing costs nothing per execution, and since nothing else is written there is nothing a copy would
protect. The cache outlives the change: removed (an engine stopped), moto parses as before; installed
again (the next engine of the process), the programs parsed for the same texts serve again, where each
engine parsed the workflow's definition anew (0.6 s; 76 engines in one run of the suite).

``jsonpath-cache``: jsonpath_ng rebuilds its yacc parser on every ``parse()``, and the interpreter parses
each JSONPath (and each ResultPath) every time a state uses it. Both module functions are cached per
expression string (a parsed path is only read).
"""

from __future__ import annotations

import collections
import functools
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.registry import Patch

_MAX_CACHED_PROGRAMS: Final[int] = 64
MAX_CACHED_PATHS: Final[int] = 4096

_program_cache_lock = threading.Lock()
_program_cache: collections.OrderedDict[str, Any] = collections.OrderedDict()
_cache_stats = {"hits": 0, "misses": 0}


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
        program = AmazonStateLanguageParser.parse(definition)[0]
        _warm_heap_keys(program)
        _program_cache[definition] = program
        _cache_stats["misses"] += 1
        while len(_program_cache) > _MAX_CACHED_PROGRAMS:
            _program_cache.popitem(last=False)
        return program


def parse_cache_info() -> dict[str, int]:
    """Hits, misses and size of the definition cache (for tests and benchmarks)."""
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


def install_jsonpath_cache(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    for module in (json_path, result_path):
        patch.set(module, "parse", functools.lru_cache(maxsize=MAX_CACHED_PATHS)(module.parse))
