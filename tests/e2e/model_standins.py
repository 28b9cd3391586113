"""Scripted stand-ins for the model APIs the real clients call, on loopback.

The README test drives the real Claude Code (and Codex) command-line tools; what they send
to their model is answered here instead of by Anthropic or OpenAI, so the clients' own
hooks, MCP connections and tool runs are exercised with no network and no account. Each
stand-in asks for its tool calls in turn (the edits under test), then answers in plain
text, and keeps every request body it received so the test can read what the client told the
model (the tool results: a hook's refusal reaches the model there).

The shapes are those of the public APIs: Anthropic's Messages API with streaming
(`POST /v1/messages`, server-sent events message_start … message_stop) and OpenAI's
Responses API with streaming (`POST /v1/responses`, response.created …
response.completed), as Claude Code 2.1.332 and Codex 0.171.0 read them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ToolCall:
    """A tool call the stand-in asks for: the client's tool name and its input (a text for
    a freeform tool of the Responses API, e.g. Codex's apply_patch)."""

    name: str
    arguments: dict[str, Any] | str


@dataclass
class StandIn:
    """A model API on 127.0.0.1 that asks for `calls` one after the other (the next once the
    client has answered the last), then says `done`."""

    calls: list[ToolCall]
    done: str = "Done."
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> StandIn:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._json({})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.end_headers()

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with owner.lock:
                    owner.requests.append({"path": self.path, "body": body})
                path = self.path.split("?")[0]
                if path.endswith("/v1/messages"):
                    self._events(owner.anthropic(body), body.get("stream", False))
                elif path.endswith("/responses"):
                    self._events(owner.openai(body), True)
                elif path.endswith("/count_tokens"):
                    self._json({"input_tokens": 1})
                else:
                    self._json({})

            def _json(self, value: dict[str, Any]) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _events(self, events: list[tuple[str, dict[str, Any]]], stream: bool) -> None:
                if not stream:  # a non-streaming Messages call: the message itself
                    self._json(_assembled(events))
                    return
                data = b"".join(
                    f"event: {name}\ndata: {json.dumps(value)}\n\n".encode()
                    for name, value in events
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def _next(self, offered: set[str], answered: int) -> tuple[int, ToolCall] | None:
        """The call this request is answered with: the one after those the conversation has
        answered, when the request offers its tool (a client's side calls, e.g. a title,
        offer none); None when every call is answered."""
        if answered < len(self.calls) and self.calls[answered].name in offered:
            return answered, self.calls[answered]
        return None

    # --- Anthropic Messages ---------------------------------------------------------------

    def anthropic(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        offered = {str(tool.get("name")) for tool in body.get("tools") or []}
        answered = sum(
            isinstance(block, dict) and block.get("type") == "tool_result"
            for message in body.get("messages") or []
            if isinstance(message.get("content"), list)
            for block in message["content"]
        )
        message = {
            "id": "msg_standin",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stand-in"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": message})
        ]
        asked = self._next(offered, answered)
        if asked:
            index, call = asked
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_standin_{index}",
                "name": call.name,
                "input": {},
            }
            delta = {"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": self.done}
            stop = "end_turn"
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 1},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return events

    def anthropic_tool_results(self) -> Iterator[str]:
        """The text of every tool_result the client sent back to the model."""
        for request in list(self.requests):
            for message in request["body"].get("messages") or []:
                content = message.get("content")
                if not isinstance(content, list):
                    continue
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        yield _text(block.get("content"))

    # --- OpenAI Responses -----------------------------------------------------------------

    def openai(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        offered = {
            str(tool.get("name") or tool.get("function", {}).get("name"))
            for tool in body.get("tools") or []
        }
        answered = sum(
            isinstance(item, dict) and str(item.get("type", "")).endswith("_call_output")
            for item in body.get("input") or []
        )
        asked = self._next(offered, answered)
        if asked:
            index, call = asked
            item: dict[str, Any] = {
                "id": f"fc_standin_{index}",
                "call_id": f"call_standin_{index}",
                "name": call.name,
                "status": "completed",
            }
            if isinstance(call.arguments, str):  # a freeform tool (Codex's apply_patch)
                item.update(type="custom_tool_call", input=call.arguments)
            else:
                item.update(type="function_call", arguments=json.dumps(call.arguments))
        else:
            item = {
                "type": "message",
                "id": "msg_standin",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": self.done, "annotations": []}],
            }
        response = {"id": "resp_standin", "object": "response", "status": "in_progress"}
        done = {
            **response,
            "status": "completed",
            "output": [item],
            "usage": {
                "input_tokens": 1,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 1,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 2,
            },
        }
        return [
            ("response.created", {"type": "response.created", "response": response}),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            ("response.completed", {"type": "response.completed", "response": done}),
        ]

    def openai_tool_outputs(self) -> Iterator[str]:
        """The text of every tool output the client sent back to the model."""
        for request in list(self.requests):
            for item in request["body"].get("input") or []:
                if isinstance(item, dict) and str(item.get("type", "")).endswith("_call_output"):
                    yield _text(item.get("output"))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(part.get("text", part)) for part in content if part)
    if isinstance(content, dict):
        return _text(content.get("content") or content.get("text") or "")
    return "" if content is None else str(content)


def _assembled(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The non-streaming message the streamed events describe."""
    message = dict(events[0][1]["message"])
    block = dict(next(v for n, v in events if n == "content_block_start")["content_block"])
    delta = next(v for n, v in events if n == "content_block_delta")["delta"]
    if block["type"] == "text":
        block["text"] = delta["text"]
    else:
        block["input"] = json.loads(delta["partial_json"])
    stop = next(v for n, v in events if n == "message_delta")["delta"]["stop_reason"]
    return {**message, "content": [block], "stop_reason": stop}
