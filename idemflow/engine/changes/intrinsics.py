"""States.JsonToString writes text as it is (``json-to-string``).

moto writes json.dumps(value, separators=(",", ":")): compact (as recorded on AWS: LocalStack's
AWS-validated v2/intrinsic_functions/test_json_manipulation.snapshot.json, {"Arg1": 1, "Arg2": []} ->
"{\\"Arg1\\":1,\\"Arg2\\":[]}"), but with Python's ensure_ascii, so "é" becomes the six characters \\u00e9.
No AWS recording of non-ASCII output was found. Step Functions serialises with a Java JSON library (its
States.Format writes an object Java's way, {Arg1=1, Arg2=[]}: test_generic.snapshot.json, test_format_2,
in the same folder), whose default writes non-ASCII characters as they are; the engine does the same,
and the client's length check (idemflow.keys.check_input) accepts only payloads that fit under both
readings.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idemflow.engine.registry import Patch


def _json_to_string(self: Any, env: Any) -> None:
    self.argument_list.eval(env=env)
    args = env.stack.pop()
    env.stack.append(json.dumps(args.pop(), separators=(",", ":"), ensure_ascii=False))


def install_json_to_string(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.intrinsic.function.statesfunction.json_manipulation import (
        json_to_string,
    )

    patch.set(json_to_string.JsonToString, "_eval_body", _json_to_string)
