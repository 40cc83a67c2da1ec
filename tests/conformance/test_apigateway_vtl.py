"""API Gateway's mapping template features the HTTP front door relies on, one per test, each cited.

Sources: the developer guide's variables reference (``DG``:
https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html),
its override page (``OVERRIDES``:
https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-override-request-response-parameters.html),
and responses recorded on AWS in LocalStack's AWS-validated snapshots (``LS``: repository
localstack/localstack, tests/aws/services/apigateway/<file>.snapshot.json, the test named).

These render templates with idemflow/engine/services/apigateway/vtl.py only: no engine, no endpoint.
"""

from __future__ import annotations

import base64
import json

import pytest

from idemflow.engine.services.apigateway.vtl import (
    MethodRequest,
    OverrideAppliedTwice,
    RequestContext,
    render_request,
    render_response,
)

CONTEXT = RequestContext(request_id="c0ffee00-0000-4000-8000-000000000001")


def _render(template: str, body: str = "", **request: dict[str, str]) -> str:
    return render_request(template, MethodRequest(body=body, **request), CONTEXT).body


# -- $input ------------------------------------------------------------------------------------------------


def test_input_params_finds_a_header_by_name_after_path_and_querystring() -> None:
    # DG, $input.params(x): "Returns the value of a method request parameter from the path, query string,
    # or header value (searched in that order), given a parameter name string x."
    template = "$input.params('k')|$input.params('Idempotency-Key')|[$input.params('absent')]"
    request = MethodRequest(headers={"k": "header", "Idempotency-Key": "order-1"}, querystring={"k": "query"})
    assert render_request(template, request, CONTEXT).body == "query|order-1|[]"
    request = MethodRequest(headers={"k": "header"}, querystring={"k": "query"}, path={"k": "path"})
    assert render_request("$input.params('k')", request, CONTEXT).body == "path"


def test_input_params_without_a_name_maps_each_location() -> None:
    # DG, $input.params(): "Returns a map of all the request parameters" (path, querystring, header).
    template = "$input.params().header.get('Idempotency-Key') $input.params().keySet()"
    rendered = _render(template, headers={"Idempotency-Key": "k1"})
    assert rendered.startswith("k1 ") and all(name in rendered for name in ("path", "querystring", "header"))


def test_input_json_gives_the_selected_json_as_text() -> None:
    # DG, $input.json(x): "evaluates a JSONPath expression and returns the results as a JSON string".
    body = '{"payload": {"amount": 4200, "tags": ["a", "b"], "note": "it\'s"}, "n": null}'
    assert json.loads(_render("$input.json('$')", body)) == json.loads(body)
    assert json.loads(_render("$input.json('$.payload.tags')", body)) == ["a", "b"]
    assert json.loads(_render("$input.json('$.payload.amount')", body)) == 4200


def test_input_path_prints_a_map_as_java_does_and_a_list_as_json() -> None:
    # LS test_apigateway_common.snapshot.json, test_input_path_template_formatting: "dict-response"
    # {foo=bar}, "json-list" [{"foo":"bar"}], "dict-with-nested-list" {foo=[{"nested":"bar"}]},
    # "bigger-dict" {bigger=dict, to=test, with=separators}, "nested-dict" {foo=bar}.
    template = '#set($result = $input.path("$.json"))$result'
    assert _render(template, '{"json": {"foo": "bar"}}') == "{foo=bar}"
    assert _render(template, '{"json": [{"foo": "bar"}]}') == '[{"foo":"bar"}]'
    assert _render(template, '{"json": {"foo": [{"nested": "bar"}]}}') == '{foo=[{"nested":"bar"}]}'
    bigger = '{"json": {"bigger": "dict", "to": "test", "with": "separators"}}'
    assert _render(template, bigger) == "{bigger=dict, to=test, with=separators}"
    nested = '#set($result = $input.path("$.json"))$result.nested'
    assert _render(nested, '{"json": {"nested": {"foo": "bar"}}}') == "{foo=bar}"


def test_input_path_of_a_missing_member_is_null_and_prints_nothing() -> None:
    # LS test_apigateway_common.snapshot.json, test_input_path_template_formatting, "empty-body":
    # {"body": , "nested": , "isNull": "true", "isEmptyString": "true"}. The door reads $.status, $.error and
    # $.__type of an answer that may lack them.
    template = (
        '#set($result = $input.path("$.nonExisting"))'
        '{"body": $result, "nested": $result.nested, "isNull": #if( $result == $null )"true"#else"false"#end, '
        '"isEmptyString": #if( $result == "" )"true"#else"false"#end}'
    )
    expected = '{"body": , "nested": , "isNull": "true", "isEmptyString": "true"}'
    assert _render(template, '{"json": {}}') == expected
    assert _render(template, "") == expected
    # "nested-null-list" and "nested-empty-list": a JSON null reads the same; an empty list is neither.
    listed = template.replace("$.nonExisting", "$.json.listValue")
    assert _render(listed, '{"json": {"listValue": null}}') == expected
    empty = '{"body": [], "nested": , "isNull": "false", "isEmptyString": "false"}'
    assert _render(listed, '{"json": {"listValue": []}}') == empty


