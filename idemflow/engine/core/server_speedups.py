"""The endpoint's HTTP server doing less per request: ``request-headers`` and ``access-log``, speedups (the same
answers, less work).

Every SDK call a Lambda function makes (the charge function's three DynamoDB writes per execution) reaches the
engine through its HTTP endpoint, werkzeug's development server on Python's ``http.server``:

* ``request-headers``: ``http.server`` parses a request's header lines with the ``email`` package's feed parser
  (``http.client.parse_headers``), which splits and matches each line through several layers of its state
  machine. A header block of plain lines (each ``name: value`` in printable ASCII, ended by CRLF, with no
  continuation line) is turned into the same :class:`http.client.HTTPMessage` directly: the same headers in the
  same order, each name and value as the parser's policy (``compat32``) stores them, an empty payload, no defect.
  Any other block (a folded line, a byte outside printable ASCII, a line without a name, a bare LF) goes to the
  ``email`` parser as before. Only ``http.server`` is changed (its ``http.client`` name): botocore's and urllib3's
  response parsing keep theirs.
* ``access-log``: werkzeug's request handler formats an access log line for every response (the path decoded,
  control characters escaped, the client's address, the time of day) and hands it to the ``werkzeug`` logger,
  which the engine sets to ERROR: the line is dropped after it was made. With the change it is made only when that
  logger would write it at INFO (a logger whose level is still unset is left to werkzeug, which sets it to INFO).
"""

from __future__ import annotations

import email.parser
import http.client
import logging
import re
import types
from typing import IO, TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

# -- request-headers ---------------------------------------------------------------------------------------

_PLAIN_BLOCK: Final = re.compile(rb"(?:[!-9;-~]+:[\t -~]*\r\n)*\r\n\Z")
"""Header lines each with a name of the characters the feed parser takes for one (printable ASCII but the colon)
and a value of printable ASCII and tabs, each ended by CRLF, then the empty line: what email's parser reads line by
line (``str.splitlines`` breaks nowhere else in it), one header per line."""
_PLAIN_LINE: Final = re.compile(rb"([!-9;-~]+):[\t ]*([\t -~]*?)\r\n")


def parse_headers(fp: IO[bytes], _class: type[http.client.HTTPMessage] = http.client.HTTPMessage) -> Any:
    """``http.client.parse_headers``: the same lines read (the same limits, the same errors), the same message."""
    lines = http.client._read_headers(fp)  # type: ignore[attr-defined]
    block = b"".join(lines)
    if not _PLAIN_BLOCK.match(block) or block.startswith(b"From "):
        return email.parser.Parser(_class=_class).parsestr(block.decode("iso-8859-1"))
    message = _class()
    # compat32's header_source_parse: the name before the first colon, the value with leading blanks and the line
    # ending stripped (a value's trailing blanks are kept: the lazy group stops only at CRLF).
    message._headers = [  # type: ignore[attr-defined]  # email.message.Message keeps its headers there
        (name.decode("ascii"), value.decode("ascii")) for name, value in _PLAIN_LINE.findall(block)
    ]
    if message.get_content_maintype() in ("multipart", "message"):  # the parser reads such a body as parts
        return email.parser.Parser(_class=_class).parsestr(block.decode("iso-8859-1"))
    message.set_payload("")
    return message


def install_request_headers(patch: Patch) -> None:
    import http.server

    client = types.SimpleNamespace(**{**vars(http.client), "parse_headers": parse_headers})
    patch.set(http.server, "http", types.SimpleNamespace(client=client))


# -- access-log --------------------------------------------------------------------------------------------


def install_access_log(patch: Patch) -> None:
    from werkzeug.serving import WSGIRequestHandler

    log_request = WSGIRequestHandler.log_request
    logger = logging.getLogger("werkzeug")

    def quiet_log_request(self: Any, code: int | str = "-", size: int | str = "-") -> None:
        if logger.level == logging.NOTSET or logger.isEnabledFor(logging.INFO):
            log_request(self, code, size)

    patch.set(WSGIRequestHandler, "log_request", quiet_log_request)
