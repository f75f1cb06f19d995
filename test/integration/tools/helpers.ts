// Calling tools as the loop does (runTool: argument parsing, schema, handler) with a real sandbox
// (test/support/sandbox.ts) and a command guard that records what it was asked.
import { randomUUID } from 'node:crypto';
import { runTool, type CommandGuard, type GuardDecision, type Tool, type ToolContext, type ToolOutcome } from '../../../services/agent/index.js';

export interface RecordingGuard extends CommandGuard {
  asked: string[];
}

/** Allows every command except those `deny` matches (then answers with the approvals' wording). */
export function recordingGuard(deny: (command: string) => boolean = () => false): RecordingGuard {
  const asked: string[] = [];
  return {
    asked,
    check(command): Promise<GuardDecision> {
      asked.push(command);
      return Promise.resolve(deny(command) ? { allowed: false, message: `BLOCKED: ${command} was denied. Silence is not consent.` } : { allowed: true, via: 'test' });
    },
  };
}

export function toolContext(over: Partial<ToolContext> = {}): ToolContext {
  return { sessionId: randomUUID(), signal: new AbortController().signal, now: () => Date.now(), ...over };
}

/** Runs one call of `tool` with `args` (an object, or raw JSON text) and returns the outcome. */
export function call(tool: Tool, args: unknown, ctx: ToolContext): Promise<ToolOutcome> {
  return runTool(new Map([[tool.name, tool]]), { id: randomUUID(), name: tool.name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }, ctx);
}

/** The outcome's content as JSON. */
export async function callJson(tool: Tool, args: unknown, ctx: ToolContext): Promise<Record<string, unknown>> {
  const o = await call(tool, args, ctx);
  try {
    return JSON.parse(o.content) as Record<string, unknown>;
  } catch {
    throw new Error(`${tool.name} did not return JSON (${o.kind}): ${o.content}`);
  }
}