def test_input_body_is_the_raw_payload_and_an_empty_one_reads_as_an_empty_object() -> None:
    # LS test_apigateway_common.snapshot.json, test_input_body_formatting, "response-raw-body":
    # empty-body b'{}', json-body b'{"some": "value"}' (as sent, spaces kept), str-body b'some raw data'.
    assert _render("$input.body", "") == "{}"
    assert _render("$input.body", '{"some": "value"}') == '{"some": "value"}'
    assert _render("$input.body", "some raw data") == "some raw data"


# -- $util -------------------------------------------------------------------------------------------------


def test_escape_javascript_escapes_quotes_and_single_quotes_need_turning_back_for_json() -> None:
    # DG, $util.escapeJavaScript(): "Escapes the characters in a string using JavaScript string rules. ...
    # This function will turn any regular single quotes (') into escaped ones (\'). However, the escaped
    # single quotes are not valid in JSON. Thus, when the output from this function is used in a JSON
    # property, you must turn any escaped single quotes (\') back to regular single quotes (')", with
    # $util.escapeJavaScript(data).replaceAll("\\'","'"). The door builds its StartSyncExecution input so.
    body = '{"note": "it\'s \\"quoted\\"\\nnext line \\\\ é"}'
    assert _render("$util.escapeJavaScript($input.json('$'))", body).count("\\'") == 1
    as_json = _render('"$util.escapeJavaScript($input.json(\'$\')).replaceAll("\\\\\'","\'")"', body)
    assert json.loads(json.loads(as_json)) == json.loads(body)


def test_escape_javascript_of_the_request_body_is_the_start_execution_input() -> None:
    # LS test_apigateway_stepfunctions.snapshot.json, test_apigateway_with_step_function_integration
    # [StartExecution]: the template {"input": "$util.escapeJavaScript($input.json('$'))", "stateMachineArn":
    # "..."} started an execution on AWS (its answer: executionArn and startDate).
    body = '{"test": "test-value"}'
    request = _render('{"input": "$util.escapeJavaScript($input.json(\'$\'))", "stateMachineArn": "arn"}', body)
    assert json.loads(json.loads(request)["input"]) == {"test": "test-value"}


def test_parse_json_gives_an_object_whose_members_vtl_reads() -> None:
    # DG, $util.parseJson(): "Takes "stringified" JSON and returns an object representation of the result.
    # You can use the result from this function to access and manipulate elements of the payload natively".
    template = "#set($o = $util.parseJson($input.path('$.output')))#if($o.replayed)replayed#end $o.result.chargeId"
    body = json.dumps({"output": json.dumps({"replayed": True, "result": {"chargeId": "c-1"}})})
    assert _render(template, body) == "replayed c-1"
    body = json.dumps({"output": json.dumps({"replayed": False, "result": {"chargeId": "c-1"}})})
    assert _render(template, body) == " c-1"


def test_url_encode_is_form_encoding() -> None:
    # LS test_apigateway_common.snapshot.json, test_input_body_formatting, "response-url-encode":
    # EncodedBody=$util.urlEncode($input.body) gives EncodedBody=%7B%22some%22%3A+%22value%22%7D for the body
    # {"some": "value"}, and EncodedBody=some+raw+data for "some raw data". DG, $util.urlDecode(): "Decodes an
    # application/x-www-form-urlencoded string".
    assert _render("$util.urlEncode($input.body)", '{"some": "value"}') == "%7B%22some%22%3A+%22value%22%7D"
    assert _render("$util.urlEncode($input.body)", "some raw data") == "some+raw+data"
    assert _render("$util.urlDecode($util.urlEncode($input.body))", "a b&c=d/é") == "a b&c=d/é"


def test_base64_decode_then_parse_json() -> None:
    # LS test_apigateway_integrations.snapshot.json, test_integration_mock_with_request_overrides_in_response
    # _template: $util.base64Decode of base64 {"message": "path1"}, then $util.parseJson(...).message, gave
    # "path was path one" on AWS. DG: base64Encode "Encodes the data into a base64-encoded string".
    encoded = base64.b64encode(json.dumps({"message": "path1"}).encode()).decode()
    template = "#set($b = $util.parseJson($util.base64Decode($input.params('p'))))$b.message"
    assert _render(template, path={"p": encoded}) == "path1"
    assert _render("$util.base64Encode($input.body)", "some raw data") == base64.b64encode(b"some raw data").decode()


