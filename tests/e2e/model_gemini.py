"""A scripted model speaking the Gemini API (Gemini CLI, through ``GOOGLE_GEMINI_BASE_URL``).

``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` answers with Server-Sent Events,
each a ``GenerateContentResponse`` (``candidates[0].content.parts``); a tool call is a
``functionCall`` part, answered by the client with a ``functionResponse`` part. Other calls
(``:generateContent``, which Gemini CLI uses for its own JSON side questions such as "who
speaks next", and ``:countTokens``) get a plain answer: a JSON object when JSON is asked for.
``stream_requests()`` lists the bodies of the streaming requests (the conversation).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .model_script import Exchange, ModelServer, Reply, Script, Step, ToolCall, route, sse

# The answer to Gemini CLI's side questions asked for as JSON: who speaks next, which model routes.
SIDE_ANSWER = {"reasoning": "The scripted model has finished its turn.", "next_speaker": "user",
               "model_choice": "flash"}


class GeminiModel(ModelServer):
    def __init__(self, script: Script):
        self.script = script
        super().__init__(self._answer)

    def stream_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if ":streamGenerateContent" in route(r.path)]

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any] | Iterator[bytes]:
        where = route(path)
        if where.endswith(":countTokens"):
            self.record(path, body, None)
            return {"totalTokens": max(1, len(json.dumps(body)) // 4)}
        exchange = read_exchange(body)
        self.record(path, body, exchange)
        if ":streamGenerateContent" in where:
            return iter([sse(_response(self.script.step_for(exchange)))])
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            return _response(Reply(json.dumps(SIDE_ANSWER)))
        return _response(Reply("OK."))


def read_exchange(body: dict[str, Any]) -> Exchange:
    rounds = 0
    prompt = ""
    for content in reversed(body.get("contents") or []):
        parts = [part for part in content.get("parts") or [] if isinstance(part, dict)]
        if content.get("role") == "model":
            rounds += any("functionCall" in part for part in parts)
        elif not any("functionResponse" in part for part in parts):
            prompt = "\n".join(str(part.get("text", "")) for part in parts)
            break
    tools = tuple(str(declaration.get("name", "")) for tool in body.get("tools") or []
                  for declaration in tool.get("functionDeclarations") or [])
    return Exchange(prompt=prompt, rounds=rounds, tools=tools)


def _response(step: Step) -> dict[str, Any]:
    if isinstance(step, ToolCall):
        part: dict[str, Any] = {"functionCall": {"name": step.name, "args": step.arguments}}
    else:
        part = {"text": step.text}
    return {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
            "modelVersion": "gemini-2.5-flash"}
