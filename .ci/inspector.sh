#!/usr/bin/env bash
# CI: drive the stdio MCP server with the official MCP Inspector CLI (pinned), as a third-party client.
#
# The Inspector is installed once into a scratch folder outside the repository (reused on later
# runs), with HOME pointed at a scratch dir so ~/.npm and ~/.mcp-inspector stay untouched.
# The server runs with the Python of the active virtualenv (the one .ci/run activated) on a
# throw-away workspace with one note. Exit status: 0 when every call succeeded and printed what
# it should, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

INSPECTOR_VERSION="2.12.0"
PYTHON="$(command -v python)"  # the active virtualenv's python
SCRATCH="${MCP_MEMORY_CI_SCRATCH:-${TMPDIR:-/tmp}/mcp-memory-ci-inspector}"
INSTALL_DIR="$SCRATCH/inspector-$INSPECTOR_VERSION"
INSPECTOR="$INSTALL_DIR/node_modules/.bin/inspector"

command -v npm >/dev/null || { echo "inspector: npm not found (Node.js is required)" >&2; exit 1; }
"$PYTHON" -c "import mcp_memory" || { echo "inspector: mcp_memory is not importable by $PYTHON" >&2; exit 1; }

export HOME="$SCRATCH/home"
export npm_config_cache="$HOME/.npm"
export npm_config_update_notifier=false
mkdir -p "$HOME" "$INSTALL_DIR"
# No user settings leak into the server under test.
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^MCP_MEMORY_' || true)
# Each Inspector call spawns a stdio front; the warm process behind it goes seconds after the last.
export MCP_MEMORY_WARM_IDLE_MINUTES=0.05

installed_version() {
    "$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
        "$INSTALL_DIR/node_modules/@modelcontextprotocol/inspector/package.json" 2>/dev/null || true
}
if [ "$(installed_version)" != "$INSPECTOR_VERSION" ] || [ ! -x "$INSPECTOR" ]; then
    echo "inspector: installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION into $INSTALL_DIR"
    [ -f "$INSTALL_DIR/package.json" ] || echo '{"name": "mcp-memory-ci-inspector", "private": true}' > "$INSTALL_DIR/package.json"
    (cd "$INSTALL_DIR" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
        "@modelcontextprotocol/inspector@$INSPECTOR_VERSION")
fi
[ "$(installed_version)" = "$INSPECTOR_VERSION" ] || { echo "inspector: install failed" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-memory-inspector.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
WS="$WORK/ws"
mkdir -p "$WS/memory"
printf '# Preferences\n\nThe user prefers pnpm over npm and yarn.\n' > "$WS/MEMORY.md"
printf '# 2026-11-20\n\nDeployed the zebracorn service to staging.\n' > "$WS/memory/2026-11-20.md"

SERVER=("$PYTHON" -m mcp_memory serve --workspace "$WS" --embedder none)
TIMEOUT=()
command -v timeout >/dev/null && TIMEOUT=(timeout 180)

failures=0
n=0
# check KIND -- INSPECTOR-ARGS...: run one Inspector call; it must exit 0 and its JSON must pass KIND.
check() {
    local kind="$1"; shift 2
    n=$((n + 1))
    local out="$WORK/call$n.json" err="$WORK/call$n.err" rc=0 summary
    "${TIMEOUT[@]}" "$INSPECTOR" --cli "${SERVER[@]}" "$@" >"$out" 2>"$err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "FAIL $kind: inspector exited with $rc"
        echo "  args: $*"; sed 's/^/  stdout: /' "$out" | head -40; sed 's/^/  stderr: /' "$err" | tail -20
        failures=$((failures + 1))
        return 0
    fi
    if summary="$("$PYTHON" - "$kind" "$out" <<'PY' 2>&1
import json, sys

kind, path = sys.argv[1], sys.argv[2]
data = json.load(open(path, encoding="utf-8"))
expected_tools = {"memory_search", "memory_get", "memory_store", "memory_forget", "memory_recall", "memory_status"}

if kind == "tools/list":
    names = {t["name"] for t in data["tools"]}
    assert expected_tools <= names, f"missing tools: {sorted(expected_tools - names)}"
    summary = f"{len(names)} tools: {', '.join(sorted(names))}"
elif kind == "tools/call":
    assert data.get("isError") is False, data
    hits = data["structuredContent"]["results"]
    assert hits, "no hits"
    top = hits[0]
    assert top["path"] == "MEMORY.md" and "pnpm" in top["snippet"], top
    assert top["citation"].startswith("MEMORY.md#L"), top
    assert top["citation"] in data["content"][0]["text"], "text content lacks the citation"
    summary = f"{len(hits)} hit(s), top {top['citation']}"
elif kind in ("prompts/get", "prompts/get+memories"):
    (message,) = data["messages"]
    assert message["role"] == "user", message
    text = message["content"]["text"]
    assert "pnpm" in text, text
    if kind == "prompts/get+memories":
        assert "<relevant-memories>" in text and 'source="MEMORY.md#L' in text, text
        assert "pnpm over npm" in text, text
    summary = f"1 user message, {len(text)} chars" + (", cites MEMORY.md" if "MEMORY.md#L" in text else "")
elif kind == "resources/read":
    (content,) = data["contents"]
    assert content["uri"] == "memory://files", content
    # An earlier call that did work left its session's episode under memory/episodes/.
    files = {f["path"] for f in json.loads(content["text"]) if not f["path"].startswith("memory/episodes/")}
    assert files == {"MEMORY.md", "memory/2026-11-20.md"}, files
    summary = f"files: {', '.join(sorted(files))}"
else:
    raise SystemExit(f"unknown check {kind}")
print(summary)
PY
)"; then
        echo "ok   $kind: $summary"
    else
        echo "FAIL $kind: unexpected output"
        echo "  args: $*"; echo "$summary" | sed 's/^/  check: /' | tail -10; sed 's/^/  stdout: /' "$out" | head -40
        failures=$((failures + 1))
    fi
}

echo "inspector: @modelcontextprotocol/inspector@$INSPECTOR_VERSION (node $(node --version)) against: python -m mcp_memory serve --embedder none"
check tools/list -- --method tools/list
check tools/call -- --method tools/call --tool-name memory_search --tool-arg query=pnpm
check prompts/get -- --method prompts/get --prompt-name recall --prompt-args message=pnpm
# A message of 5+ characters: the recall block with the cited memory comes first.
check prompts/get+memories -- --method prompts/get --prompt-name recall \
    --prompt-args "message=Which package manager does the user prefer, pnpm?"
check resources/read -- --method resources/read --uri memory://files

if [ "$failures" -ne 0 ]; then
    echo "inspector: $failures of $n calls failed"
    exit 1
fi
echo "inspector: all $n calls passed"
