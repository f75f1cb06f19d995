// The worker's end of a script's channel: each line from hermes_tools is one tool call
// ({"id", "tool", "args"}), answered with one line ({"id", "result"} or {"id", "error"}). Calls run
// one at a time, in order, through runTool — the same validation, handlers and context (sandbox,
// approval guard, checkpoints, SSRF guard) as the model's own calls — and count against the
// script's limit, refused or not.
import { runTool } from '../execute.js';
import type { Tool, ToolContext } from '../registry.js';
import { OMITTED_ARGS } from './python.js';

/**
 * Requests the script may have sent and not yet had answered. hermes_tools sends one and waits for
 * its answer (under a lock), so a script past this is not reading its answers: each waiting line
 * and each unread answer is memory of the worker, which every session shares.
 */
export const MAX_WAITING_REQUESTS = 8;
/** Requests refused for the call limit after which the script is ended (a loop that ignores ToolError). */
export const MAX_REFUSED_PAST_LIMIT = 50;

export class ScriptRpc {
  private chain: Promise<void> = Promise.resolve();
  /** Calls the script asked for (each counts, refused or not). */
  calls = 0;
  private received = 0;
  private answered = 0;
  private pastLimit = 0;
  /** Why the script was stopped for flooding the channel, once it was. */
  stopped: string | undefined;

  constructor(
    private readonly tools: ReadonlyMap<string, Tool>,
    private readonly ctx: ToolContext,
    private readonly maxCalls: number,
    private readonly reply: (line: string) => void,
    /** Ends the script (its channel): called once, with the reason, when it floods the channel. */
    private readonly stop: (reason: string) => void = () => {},
  ) {}

  /** One line from the script; its answer is sent after every earlier one. */
  onLine(line: string): void {
    if (this.stopped) return;
    this.received++;
    if (this.received - this.answered > MAX_WAITING_REQUESTS) {
      this.halt(`it sent more than ${MAX_WAITING_REQUESTS} tool requests without reading the answers (hermes_tools sends one at a time)`);
      return;
    }
    this.chain = this.chain.then(async () => {
      const answer = await this.answer(line);
      this.answered++;
      if (!this.stopped) this.reply(JSON.stringify(answer));
    });
  }

  /** The refusal of a call past the limit; the script is ended after too many of them. */
  private refusePastLimit(): string {
    if (++this.pastLimit > MAX_REFUSED_PAST_LIMIT) this.halt(`it kept calling tools after the limit of ${this.maxCalls} (${MAX_REFUSED_PAST_LIMIT} more calls refused)`);
    return `the limit of ${this.maxCalls} tool calls per script was reached; the call was not run`;
  }

  private halt(reason: string): void {
    this.stopped = `The script was ended: ${reason}.`;
    this.stop(this.stopped);
  }

  /** Settles once every call asked for so far was answered. */
  idle(): Promise<void> {
    return this.chain;
  }

  private async answer(line: string): Promise<{ id: unknown; result?: string; error?: string }> {
    let msg: { id?: unknown; tool?: unknown; args?: unknown };
    try {
      msg = JSON.parse(line) as typeof msg;
    } catch {
      return { id: null, error: 'not a JSON request: hermes_tools sends {"id", "tool", "args"}' };
    }
    const id = msg.id ?? null;
    if (this.ctx.signal.aborted) return { id, error: 'the script is ending; the call was not run' };
    if (this.calls >= this.maxCalls) return { id, error: this.refusePastLimit() };
    this.calls++;
    const name = typeof msg.tool === 'string' ? msg.tool : '';
    const tool = this.tools.get(name);
    if (!tool) return { id, error: `${name || '(no tool)'} cannot be called from a script here; available: ${[...this.tools.keys()].join(', ') || 'none'}` };
    const args = msg.args && typeof msg.args === 'object' && !Array.isArray(msg.args) ? (msg.args as Record<string, unknown>) : {};
    const omitted = (OMITTED_ARGS[name] ?? []).filter((a) => args[a] !== undefined && args[a] !== false);
    if (omitted.length) return { id, error: `${name} from a script does not take ${omitted.join(', ')} (terminal runs in the foreground only)` };
    const outcome = await runTool(this.tools, { id: `script-${String(id)}`, name, arguments: JSON.stringify(args) }, this.ctx);
    if (outcome.kind === 'invalid') return { id, error: outcome.content };
    return { id, result: outcome.content };
  }
}
