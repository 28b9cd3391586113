"""What a 2026-07-28 request's envelope must hold before its body is trusted (MCP streamable
HTTP, "Request Metadata" and "Server Validation"): a protocol version this server speaks,
said first; the version, capabilities and client's identity in `params._meta`; the
Mcp-Method and Mcp-Name headers present, plain, and equal to the body's values (a proxy
that routes on a header and a server that acts on the body must agree on what was asked).
"""

from __future__ import annotations

import base64
from typing import Any

import mcp_types as T
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def modern_envelope(version: str, headers: dict[str, str], method: str, params: Any) -> str:
    """The 2026-07-28 request's version, once its envelope holds (streamable HTTP,
    "Server Validation"): a version we speak, its headers present, plain and equal to
    the body's values (the name decoded first when it comes base64-encoded)."""
    if version not in MODERN_PROTOCOL_VERSIONS:
        # Said first: whatever else is wrong, the client's next move is another version.
        raise RpcError(
            T.UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version {version}; this server speaks "
            f"{', '.join(MODERN_PROTOCOL_VERSIONS)} (and the initialize handshake for "
            f"{', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}).",
            {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": version},
        )
    meta = (params or {}).get("_meta")
    if (
        not isinstance(meta, dict)
        or T.PROTOCOL_VERSION_META_KEY not in meta
        or T.CLIENT_CAPABILITIES_META_KEY not in meta
    ):
        raise RpcError(
            T.INVALID_PARAMS,
            "params._meta must carry the protocol version and client capabilities "
            "(2026-07-28 single-exchange request).",
        )
    if meta[T.PROTOCOL_VERSION_META_KEY] != version:
        raise RpcError(
            T.HEADER_MISMATCH,
            f"Header mismatch: MCP-Protocol-Version {version} does not match "
            f"params._meta's {str(meta[T.PROTOCOL_VERSION_META_KEY])[:64]}.",
        )
    said = headers.get("mcp-method")
    if said is None or not _header_plain(said):
        raise RpcError(
            T.HEADER_MISMATCH,
            "Header mismatch: the Mcp-Method header is missing or not plain ASCII.",
        )
    if said != method:
        raise RpcError(
            T.HEADER_MISMATCH,
            f"Header mismatch: Mcp-Method {said[:64]} does not match the body's {method[:64]}.",
        )
    if method in NAMED_METHODS:
        name = _header_name(headers.get("mcp-name"))
        body_name = (params or {}).get(NAMED_METHODS[method])
        if name is None:
            raise RpcError(
                T.HEADER_MISMATCH,
                f"Header mismatch: {method} needs an Mcp-Name header (plain ASCII, or "
                "=?base64?...?=).",
            )
        if name != body_name:
            raise RpcError(
                T.HEADER_MISMATCH,
                f"Header mismatch: Mcp-Name {name[:64]} does not match the body's "
                f"{str(body_name)[:64]}.",
            )
    return version


# The methods whose Mcp-Name header mirrors a body field (streamable HTTP, "Standard Request
# Headers"); we serve only tools/call of them, the others are checked all the same.
NAMED_METHODS = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}


def _header_plain(value: str) -> bool:
    """A header value of visible ASCII, spaces and tabs only (RFC 9110 field values, as MCP
    asks clients to send them), with no space at either end."""
    return value == value.strip(" \t") and all(c == "\t" or " " <= c <= "~" for c in value)


def _header_name(value: str | None) -> str | None:
    """The Mcp-Name header's value, decoded from its =?base64?...?= form; None when it is
    absent or malformed."""
    if value is None or not _header_plain(value):
        return None
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    return value


MIRRORED = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")


def mirrored_repeated(raw: list[tuple[bytes, bytes]]) -> str | None:
    """The first header that mirrors the body (version, method, name) and comes more than
    once, if any: which copy an intermediary routed on is unknowable, so none is trusted."""
    seen: set[bytes] = set()
    for name, _ in raw:
        lowered = name.lower()
        if lowered in MIRRORED:
            if lowered in seen:
                return lowered.decode("latin-1")
            seen.add(lowered)
    return None
