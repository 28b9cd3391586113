"""DRF's JSON parser, with JSON nested past the interpreter's depth a parse error (400)
like any other malformed body, not a RecursionError (500). Kept apart from mcp_gateway/apis/
so that DRF's settings can import it while DRF itself is importing."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.parsers import JSONParser


class JsonParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the body nests too deeply.") from None
