"""API Gateway (REST API) mapping templates, rendered by a real Velocity engine.

The HTTP front door of ``template.yaml`` is an API Gateway REST API whose ``POST /requests`` method calls
Step Functions directly (an ``AWS`` integration): its request and response mapping templates are Velocity
(VTL) scripts in the template itself. This module renders those scripts as API Gateway does, with the
variables the developer guide documents for data transformations
(https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html):

- ``$input``: ``body`` (the raw payload; ``{}`` when it is empty), ``json(x)`` (a JSONPath result as JSON
  text), ``path(x)`` (a JSONPath result as an object), ``params()`` (path, querystring and header
  parameters) and ``params(x)`` (one of them, looked up in that order);
- ``$util``: ``escapeJavaScript``, ``parseJson``, ``urlEncode``, ``urlDecode``, ``base64Encode``,
  ``base64Decode`` (the developer guide's complete list);
- ``$context``: ``requestId``, ``stage``, ``httpMethod``, ``resourcePath``, ``path``, ``apiId``,
  ``accountId``, ``identity.*``, ``authorizer.*``, and the writable ``requestOverride.*`` and
  ``responseOverride.status`` / ``responseOverride.header.<name>``
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-override-request-response-parameters.html:
  an override is final, a second write of the same one is a 5XX, here :class:`OverrideAppliedTwice`).
  Overrides set by the request template are still set when the response template runs.
- ``$stageVariables``.

Velocity itself is ``airspeed-ext`` (LocalStack's fork of airspeed, kept close to AWS's VTL with
snapshot tests recorded on AWS). Each behaviour the door relies on is pinned by a conformance test that
cites its AWS source. JSONPath is the subset the door's templates use:
``$``, ``.name``, ``['name']`` and ``[index]``; anything else is an :class:`UnsupportedJsonPath`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote_plus

import airspeed  # type: ignore[import-untyped]
import airspeed.operators  # type: ignore[import-untyped]

# The errors a template can raise (in the engine's one errors module), named here for the template's callers.
from idemflow.engine.errors import InvalidJsonBody as InvalidJsonBody
from idemflow.engine.errors import InvalidStatusOverride as InvalidStatusOverride
from idemflow.engine.errors import MappingTemplateError as MappingTemplateError
from idemflow.engine.errors import OverrideAppliedTwice as OverrideAppliedTwice
from idemflow.engine.errors import UnsupportedJsonPath as UnsupportedJsonPath

# -- Values as VTL sees them ------------------------------------------------------------------------------


class VtlMap(dict[str, Any]):
    """A JSON object as ``$input.path`` and ``$util.parseJson`` return it: a Java Map, printed as
    ``{key=value, ...}``, with any list inside printed as JSON (LocalStack's AWS-validated snapshot
    tests/aws/services/apigateway/test_apigateway_common.snapshot.json,
    ``test_input_path_template_formatting``: ``{"foo": [{"nested": "bar"}]}`` prints
    ``{foo=[{"nested":"bar"}]}``)."""

    def __str__(self) -> str:
        return "{" + ", ".join(f"{key}={_vtl_text(value)}" for key, value in self.items()) + "}"


class VtlList(list[Any]):
    """A JSON array as ``$input.path`` returns it: printed as compact JSON (the same snapshot:
    ``[{"foo": "bar"}]`` prints ``[{"foo":"bar"}]``)."""

    def __str__(self) -> str:
        return json.dumps(self, separators=(",", ":"), ensure_ascii=False)


class _FinalMap(dict[str, Any]):
    """An override map: each entry may be set once (a second write is :class:`OverrideAppliedTwice`)."""

    def __init__(self, where: str, initial: Mapping[str, Any] | None = None):
        super().__init__(initial or {})
        self.where = where
        self.written: set[str] = set()

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self.written:
            raise OverrideAppliedTwice(f"{self.where}.{key} is overridden twice: overrides are final")
        self.written.add(key)
        super().__setitem__(key, value)


class _Null:
    """What ``$input.path`` gives for a missing member or a JSON null: prints nothing, and equals both
    ``$null`` and ``""`` (LS test_apigateway_common.snapshot.json, test_input_path_template_formatting,
    "empty-body" and "nested-null-list": ``isNull`` and ``isEmptyString`` are both true on AWS)."""

    def __eq__(self, other: object) -> bool:
        return other is None or other == "" or isinstance(other, _Null)

    def __hash__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return ""


NULL = _Null()


def _to_vtl(value: Any) -> Any:
    if isinstance(value, dict):
        return VtlMap({key: _to_vtl(item) for key, item in value.items()})
    if isinstance(value, list):
        return VtlList(_to_vtl(item) for item in value)
    return value


def _vtl_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and not isinstance(value, VtlList):
        return str(VtlList(value))
    return str(value)


# airspeed looks its Java-like methods up by exact class: give the VTL maps and lists those of dict and list.
_METHODS: dict[type, dict[str, Any]] = airspeed.operators.__additional_methods__
_METHODS[VtlMap] = {**_METHODS[dict], "toString": VtlMap.__str__}
_METHODS[VtlList] = {**_METHODS[list], "toString": VtlList.__str__}
_METHODS[_FinalMap] = dict(_METHODS[dict])


# -- JSONPath (the subset the door uses) ------------------------------------------------------------------

_JSONPATH_STEP = re.compile(r"\.([A-Za-z_$][\w$-]*)|\['([^']*)'\]|\[\"([^\"]*)\"\]|\[(\d+)\]")
_MISSING = object()


def _jsonpath(document: Any, expression: str) -> Any:
    """The value ``expression`` selects in ``document``, or ``_MISSING``."""
    text = expression.strip()
    if not text.startswith("$"):
        raise UnsupportedJsonPath(f"JSONPath {expression!r} must start with $")
    position, value = 1, document
    while position < len(text):
        match = _JSONPATH_STEP.match(text, position)
        if match is None:
            raise UnsupportedJsonPath(
                f"JSONPath {expression!r}: only $, .name, ['name'] and [index] are supported (at {text[position:]!r})"
            )
        name = next((g for g in match.groups()[:3] if g is not None), None)
        if name is not None:
            value = value.get(name, _MISSING) if isinstance(value, dict) else _MISSING
        else:
            index = int(match.group(4))
            value = value[index] if isinstance(value, list) and index < len(value) else _MISSING
        if value is _MISSING:
            return _MISSING
        position = match.end()
    return value


# -- $input, $util ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodRequest:
    """What the client sent: the body as text, and the method request parameters by location."""

    body: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    path: Mapping[str, str] = field(default_factory=dict)
    querystring: Mapping[str, str] = field(default_factory=dict)


class MappingInput:
    """``$input``: a payload (the method request's in a request template, the integration response's in a
    response template) and the method request's parameters."""

    def __init__(self, payload: str, request: MethodRequest):
        self._payload = payload
        self._request = request

    @property
    def body(self) -> str:
        # An empty payload reads as {} (snapshot test_apigateway_common.snapshot.json, test_input_body_formatting).
        return self._payload if self._payload else "{}"

    def _document(self) -> Any:
        try:
            return json.loads(self.body)
        except json.JSONDecodeError as exc:
            raise InvalidJsonBody(f"the body is not JSON: {exc}") from None

    def json(self, expression: str = "$") -> str:
        value = _jsonpath(self._document(), expression)
        # A path that selects nothing gives an empty string (not pinned on AWS: the door never asks for one).
        return "" if value is _MISSING else json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    def path(self, expression: str) -> Any:
        value = _jsonpath(self._document(), expression)
        return NULL if value is _MISSING or value is None else _to_vtl(value)

    def params(self, name: str | None = None) -> Any:
        locations = {
            "path": dict(self._request.path),
            "querystring": dict(self._request.querystring),
            "header": dict(self._request.headers),
        }
        if name is None:
            return VtlMap(locations)
        for location in ("path", "querystring", "header"):  # the developer guide's order
            if name in locations[location]:
                return locations[location][name]
        return ""


