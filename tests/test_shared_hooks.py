"""A workspace whose hooks serve others (``[privacy] shared_hooks``): no hook reaches a private file.

A group chat's agent or a team bot recalls through the same hooks as the owner's own client. With
the setting on, every process that may answer a hook (the warm process or a server through the
bridge, or the hook itself when none runs) leaves the private files out, as any shared caller.
"""

from __future__ import annotations

from pathlib import Path

from conftest import indexed_memory, write
from mcp_memory.clients.hooks import handle_request, recall_context
from mcp_memory.config import load_settings
from mcp_memory.runtime.bridge import BridgeServer, call_bridge

PRIVATE = "The user's therapist is Dr. Okafor; sessions on Wednesdays."
SHARED = "The team deploys the billing service on Wednesdays."
PROMPT = "Who is the therapist and what happens on Wednesdays with Dr. Okafor?"


def _workspace(root: Path, shared_hooks: bool) -> Path:
    write(root, "MEMORY.md", f"# Memory\n\n- {PRIVATE}\n")
    write(root, "memory/2026-11-20.md", f"# 2026-11-20\n\n- {SHARED}\n")
    write(root, "mcp-memory.toml", f"[privacy]\nshared_hooks = {'true' if shared_hooks else 'false'}\n"
                                   "[warm]\nenabled = false\n")
    return root


def _recalled_paths(reply: dict | None) -> set[str]:
    assert reply is not None
    return {m["path"] for m in reply["memories"]}


def test_a_bridge_answering_hooks_leaves_private_files_out_when_hooks_are_shared(tmp_path: Path) -> None:
    for shared_hooks in (False, True):
        settings = load_settings(_workspace(tmp_path / f"ws-{shared_hooks}", shared_hooks), environ={})
        memory = indexed_memory(settings)
        # As the warm process answers a hook: handle_request with its default (private files included).
        server = BridgeServer(settings.index_dir, lambda request, m=memory: handle_request(m, request)).start()
        try:
            reply = call_bridge(settings.index_dir, {"op": "recall", "prompt": PROMPT}, timeout=15.0)
        finally:
            server.stop()
            memory.close()
        assert ("MEMORY.md" in _recalled_paths(reply)) is not shared_hooks, reply


def test_a_hook_answering_itself_leaves_private_files_out_when_hooks_are_shared(tmp_path: Path) -> None:
    for shared_hooks in (False, True):
        settings = load_settings(_workspace(tmp_path / f"ws-{shared_hooks}", shared_hooks), environ={})
        indexed_memory(settings).close()
        block = recall_context(settings, PROMPT, session=None)  # no server runs: keywords, in this process
        assert ("Okafor" in block) is not shared_hooks, block

