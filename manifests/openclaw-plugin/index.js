// mcp-memory's OpenClaw plugin: each lifecycle hook runs `mcp-memory hook openclaw <event>` with the
// hook's event and context as JSON on stdin (see mcp_memory/clients/openclaw_hooks.py). A hook that fails or
// times out gives nothing: memory must never break a conversation.
//
// What OpenClaw hands over is what is read: OpenClaw 2026.9 keeps sessions in SQLite, so the messages
// of `agent_end` and `before_reset` travel to the command (bounded), and the latest ones of a session
// are kept here for the hooks that carry none (`before_compaction`, `session_end`).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

// OpenClaw's own budgets: 15 s for before_prompt_build, 30 s for agent_end and before_compaction,
// about 2 s in all to drain session_end at shutdown (which therefore hands its work off and returns).
export const DEFAULT_PROMPT_TIMEOUT_MS = 10_000;
export const DEFAULT_TIMEOUT_MS = 25_000;
const MAX_PROMPT_TIMEOUT_MS = 14_000; // a longer configured wait is cut to these: past them OpenClaw has
const MAX_TIMEOUT_MS = 29_000; // given up on the hook anyway
export const LIMITS = { messages: 400, bytes: 2_000_000, textChars: 16_000, sessions: 64 };
const CONVERSATION_HOOKS = ["before_prompt_build", "agent_end"];
const KEPT_ROLES = new Set(["user", "assistant", "toolResult"]);
// The variables OpenClaw passes on from its own environment to an MCP server: the hooks get the same
// (plus the server entry's `env`), so server and hooks compute the same settings.
const BASE_ENV = ["HOME", "USER", "LOGNAME", "PATH", "SHELL", "TERM", "PWD", "TMPDIR", "TZ", "LANG", "LANGUAGE",
  "SYSTEMROOT", "APPDATA", "LOCALAPPDATA", "USERPROFILE"];

/** The environment of the hook command: OpenClaw's MCP server entry's, when there is one. */
export function hookEnvironment(pluginConfig, openclawConfig, env = process.env) {
  const server = openclawConfig?.mcp?.servers?.[pluginConfig?.server ?? "memory"];
  if (!server || typeof server !== "object") return { ...env };
  const out = {};
  for (const [name, value] of Object.entries(env)) {
    if (BASE_ENV.includes(name) || name.startsWith("LC_")) out[name] = value;
  }
  for (const [name, value] of Object.entries(server.env ?? {})) {
    if (typeof value === "string") out[name] = value;
  }
  return out;
}

/** The hooks OpenClaw will block for this plugin, read from its config (empty: none). */
export function blockedHooks(pluginId, openclawConfig) {
  const policy = openclawConfig?.plugins?.entries?.[pluginId]?.hooks ?? {};
  if (policy.allowConversationAccess !== true) return CONVERSATION_HOOKS;
  return policy.allowPromptInjection === false ? ["before_prompt_build"] : [];
}

/** A message as the command reads it: its text bounded, OpenClaw's bookkeeping left out. */
function slimMessage(message) {
  const out = {};
  for (const name of ["role", "timestamp", "toolCallId", "toolName", "isError"]) {
    if (message[name] !== undefined) out[name] = message[name];
  }
  const content = message.content;
  if (typeof content === "string") out.content = content.slice(0, LIMITS.textChars);
  else if (Array.isArray(content)) {
    out.content = content.filter((block) => block && typeof block === "object").map((block) =>
      typeof block.text === "string" ? { ...block, text: block.text.slice(0, LIMITS.textChars) }
        : block.type === "toolCall" ? block : { type: block.type });
  }
  const structured = message.details?.result?.details?.structuredContent ?? message.details?.structuredContent;
  const tool = message.details?.tool?.mcp;
  if (structured !== undefined || tool !== undefined) {
    const text = JSON.stringify(structured ?? null);
    out.details = { mcp: tool, structuredContent: text.length <= LIMITS.textChars ? structured : null };
  }
  return out;
}

/** The latest messages of a session that fit the limits (oldest dropped first). */
export function boundedMessages(messages) {
  if (!Array.isArray(messages)) return [];
  const kept = messages.filter((m) => m && typeof m === "object" && KEPT_ROLES.has(m.role))
    .slice(-LIMITS.messages).map(slimMessage);
  let bytes = kept.reduce((sum, m) => sum + JSON.stringify(m).length, 0);
  while (kept.length && bytes > LIMITS.bytes) bytes -= JSON.stringify(kept.shift()).length;
  return kept;
}

