"""Connecting the official `mcp` client (v2) to a running server with a bearer key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

MODES = ("legacy", "2026-07-28")


@asynccontextmanager
async def mcp_client(url: str, secret: str, mode: str = "legacy") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """Call a tool and return its JSON result; a tool error raises AssertionError."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, f"{tool} failed: {text}"
    value = json.loads(text)
    if isinstance(value, dict):
        assert result.structured_content == value
    return value


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} unexpectedly succeeded"
    return str(result.content[0].text)  # type: ignore[union-attr]