_URL_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")


def _java_url_encode(text: str) -> str:
    """``application/x-www-form-urlencoded`` as Java's URLEncoder writes it (UTF-8): letters, digits and
    ``.-*_`` stay, a space is ``+``, every other byte is ``%XX``."""
    out = []
    for byte in text.encode("utf-8"):
        if byte in _URL_SAFE:
            out.append(chr(byte))
        elif byte == 0x20:
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def _escape_javascript(text: str) -> str:
    """JavaScript string rules as Apache Commons Lang's ``escapeJavaScript`` applies them (what Velocity's
    tooling calls): quotes, backslash and ``/`` get a backslash, control characters their short escape or
    ``\\uXXXX``, and every character outside ASCII ``\\uXXXX`` (UTF-16 units)."""
    short = {'"': '\\"', "'": "\\'", "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
    short["\t"] = "\\t"
    out = []
    for char in text:
        if char in short:
            out.append(short[char])
        elif ord(char) < 0x20 or ord(char) > 0x7F:
            units = char.encode("utf-16-be")
            out.extend(f"\\u{int.from_bytes(units[i : i + 2], 'big'):04X}" for i in range(0, len(units), 2))
        else:
            out.append(char)
    return "".join(out)


class MappingUtil:
    """``$util``: the developer guide's six functions."""

    def escapeJavaScript(self, value: Any) -> str:
        return _escape_javascript(_vtl_text(value))

    def parseJson(self, text: str) -> Any:
        try:
            return _to_vtl(json.loads(text))
        except (TypeError, json.JSONDecodeError) as exc:
            raise MappingTemplateError(f"$util.parseJson: not JSON: {exc}") from None

    def urlEncode(self, value: Any) -> str:
        return _java_url_encode(_vtl_text(value))

    def urlDecode(self, value: Any) -> str:
        return unquote_plus(_vtl_text(value))

    def base64Encode(self, value: Any) -> str:
        return base64.b64encode(_vtl_text(value).encode("utf-8")).decode("ascii")

    def base64Decode(self, value: Any) -> str:
        try:
            return base64.b64decode(_vtl_text(value), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise MappingTemplateError(f"$util.base64Decode: not base64 of UTF-8 text: {exc}") from None


# -- $context --------------------------------------------------------------------------------------------

IDENTITY_FIELDS = (
    "accountId",
    "apiKey",
    "apiKeyId",
    "caller",
    "cognitoAuthenticationProvider",
    "cognitoAuthenticationType",
    "cognitoIdentityId",
    "cognitoIdentityPoolId",
    "principalOrgId",
    "sourceIp",
    "user",
    "userAgent",
    "userArn",
)
"""``$context.identity.*`` (developer guide): absent ones read as null."""


@dataclass(frozen=True)
class RequestContext:
    """The request's ``$context`` (what API Gateway knows besides the payload)."""

    request_id: str
    stage: str = "v1"
    http_method: str = "POST"
    resource_path: str = "/requests"
    path: str = "/v1/requests"
    api_id: str = "local"
    account_id: str = "123456789012"
    identity: Mapping[str, str] = field(default_factory=dict)
    authorizer: Mapping[str, str] = field(default_factory=dict)
    """``principalId``, ``claims`` or a Lambda authorizer's ``context`` entries (stringified)."""
    stage_variables: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Overrides:
    """What the templates wrote into ``$context.requestOverride`` and ``$context.responseOverride``; the
    response template starts from the request template's."""

    request: _FinalMap = field(default_factory=lambda: _FinalMap("requestOverride"))
    response: _FinalMap = field(default_factory=lambda: _FinalMap("responseOverride"))

    def __post_init__(self) -> None:
        for location in ("header", "path", "querystring"):
            dict.__setitem__(self.request, location, _FinalMap(f"requestOverride.{location}"))
        dict.__setitem__(self.response, "header", _FinalMap("responseOverride.header"))

    @property
    def status(self) -> int | None:
        value = self.response.get("status")
        if value is None or value == "":
            return None
        try:
            status = int(str(value))
        except ValueError:
            raise InvalidStatusOverride(f"responseOverride.status is {value!r}, not a status code") from None
        if not 100 <= status <= 599:
            raise InvalidStatusOverride(f"responseOverride.status is {status}, not a status code")
        return status

    @property
    def headers(self) -> dict[str, str]:
        return {name: _vtl_text(value) for name, value in self.response["header"].items()}


@dataclass(frozen=True)
class Rendered:
    body: str
    overrides: Overrides

    @property
    def status(self) -> int | None:
        """``$context.responseOverride.status``, if a template set it."""
        return self.overrides.status

    @property
    def headers(self) -> dict[str, str]:
        """``$context.responseOverride.header.*``."""
        return self.overrides.headers


def _context(ctx: RequestContext, overrides: Overrides) -> VtlMap:
    identity: dict[str, str | None] = dict.fromkeys(IDENTITY_FIELDS)
    identity.update(ctx.identity)
    return VtlMap(
        {
            "requestId": ctx.request_id,
            "extendedRequestId": ctx.request_id,
            "stage": ctx.stage,
            "httpMethod": ctx.http_method,
            "resourcePath": ctx.resource_path,
            "path": ctx.path,
            "apiId": ctx.api_id,
            "accountId": ctx.account_id,
            "identity": VtlMap(identity),
            "authorizer": VtlMap(ctx.authorizer),
            "requestOverride": overrides.request,
            "responseOverride": overrides.response,
        }
    )


_COMPILED_KEPT: Final = 256
_compiled_templates: dict[str, Any] = {}
_compiling = threading.Lock()


def _compiled(template: str) -> Any:
    """``template`` parsed once, not at every request (parsing was most of a render's time), under a lock:
    requests that arrive together with a new template wait for one parse. A compiled template is shared by
    every request and thread that renders it: airspeed writes its tree only while it parses it; a merge writes
    into the namespace it is given (``#set``, ``#foreach``, ``#define``, ``#macro``) and into the output
    stream, both the request's own. A template that does not parse is not kept: it raises each time."""
    compiled = _compiled_templates.get(template)
    if compiled is None:
        with _compiling:
            compiled = _compiled_templates.get(template)
            if compiled is None:
                compiled = airspeed.Template(template)
                compiled.ensure_compiled()
                if len(_compiled_templates) >= _COMPILED_KEPT:  # a bound: a stack has a handful
                    _compiled_templates.clear()
                _compiled_templates[template] = compiled
    return compiled


def _render(template: str, payload: str, request: MethodRequest, ctx: RequestContext, overrides: Overrides) -> str:
    namespace = {
        "input": MappingInput(payload, request),
        "util": MappingUtil(),
        "context": _context(ctx, overrides),
        "stageVariables": VtlMap(ctx.stage_variables),
    }
    try:
        text: str = _compiled(template).merge(namespace)
    except MappingTemplateError:
        raise
    except airspeed.TemplateError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, MappingTemplateError):
            raise cause from None
        raise MappingTemplateError(f"the mapping template does not render: {exc}") from exc
    return text


def render_request(template: str, request: MethodRequest, context: RequestContext) -> Rendered:
    """The integration request body a request mapping template makes of ``request``."""
    overrides = Overrides()
    return Rendered(_render(template, request.body, request, context, overrides), overrides)


def render_response(
    template: str,
    integration_body: str,
    request: MethodRequest,
    context: RequestContext,
    after: Rendered | None = None,
) -> Rendered:
    """The method response body a response mapping template makes of the integration's answer; ``after`` is
    the request template's rendering, whose overrides the response template sees and may not set again."""
    overrides = after.overrides if after is not None else Overrides()
    return Rendered(_render(template, integration_body, request, context, overrides), overrides)