/** Run one hook command; resolves to its stdout ("" on any failure or timeout).
 *  With `keepRunning`, a command still working at the timeout is left to finish (its writes are not lost). */
export function runHook(command, args, input, { env, timeoutMs, keepRunning = false, logger } = {}) {
  return new Promise((resolve) => {
    let out = "";
    let done = false;
    const finish = (value) => { if (!done) { done = true; resolve(value); } };
    let child;
    try {
      child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env });
    } catch (error) {
      logger?.warn?.(`mcp-memory: cannot run ${command}: ${error.message}`);
      finish("");
      return;
    }
    const timer = setTimeout(() => {
      logger?.warn?.(`mcp-memory: ${args[2]} took longer than ${timeoutMs} ms; going on without it`);
      if (keepRunning) child.unref(); else child.kill("SIGKILL");
      finish("");
    }, timeoutMs);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => forwardLog(chunk, logger));
    child.on("error", (error) => {
      clearTimeout(timer);
      logger?.warn?.(`mcp-memory: cannot run ${command}: ${error.message}`);
      finish("");
    });
    child.on("close", (code) => { clearTimeout(timer); finish(code === 0 ? out : ""); });
    child.stdin.on("error", () => {}); // the command may exit before reading everything
    child.stdin.end(JSON.stringify(input));
  });
}

function forwardLog(chunk, logger) {
  for (const line of chunk.split("\n")) {
    if (line.trim()) logger?.warn?.(line.slice(0, 2000));
  }
}

/** Start the hook command detached, its input in a file it holds open, and return at once: the work
 *  goes on after OpenClaw exits (its session_end drain at shutdown is about 2 s). */
export function handOff(command, args, input, { env, logger } = {}) {
  let dir;
  let fd;
  try {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "mcp-memory-hook-"));
    const file = path.join(dir, "input.json");
    fs.writeFileSync(file, JSON.stringify(input), { mode: 0o600 });
    fd = fs.openSync(file, "r");
    const child = spawn(command, args, { stdio: [fd, "ignore", "ignore"], env, detached: true });
    child.on("error", (error) => logger?.warn?.(`mcp-memory: cannot run ${command}: ${error.message}`));
    child.unref();
    return true;
  } catch (error) {
    logger?.warn?.(`mcp-memory: cannot hand ${args[2]} off: ${error.message}`);
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
    // The child holds the file open; removing its name now leaves nothing behind.
    if (dir) try { fs.rmSync(dir, { recursive: true, force: true }); } catch { /* Windows: still open */ }
  }
}

/** What the plugin remembers of each session: when it began (its first message), whether its rules were
 *  given, its latest messages. A reset or end forgets it; at most LIMITS.sessions, least recently used first. */
export class Sessions {
  constructor(limit = LIMITS.sessions) { this.limit = limit; this.map = new Map(); }

  get(key) {
    let entry = this.map.get(key);
    if (entry) this.map.delete(key);
    else entry = { startedAt: null, primed: false, messages: null };
    this.map.set(key, entry);
    while (this.map.size > this.limit) this.map.delete(this.map.keys().next().value);
    return entry;
  }

  /** The entry, its start taken from the session's first message when not known yet. */
  seen(key, messages) {
    const entry = this.get(key);
    entry.startedAt ??= firstTimestamp(messages);
    return entry;
  }

  end(key) { const entry = this.map.get(key); this.map.delete(key); return entry; }
}

// One memory of sessions per Gateway process: OpenClaw may register the plugin again (a config
// reload replaces its instance) while sessions go on.
const SESSIONS = Symbol.for("mcp-memory.openclaw.sessions");

/** The context fields the command reads; nothing else of OpenClaw's context object travels. */
function plainContext(ctx, entry) {
  const out = {};
  for (const name of ["agentId", "sessionKey", "sessionId", "trigger", "workspaceDir", "messageProvider"]) {
    if (typeof ctx?.[name] === "string") out[name] = ctx[name];
  }
  if (typeof entry?.startedAt === "number") out.sessionStartedAt = entry.startedAt;
  return out;
}

function sessionOf(event, ctx) {
  return ctx?.sessionKey || event?.sessionKey || ctx?.sessionId || event?.sessionId || "";
}

function firstTimestamp(messages) {
  const first = Array.isArray(messages) ? messages.find((m) => KEPT_ROLES.has(m?.role)) : undefined;
  return typeof first?.timestamp === "number" ? first.timestamp : null;
}

