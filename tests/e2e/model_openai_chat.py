"""A scripted model speaking OpenAI chat completions with streaming (OpenClaw's ``openai-completions``).

Use::

    from e2e.model_script import Reply, Script, ToolCall, Turn
    from e2e.model_openai_chat import OpenAIChatModel

    script = Script([Turn("what do I use for", (ToolCall("tool_search", {"query": "memory"}),
                                                 Reply("pnpm")))])
    with OpenAIChatModel(script) as model:
        ...  # point the client at model.api_url ("http://127.0.0.1:PORT/v1")
        model.requests          # every request: Recorded(path, body, exchange), oldest first
        model.chat_requests()   # the bodies of the chat completion requests only

``POST /v1/chat/completions`` answers a ``stream: true`` request with ``chat.completion.chunk``
frames ending in ``data: [DONE]`` (a final usage chunk included), and any other with one
``chat.completion`` object. A tool call is a ``tool_calls`` delta with ``finish_reason:
"tool_calls"``; the client's ``role: "tool"`` messages count as answered rounds.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

from .model_script import Exchange, ModelServer, Reply, Script, Step, ToolCall, arguments_json, route, sse

_ids = itertools.count(1)


class OpenAIChatModel(ModelServer):
    """The chat-completions model server; ``api_url`` is the base URL a client takes (with ``/v1``)."""

    def __init__(self, script: Script, model: str = "scripted-model"):
        self.script = script
        self.model = model
        super().__init__(self._answer)

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/v1"

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if route(r.path).endswith("/chat/completions")]

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any] | Iterator[bytes]:
        if not route(path).endswith("/chat/completions"):
            self.record(path, body, None)
            return {"object": "list", "data": []}
        exchange = read_exchange(body)
        self.record(path, body, exchange)
        step = self.script.step_for(exchange)
        if body.get("stream"):
            return _stream(step, self.model)
        return _completion(step, self.model)


def read_exchange(body: dict[str, Any]) -> Exchange:
    """The latest user prompt, the tool rounds since it and the offered tool names."""
    messages = body.get("messages") or []
    rounds = 0
    prompt = ""
    for message in reversed(messages):
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            rounds += 1
        elif role == "user":
            prompt = _text(message.get("content"))
            break
    tools = tuple(str((tool.get("function") or {}).get("name", "")) for tool in body.get("tools") or [])
    return Exchange(prompt=prompt, rounds=rounds, tools=tools)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _chunk(model: str, delta: dict[str, Any], finish: str | None, ident: str) -> dict[str, Any]:
    return {"id": ident, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _stream(step: Step, model: str) -> Iterator[bytes]:
    ident = f"chatcmpl-{next(_ids)}"
    yield sse(_chunk(model, {"role": "assistant", "content": ""}, None, ident))
    if isinstance(step, ToolCall):
        call = {"index": 0, "id": f"call_{next(_ids)}", "type": "function",
                "function": {"name": step.name, "arguments": arguments_json(step)}}
        yield sse(_chunk(model, {"tool_calls": [call]}, None, ident))
        yield sse(_chunk(model, {}, "tool_calls", ident))
    else:
        yield sse(_chunk(model, {"content": step.text}, None, ident))
        yield sse(_chunk(model, {}, "stop", ident))
    usage = {"id": ident, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
             "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    yield sse(usage)
    yield sse("[DONE]")


def _completion(step: Step, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(step, Reply):
        message["content"] = step.text
    else:
        message["tool_calls"] = [{"id": f"call_{next(_ids)}", "type": "function",
                                  "function": {"name": step.name, "arguments": arguments_json(step)}}]
    return {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": "stop" if isinstance(step, Reply) else "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
