"""The official MCP SDK's OAuth client connects to /oauth/mcp of a real server, a person
consenting in a real browser (issue 33): the SDK finds the metadata from the door's 401,
registers itself (RFC 7591), sends the person to the consent page; the person signs up,
names the agent and connects; the browser lands on the client's loopback redirect URI; the
SDK exchanges the code and calls the room's tools as that agent. Its token is no key: /mcp
refuses it."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from queue import Empty, Queue
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from tests.browser import conftest as browser
from tests.e2e.conftest import WEB_ONLY, RunningServer, start_server
from tests.e2e.mcp_clients import call, call_error

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

# The browser tests' Chromium (skipped with the reason when there is none), against the
# server below.
page = browser.page
CLIENT_NAME = "SDK test client"
AGENT = "sdk-agent"
WAIT = 60


@pytest.fixture(scope="module")
def browser_server() -> Iterator[RunningServer]:
    running = start_server({**WEB_ONLY, "OAUTH_DYNAMIC_REGISTRATION": "true", "API_KEYS": ""})
    yield running
    running.stop()


class Memory:
    """The SDK's TokenStorage, in memory: what it registered and the tokens it got."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Loopback:
    """The client's redirect URI, as a desktop client runs it: a one-page HTTP server on a
    free loopback port, handing the query it is sent to the SDK's callback handler."""

    def __init__(self) -> None:
        self.queries: Queue[dict[str, list[str]]] = Queue()
        queries = self.queries

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                queries.put(parse_qs(urlsplit(self.path).query))
                body = b"<!doctype html><title>Connected</title><p>You may close this window."
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def agent_connects(
    server: RunningServer, loopback: Loopback, authorization_urls: Queue[str], room: str
) -> dict[str, Any]:
    """The SDK as a client uses it: the OAuth provider as the HTTP client's auth, the
    browser left to the person (the test's main thread)."""
    storage = Memory()

    async def redirect_handler(url: str) -> None:
        authorization_urls.put(url)

    async def callback_handler() -> AuthorizationCodeResult:
        query = await anyio.to_thread.run_sync(lambda: loopback.queries.get(timeout=WAIT))
        return AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0]
        )

    provider = OAuthClientProvider(
        server_url=f"{server.url}/oauth/mcp",
        client_metadata=OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[AnyUrl(loopback.uri)],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with (
        httpx2.AsyncClient(auth=provider, timeout=30) as http,
        Client(streamable_http_client(f"{server.url}/oauth/mcp", http_client=http)) as client,
    ):
        tools = [tool.name for tool in (await client.list_tools()).tools]
        task = await call(client, "add_task", roomId=room, title="Written through OAuth")
        # The client acts as the agent named on the consent page, and as no other.
        posing = await call_error(
            client, "claim_task", roomId=room, taskId=task["id"], agentId="another-agent"
        )
        claimed = await call(client, "claim_task", roomId=room, taskId=task["id"], agentId=AGENT)
        plan = await call(client, "read_plan", roomId=room)
    assert storage.client_info is not None and storage.tokens is not None
    return {
        "tools": tools,
        "task": task,
        "posing": posing,
        "claimed": claimed,
        "plan": plan,
        "client_id": storage.client_info.client_id,
        "token": storage.tokens.access_token,
    }


def authorization_url(urls: Queue[str], agent: Future[dict[str, Any]]) -> str:
    """The URL the SDK's redirect handler was given; the SDK's own error if it failed first."""
    for _ in range(WAIT * 10):
        if agent.done():
            agent.result()
        try:
            return urls.get(timeout=0.1)
        except Empty:
            pass
    raise AssertionError(f"the SDK asked for no authorization within {WAIT} s")


def test_the_sdk_connects_through_a_person_s_consent(
    page: Any, browser_server: RunningServer
) -> None:
    room = "oauth-sdk-room"
    browser.sign_up(page, "oauth-person@example.com", room)
    authorization_urls: Queue[str] = Queue()
    loopback = Loopback()
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            agent = pool.submit(
                asyncio.run, agent_connects(browser_server, loopback, authorization_urls, room)
            )
            try:
                url = authorization_url(authorization_urls, agent)
                assert url.startswith(f"{browser_server.url}/oauth/authorize/?"), url
                page.goto(url)
                assert page.get_by_role("heading", name=f"Connect {CLIENT_NAME}").is_visible()
                page.get_by_label("Act as agent").fill(AGENT)
                page.get_by_role("button", name="Connect").click()
                page.wait_for_url(f"{loopback.uri}?**")
                assert "You may close this window" in page.content()
                connected = agent.result(timeout=WAIT)
            finally:
                loopback.queries.put({})  # the SDK waits no longer if the browser failed
    finally:
        loopback.close()

    # The client the SDK registered is the one the person connected.
    assert f"client_id={connected['client_id']}&" in url
    assert "add_task" in connected["tools"] and "read_plan" in connected["tools"]
    assert connected["task"]["title"] == "Written through OAuth"
    assert AGENT in connected["posing"]
    assert connected["claimed"]["owner"] == AGENT
    assert "Written through OAuth" in json.dumps(connected["plan"])
    # The person sees the task in their room.
    page.goto(f"/rooms/{room}/")
    page.get_by_text("Written through OAuth").first.wait_for(timeout=15_000)

    # The token is for /oauth/mcp alone: the key door refuses it.
    refused = httpx.post(
        browser_server.mcp_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={
            "authorization": f"Bearer {connected['token']}",
            "accept": "application/json, text/event-stream",
        },
    )
    assert refused.status_code == 401