/** How the hooks reach the command: the program, its arguments per event, the environment, the waits. */
function commandRunner(config, api) {
  const logger = api.logger;
  const command = config.command || "mcp-memory";
  const args = (event) => [...(config.args ?? []), "hook", "openclaw", event,
    ...(config.workspace ? ["--workspace", config.workspace] : []), ...(config.options ?? [])];
  const env = hookEnvironment(config, api.config);
  const timeout = Math.min(config.timeoutMs ?? DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS);
  return {
    logger,
    promptTimeout: Math.min(config.promptTimeoutMs ?? DEFAULT_PROMPT_TIMEOUT_MS, MAX_PROMPT_TIMEOUT_MS),
    run: (event, input, ms = timeout, keepRunning = true) =>
      runHook(command, args(event), input, { env, timeoutMs: ms, keepRunning, logger }),
    handOff: (event, input) => handOff(command, args(event), input, { env, logger }),
  };
}

function warnWhenBlocked(api) {
  const blocked = blockedHooks(api.id ?? "mcp-memory", api.config);
  if (blocked.length && (api.registrationMode ?? "full") === "full" && api.config) {
    api.logger?.warn?.(`mcp-memory: OpenClaw blocks ${blocked.join(" and ")} for this plugin, so memory is ` +
      "neither recalled before prompts nor captured after runs. Set plugins.entries.mcp-memory.hooks." +
      "allowConversationAccess to true in ~/.openclaw/openclaw.json (mcp-memory setup openclaw does).");
  }
}

function onPrompt(api, runner, sessions) {
  api.on("before_prompt_build", async (event, ctx) => {
    const entry = sessions.get(sessionOf(event, ctx));
    const first = !entry.primed;
    entry.primed = true;
    const out = await runner.run("prompt", { event: { prompt: event?.prompt ?? "" }, ctx: plainContext(ctx, entry),
      first }, runner.promptTimeout, false);
    try {
      const reply = out ? JSON.parse(out) : {};
      if (typeof reply.prependContext === "string" && reply.prependContext) {
        return { prependContext: reply.prependContext };
      }
    } catch {
      runner.logger?.warn?.("mcp-memory: the prompt hook printed something that is not JSON");
    }
    return undefined;
  });
}

function onRunAndCompaction(api, runner, sessions) {
  api.on("agent_end", async (event, ctx) => {
    const entry = sessions.seen(sessionOf(event, ctx), event?.messages);
    const messages = boundedMessages(event?.messages);
    entry.messages = messages;
    await runner.run("agent-end", { event: { messages, success: event?.success !== false },
      ctx: plainContext(ctx, entry) });
  });

  api.on("before_compaction", async (event, ctx) => {
    const entry = sessions.seen(sessionOf(event, ctx), event?.messages);
    entry.primed = false; // the rules are given again after the compaction
    const messages = event?.messages ? boundedMessages(event.messages) : entry.messages;
    await runner.run("before-compaction", { event: { messages, sessionFile: event?.sessionFile,
      messageCount: event?.messageCount }, ctx: plainContext(ctx, entry) });
  });
}

function onSessionEnds(api, runner, sessions) {
  api.on("before_reset", async (event, ctx) => {
    const key = sessionOf(event, ctx);
    const entry = event?.messages ? sessions.seen(key, event.messages) : sessions.get(key);
    sessions.end(key);
    const messages = event?.messages ? boundedMessages(event.messages) : entry.messages;
    await runner.run("before-reset", { event: { messages, sessionFile: event?.sessionFile, reason: event?.reason },
      ctx: plainContext(ctx, entry) });
  });

  api.on("session_end", async (event, ctx) => {
    const entry = sessions.end(sessionOf(event, ctx));
    if (!entry?.messages && !event?.sessionFile) return; // nothing left to record (a reset already did)
    runner.handOff("session-end", { event: { messages: entry?.messages, sessionFile: event?.sessionFile,
      sessionId: event?.sessionId, reason: event?.reason }, ctx: plainContext({ ...event, ...ctx }, entry) });
  });
}

export default {
  id: "mcp-memory",
  name: "mcp-memory",
  description: "Long-term memory from markdown files: recall, capture, compaction rescue, episodes",
  register(api) {
    const runner = commandRunner({ ...(api.pluginConfig ?? {}) }, api);
    const sessions = (globalThis[SESSIONS] ??= new Sessions());
    warnWhenBlocked(api);
    onPrompt(api, runner, sessions);
    onRunAndCompaction(api, runner, sessions);
    onSessionEnds(api, runner, sessions);
  },
};
