"""A scripted model speaking the OpenAI Responses API with streaming (Codex CLI, ``wire_api = "responses"``).

``POST /v1/responses`` answers with Server-Sent Events: ``response.created``, the output item
(``response.output_item.added`` / ``.done``; text also as ``response.output_text.delta``), then
``response.completed``. A tool call is a ``function_call`` item; Codex shows MCP tools to the
model as one ``namespace`` tool (``mcp__memory``) holding the bare tool names, so a call names
the namespace too. The client's ``function_call_output`` items count as answered rounds.
``responses_requests()`` lists the request bodies.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from .model_script import Exchange, ModelServer, Reply, Script, Step, ToolCall, arguments_json, route, sse

_ids = itertools.count(1)


class ResponsesModel(ModelServer):
    def __init__(self, script: Script):
        self.script = script
        super().__init__(self._answer)

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/v1"

    def responses_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if route(r.path).endswith("/responses")]

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any] | Iterator[bytes]:
        if not route(path).endswith("/responses"):
            self.record(path, body, None)
            return {"object": "list", "data": []}
        exchange = read_exchange(body)
        self.record(path, body, exchange)
        return _stream(self.script.step_for(exchange), str(body.get("model") or "scripted"))


def tool_names(tools: list[Any]) -> tuple[str, ...]:
    """Offered tool names; a namespace's tools as ``namespace/tool``."""
    names: list[str] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            names += [f"{tool.get('name')}/{inner.get('name')}" for inner in tool.get("tools") or []]
        else:
            names.append(str(tool.get("name", "")))
    return tuple(names)


def read_exchange(body: dict[str, Any]) -> Exchange:
    rounds = 0
    prompt = ""
    for item in reversed(body.get("input") or []):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output":
            rounds += 1
        elif item.get("role") == "user" and item.get("type", "message") == "message":
            prompt = "\n".join(str(part.get("text", "")) for part in item.get("content") or []
                               if isinstance(part, dict))
            break
    return Exchange(prompt=prompt, rounds=rounds, tools=tool_names(body.get("tools") or []))


def _item(step: Step) -> dict[str, Any]:
    if isinstance(step, ToolCall):
        item = {"type": "function_call", "id": f"fc_{next(_ids)}", "call_id": f"call_{next(_ids)}",
                "name": step.name, "arguments": arguments_json(step), "status": "completed"}
        if step.namespace:
            item["namespace"] = step.namespace
        return item
    return {"type": "message", "id": f"msg_{next(_ids)}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": step.text, "annotations": []}]}


def _stream(step: Step, model: str) -> Iterator[bytes]:
    response = {"id": f"resp_{next(_ids)}", "object": "response", "model": model, "status": "in_progress",
                "output": []}
    yield sse({"type": "response.created", "response": response}, "response.created")
    item = _item(step)
    yield sse({"type": "response.output_item.added", "output_index": 0, "item": item}, "response.output_item.added")
    if isinstance(step, Reply):
        yield sse({"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
                   "item_id": item["id"], "delta": step.text}, "response.output_text.delta")
    yield sse({"type": "response.output_item.done", "output_index": 0, "item": item}, "response.output_item.done")
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}
    done = {**response, "status": "completed", "output": [item], "usage": usage}
    yield sse({"type": "response.completed", "response": done}, "response.completed")
