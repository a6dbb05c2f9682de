// mcp-memory's OpenClaw plugin: each lifecycle hook runs `mcp-memory hook openclaw <event>`
// with the hook's event and context as JSON on stdin (see mcp_memory/openclaw_hooks.py).
// A hook that fails or times out gives nothing: memory must never break a conversation.
import { spawn } from "node:child_process";

const MAX_MESSAGES = 50; // capture reads the latest messages only

/** Run one hook command; resolves to its stdout ("" on any failure). */
export function runHook(config, event, input, timeoutMs) {
  const args = ["hook", "openclaw", event];
  if (config.workspace) args.push("--workspace", config.workspace);
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(config.command || "mcp-memory", args, { stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      resolve("");
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.on("error", () => { clearTimeout(timer); resolve(""); });
    child.on("close", (code) => { clearTimeout(timer); resolve(code === 0 ? out : ""); });
    child.stdin.on("error", () => {}); // the command may exit before reading everything
    child.stdin.end(JSON.stringify(input));
  });
}

/** The context fields the command reads; nothing else of OpenClaw's context object travels. */
function plainContext(ctx) {
  const out = {};
  for (const name of ["agentId", "sessionKey", "sessionId", "trigger", "workspaceDir", "messageProvider"]) {
    if (typeof ctx?.[name] === "string") out[name] = ctx[name];
  }
  return out;
}

function sessionOf(event, ctx) {
  return ctx?.sessionKey || ctx?.sessionId || event?.sessionId || "";
}

export default {
  id: "mcp-memory",
  name: "mcp-memory",
  description: "Long-term memory from markdown files: recall, capture, compaction rescue, episodes",
  register(api) {
    const config = { ...(api.pluginConfig ?? {}) };
    const promptTimeout = config.promptTimeoutMs ?? 10_000;
    const timeout = config.timeoutMs ?? 60_000;
    const primed = new Set(); // sessions whose pinned rules were given since their start or last compaction
    const run = (event, input, ms = timeout) => runHook(config, event, input, ms);

    api.on("before_prompt_build", async (event, ctx) => {
      const session = sessionOf(event, ctx);
      const first = !primed.has(session);
      primed.add(session);
      const out = await run("prompt", { event: { prompt: event?.prompt ?? "" }, ctx: plainContext(ctx), first },
        promptTimeout);
      try {
        const reply = out ? JSON.parse(out) : {};
        if (typeof reply.prependContext === "string" && reply.prependContext) {
          return { prependContext: reply.prependContext };
        }
      } catch {
        api.logger?.warn?.("mcp-memory: the prompt hook printed something that is not JSON");
      }
      return undefined;
    });

    api.on("agent_end", async (event, ctx) => {
      const messages = Array.isArray(event?.messages) ? event.messages.slice(-MAX_MESSAGES) : [];
      await run("agent-end", { event: { messages, success: event?.success !== false }, ctx: plainContext(ctx) });
    });

    api.on("before_compaction", async (event, ctx) => {
      primed.delete(sessionOf(event, ctx)); // the rules are given again after the compaction
      await run("before-compaction", { event: { sessionFile: event?.sessionFile, messageCount: event?.messageCount },
        ctx: plainContext(ctx) });
    });

    api.on("before_reset", async (event, ctx) => {
      primed.delete(sessionOf(event, ctx));
      await run("before-reset", { event: { sessionFile: event?.sessionFile, reason: event?.reason },
        ctx: plainContext(ctx) });
    });

    api.on("session_end", async (event, ctx) => {
      primed.delete(sessionOf(event, ctx));
      await run("session-end", { event: { sessionId: event?.sessionId }, ctx: plainContext(ctx) });
    });
  },
};
