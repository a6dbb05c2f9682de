"""A scripted model speaking the Anthropic Messages API (Claude Code, through ``ANTHROPIC_BASE_URL``).

``POST /v1/messages`` with ``stream: true`` answers with Server-Sent Events (``message_start``,
``content_block_start/delta/stop``, ``message_delta``, ``message_stop``); without, with one
message object. A tool call is a ``tool_use`` block (``stop_reason: tool_use``); the client
answers it with a ``tool_result`` in the next request. ``POST /v1/messages/count_tokens``
answers a rough count. ``messages_requests()`` lists the bodies of the message requests.

As a real model does, a scripted tool call to a tool that is not offered yet while Claude Code
offers ``WaitForMcpServers`` (an MCP server still connecting) becomes a call to that tool first;
those calls do not count as rounds of the script.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from .model_script import Exchange, ModelServer, Reply, Script, Step, ToolCall, arguments_json, route, sse

_ids = itertools.count(1)
WAIT_TOOL = "WaitForMcpServers"


class AnthropicModel(ModelServer):
    def __init__(self, script: Script):
        self.script = script
        super().__init__(self._answer)

    def messages_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if route(r.path).endswith("/v1/messages")]

    def tool_requests(self) -> list[dict[str, Any]]:
        """The requests of the conversation itself: those offering tools (side requests offer none)."""
        return [body for body in self.messages_requests() if body.get("tools")]

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any] | Iterator[bytes]:
        if route(path).endswith("/count_tokens"):
            self.record(path, body, None)
            return {"input_tokens": max(1, len(json.dumps(body)) // 4)}
        exchange = read_exchange(body)
        self.record(path, body, exchange)
        step = self.script.step_for(exchange)
        if isinstance(step, ToolCall) and step.name not in exchange.tools and WAIT_TOOL in exchange.tools:
            step = ToolCall(WAIT_TOOL, {})
        model = str(body.get("model") or "claude-scripted")
        return _stream(step, model) if body.get("stream") else _message(step, model)


def read_exchange(body: dict[str, Any]) -> Exchange:
    """The latest user prompt, the tool rounds since it and the offered tool names."""
    rounds = 0
    prompt = ""
    for message in reversed(body.get("messages") or []):
        blocks = _blocks(message.get("content"))
        if message.get("role") == "assistant":
            rounds += any(block.get("type") == "tool_use" and block.get("name") != WAIT_TOOL for block in blocks)
        elif message.get("role") == "user" and not any(block.get("type") == "tool_result" for block in blocks):
            prompt = "\n".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")
            break
    tools = tuple(str(tool.get("name", "")) for tool in body.get("tools") or [])
    return Exchange(prompt=prompt, rounds=rounds, tools=tools)


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content or [] if isinstance(block, dict)]


def _content(step: Step) -> dict[str, Any]:
    if isinstance(step, ToolCall):
        return {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": step.name, "input": step.arguments}
    return {"type": "text", "text": step.text}


def _usage() -> dict[str, int]:
    return {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _message(step: Step, model: str) -> dict[str, Any]:
    return {"id": f"msg_{next(_ids):04d}", "type": "message", "role": "assistant", "model": model,
            "content": [_content(step)], "stop_reason": "end_turn" if isinstance(step, Reply) else "tool_use",
            "stop_sequence": None, "usage": _usage()}


def _stream(step: Step, model: str) -> Iterator[bytes]:
    start = _message(step, model)
    block = start.pop("content")[0]
    stop_reason = start.pop("stop_reason")
    yield sse({"type": "message_start", "message": {**start, "content": [], "stop_reason": None}}, "message_start")
    if block["type"] == "tool_use":
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": arguments_json(step)}  # type: ignore[arg-type]
    else:
        opened = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    yield sse({"type": "content_block_start", "index": 0, "content_block": opened}, "content_block_start")
    yield sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta")
    yield sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
    yield sse({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
               "usage": {"output_tokens": 10}}, "message_delta")
    yield sse({"type": "message_stop"}, "message_stop")