# -- $context ----------------------------------------------------------------------------------------------


def test_context_carries_the_request_id_identity_and_authorizer() -> None:
    # DG, Context variables: $context.requestId, $context.identity.apiKeyId ("The API key ID associated with
    # an API request that requires an API key"), $context.authorizer.principalId ("The principal user
    # identification associated with the token sent by the client and returned from an API Gateway Lambda
    # authorizer"), $context.stage, $context.httpMethod, $context.resourcePath.
    context = RequestContext(
        request_id="r-1",
        stage="v1",
        http_method="POST",
        resource_path="/requests",
        identity={"apiKeyId": "key-1", "sourceIp": "192.0.2.1"},
        authorizer={"principalId": "user-7"},
    )
    template = (
        "$context.requestId $context.identity.apiKeyId $context.identity.sourceIp $context.authorizer.principalId "
        "$context.stage $context.httpMethod $context.resourcePath [$!context.identity.user]"
    )
    assert render_request(template, MethodRequest(), context).body == "r-1 key-1 192.0.2.1 user-7 v1 POST /requests []"


def test_a_status_and_headers_overridden_by_the_request_template_are_the_responses() -> None:
    # LS test_apigateway_integrations.snapshot.json, test_integration_mock_with_response_override_in_request
    # _template[True] and [False]: #set($context.responseOverride.status = 444) and .header.foo = "bar" in
    # the request template gave status 444 and header foo: bar, and the response template read them back
    # ("statusOverride": "444", "fooHeader": "bar", "custom": "is also passed around").
    request_template = (
        "#set($context.responseOverride.status = 444)\n"
        '#set($context.responseOverride.header.foo = "bar")\n'
        '#set($context.responseOverride.custom = "is also passed around")\n'
        '{"statusCode": 200}'
    )
    response_template = (
        '{"statusOverride": "$context.responseOverride.status", "fooHeader": "$context.responseOverride.header.foo", '
        '"custom": "$context.responseOverride.custom"}'
    )
    request = MethodRequest()
    sent = render_request(request_template, request, CONTEXT)
    assert (sent.status, sent.headers) == (444, {"foo": "bar"})
    answered = render_response(response_template, "{}", request, CONTEXT, after=sent)
    assert (answered.status, answered.headers) == (444, {"foo": "bar"})
    assert json.loads(answered.body) == {"statusOverride": "444", "fooHeader": "bar", "custom": "is also passed around"}


def test_the_response_template_overrides_the_status_from_the_integration_body() -> None:
    # OVERRIDES, Example 1: #if($inputRoot.toString().contains("error")) #set($context.responseOverride.status
    # = 400) turns the integration's 200 into a 400.
    template = '#set($inputRoot = $input.path(\'$\'))$input.json("$")#if($inputRoot.toString().contains("error"))'
    template += "#set($context.responseOverride.status = 400)#end"
    answered = render_response(template, '{"errors": [{"message": "out of range"}]}', MethodRequest(), CONTEXT)
    assert answered.status == 400
    assert render_response(template, '{"id": 1}', MethodRequest(), CONTEXT).status is None


def test_an_override_is_final() -> None:
    # OVERRIDES: "Overrides are final. An override may only be applied to each parameter once. If you try to
    # override the same parameter multiple times, API Gateway returns a 5XX response."
    with pytest.raises(OverrideAppliedTwice, match=r"responseOverride\.status"):
        _render("#set($context.responseOverride.status = 400)#set($context.responseOverride.status = 409)")
    retry_after = '#set($context.responseOverride.header["Retry-After"] = "2")'
    sent = render_request(retry_after, MethodRequest(), CONTEXT)
    with pytest.raises(OverrideAppliedTwice, match="Retry-After"):
        render_response(retry_after, "{}", MethodRequest(), CONTEXT, sent)


def test_an_override_map_entry_is_assigned_with_brackets() -> None:
    # LS test_apigateway_integrations.snapshot.json, test_integration_mock_with_vtl_map_assignation:
    # #set($context.requestOverride.querystring[$paramName] = "bar") and
    # #set($context["requestOverride"].querystring["nestedfoo"] = "nestedFoo") were read back on AWS. The door
    # sets hyphenated headers (Retry-After, Idempotent-Replayed) with brackets.
    template = (
        '#set($paramName = "foo")#set($context.requestOverride.querystring[$paramName] = "bar")'
        '#set($context["requestOverride"].querystring["nestedfoo"] = "nestedFoo")'
        '#set($context.responseOverride.header["Idempotent-Replayed"] = "true")'
        "$context.requestOverride.querystring.foo $context.requestOverride.querystring['nestedfoo']"
    )
    sent = render_request(template, MethodRequest(), CONTEXT)
    assert sent.body == "bar nestedFoo"
    assert sent.headers == {"Idempotent-Replayed": "true"}
