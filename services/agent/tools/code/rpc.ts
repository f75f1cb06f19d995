// The worker's end of a script's channel: each line from hermes_tools is one tool call
// ({"id", "tool", "args"}), answered with one line ({"id", "result"} or {"id", "error"}). Calls run
// one at a time, in order, through runTool — the same validation, handlers and context (sandbox,
// approval guard, checkpoints, SSRF guard) as the model's own calls — and count against the
// script's limit, refused or not.
import { runTool } from '../execute.js';
import type { Tool, ToolContext } from '../registry.js';
import { OMITTED_ARGS } from './python.js';

export class ScriptRpc {
  private chain: Promise<void> = Promise.resolve();
  /** Calls the script asked for (each counts, refused or not). */
  calls = 0;

  constructor(
    private readonly tools: ReadonlyMap<string, Tool>,
    private readonly ctx: ToolContext,
    private readonly maxCalls: number,
    private readonly reply: (line: string) => void,
  ) {}

  /** One line from the script; its answer is sent after every earlier one. */
  onLine(line: string): void {
    this.chain = this.chain.then(async () => this.reply(JSON.stringify(await this.answer(line))));
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
    if (this.calls >= this.maxCalls) return { id, error: `the limit of ${this.maxCalls} tool calls per script was reached; the call was not run` };
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
