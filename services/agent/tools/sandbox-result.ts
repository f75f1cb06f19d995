// How terminal and file tools report: JSON strings, as every tool here returns. A sandbox result
// that did not end normally (timeout, interrupted, degraded) says so with its status and reason;
// a degraded one adds that the command may not have run. Exit codes are always included.
import type { ExecResult, SessionSandbox } from '../../sandbox/index.js';
import type { ToolContext } from './registry.js';

export const NO_SANDBOX = 'No sandbox is configured for this agent (its Profile has no spec.sandbox), so terminal and file tools cannot run here.';
export const DEGRADED_HINT = 'the command may not have run; retry later';

/** A tool error result (`{"error": …}`): the loop counts it as a failed call. */
export const toolError = (error: string, extra: Record<string, unknown> = {}): string => JSON.stringify({ error, ...extra });

/** The session's sandbox, or the error result that says there is none. */
export function sandboxOf(ctx: ToolContext): { sandbox: SessionSandbox } | { error: string } {
  return ctx.sandbox ? { sandbox: ctx.sandbox } : { error: toolError(NO_SANDBOX) };
}

/** The status fields of a sandbox result that did not end normally; empty for `ok`. */
export function abnormal(r: ExecResult): Record<string, unknown> {
  if (r.status === 'ok') return {};
  const reason = r.reason ?? r.status;
  if (r.status === 'degraded') return { status: 'degraded', reason, error: `sandbox degraded: ${reason}; ${DEGRADED_HINT}`, hint: DEGRADED_HINT };
  if (r.status === 'timeout') return { status: 'timeout', reason, error: `command timed out: ${reason}` };
  return { status: 'interrupted', reason, error: `command interrupted: ${reason}` };
}

/**
 * The error result for a file tool's helper command that did not end normally, or undefined when
 * it ran to its end (then its exit code is the tool's to read).
 */
export function helperFailure(r: ExecResult, what: string): string | undefined {
  if (r.status === 'ok') return undefined;
  return JSON.stringify({ ...abnormal(r), exit_code: r.exitCode, error: `${what}: ${String(abnormal(r).error)}` });
}
