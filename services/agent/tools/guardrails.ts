// The tool-loop guard: remembers the turn's last 64 tool calls and steers a model that repeats
// itself. Warnings and notices are appended to the tool result the model sees; a block answers
// the call with an explicit result and the tool does not run; a halt ends the turn after the
// current batch with a clear final message. Hard halts are on only for unattended platforms
// (cron), where nobody is there to notice a loop. Hermes' `agent/tool_guardrails.py` is the
// behaviour reference; the rules and thresholds are SPEC "The turn".
import { createHash } from 'node:crypto';
import type { ToolCall } from '../messages.js';
import type { SideEffect } from './registry.js';

export interface GuardSettings {
  /** Calls remembered; older calls no longer count. @defaultValue 64 */
  window: number;
  /** Same failing call (tool and identical arguments): warn from this failure on. @defaultValue 2 */
  exactFailureWarnAfter: number;
  /** Same failing call: after this many failures the next identical call is blocked. @defaultValue 5 */
  exactFailureBlockAfter: number;
  /** Same tool failing (any arguments): warn from this failure on. @defaultValue 3 */
  sameToolFailureWarnAfter: number;
  /** Same tool failing: halt the turn at this failure (hard halts only). @defaultValue 8 */
  sameToolFailureHaltAfter: number;
  /** Identical (tool, arguments, result) in a row, or laps of a repeating cycle: notice from here on. @defaultValue 3 */
  identicalNoticeAfter: number;
  /** Identical calls or cycle laps: halt the turn here (hard halts only; Hermes does the same). @defaultValue 5 */
  identicalHaltAfter: number;
  /** Longest cycle of calls recognised (A,B,A,B… up to A,B,C,D,A,B,C,D…). @defaultValue 4 */
  maxCyclePeriod: number;
  /** Blocks and halts end the turn. @defaultValue false (the worker sets it for unattended platforms: cron) */
  hardHalt: boolean;
}

export const GUARD_DEFAULTS: Readonly<GuardSettings> = Object.freeze({
  window: 64,
  exactFailureWarnAfter: 2,
  exactFailureBlockAfter: 5,
  sameToolFailureWarnAfter: 3,
  sameToolFailureHaltAfter: 8,
  identicalNoticeAfter: 3,
  identicalHaltAfter: 5,
  maxCyclePeriod: 4,
  hardHalt: false,
});

/** What the guard needs to know about the tool a call names. */
export interface GuardedTool {
  sideEffect: SideEffect;
  /** Failing runs are normal work output (red tests, non-zero exits): warnings only. */
  terminalLike?: boolean;
}

/** How a call that ran ended. */
export interface GuardObservation {
  content: string;
  failed: boolean;
  /** A failure the tool reported as a rate limit (429): not counted. */
  rateLimited?: boolean;
}

/** Why the guard ended the turn. */
export interface GuardHalt {
  code: string;
  tool: string;
  count: number;
  /** What happened, in words (part of the final message). */
  reason: string;
}

interface Entry {
  sig: string;
  tool: string;
  failed: boolean;
  /** A side-effecting call succeeded: the next retry of a failing call is a new attempt. */
  progress: boolean;
  result: string;
}

/** Two successful calls with identical arguments and identical results. */
const same = (a: Entry, b: Entry) => !a.failed && !b.failed && a.sig === b.sig && a.result === b.result;

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  return v;
}

/** Tool name plus arguments with keys sorted: `{"a":1,"b":2}` and `{"b":2,"a":1}` are one call. */
export function callSignature(call: Pick<ToolCall, 'name' | 'arguments'>): string {
  let args: string;
  try {
    args = JSON.stringify(canonical(JSON.parse(call.arguments.trim() || '{}')));
  } catch {
    args = call.arguments.trim();
  }
  return sha(`${call.name}\u0000${args}`);
}

const ordinal = (n: number) => `${n}${n % 100 >= 11 && n % 100 <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th'}`;

export class ToolLoopGuard {
  readonly settings: Readonly<GuardSettings>;
  private readonly history: Entry[] = [];
  private halted: GuardHalt | undefined;

  constructor(settings: Partial<GuardSettings> = {}) {
    this.settings = Object.freeze({ ...GUARD_DEFAULTS, ...settings });
  }

  /** Set once a block or halt ended the turn (hard halts only). */
  get halt(): GuardHalt | undefined {
    return this.halted;
  }

  /** Before a call runs: the explicit result that replaces it when it is blocked. */
  before(call: ToolCall, tool: GuardedTool | undefined): string | undefined {
    if (!tool || tool.terminalLike) return undefined;
    const sig = callSignature(call);
    const count = this.failures((e) => e.sig === sig);
    if (count < this.settings.exactFailureBlockAfter) return undefined;
    const message = `Blocked ${call.name}: the same call failed ${count} times with identical arguments, so it was not run again. Stop retrying it unchanged: change your approach or explain the blocker.`;
    this.stop({ code: 'repeated_exact_failure_block', tool: call.name, count, reason: `${call.name} failed ${count} times with the same arguments` });
    return JSON.stringify({ error: message, guardrail: { action: 'block', code: 'repeated_exact_failure_block', tool: call.name, count } });
  }

  /** After a call ran: what to append to its result for the model ('' for nothing). */
  after(call: ToolCall, tool: GuardedTool | undefined, obs: GuardObservation): string {
    if (!tool || obs.rateLimited) return '';
    const sig = callSignature(call);
    this.history.push({ sig, tool: call.name, failed: obs.failed, progress: !obs.failed && tool.sideEffect !== 'read-only', result: sha(obs.content) });
    if (this.history.length > this.settings.window) this.history.shift();
    // Failures have their own counters; the repetition rules are about calls that "worked".
    const line = obs.failed ? this.failureLine(call.name, sig, tool) : this.repetitionLine(call.name, tool);
    return line ? `\n\n${line}` : '';
  }

  /** Failures matching `match` since the last success of a matching call or any side-effecting success. */
  private failures(match: (e: Entry) => boolean): number {
    let n = 0;
    for (let i = this.history.length - 1; i >= 0; i--) {
      const e = this.history[i]!;
      if (e.progress || (match(e) && !e.failed)) break;
      if (match(e)) n++;
    }
    return n;
  }

  private failureLine(name: string, sig: string, tool: GuardedTool): string | undefined {
    const s = this.settings;
    const exact = this.failures((e) => e.sig === sig);
    const same = this.failures((e) => e.tool === name);
    if (s.hardHalt && !tool.terminalLike && same >= s.sameToolFailureHaltAfter) {
      this.stop({ code: 'same_tool_failure_halt', tool: name, count: same, reason: `${name} failed ${same} times this turn` });
      return `[tool-loop halt: ${name} failed ${same} times this turn; the turn ends here.]`;
    }
    if (exact >= s.exactFailureWarnAfter) {
      return `[tool-loop warning: ${name} failed ${exact} times with these same arguments. This looks like a loop: read the error and change your approach instead of retrying the call unchanged.]`;
    }
    if (same >= s.sameToolFailureWarnAfter) {
      return `[tool-loop warning: ${name} failed ${same} times this turn. Diagnose before retrying: check the latest error and your assumptions, then try different arguments or another tool; if the blocker is outside your reach, say so.]`;
    }
    return undefined;
  }

  /** The notice for identical calls in a row, or for a repeating cycle of calls. */
  private repetitionLine(name: string, tool: GuardedTool): string | undefined {
    const s = this.settings;
    const streak = this.streak();
    const cycle = streak >= s.identicalNoticeAfter ? undefined : this.cycle();
    const count = cycle ? cycle.laps : streak;
    if (count < s.identicalNoticeAfter) return undefined;
    const code = cycle ? 'identical_cycle_halt' : 'identical_call_streak_halt';
    const what = cycle
      ? `the last ${cycle.laps} rounds repeated the same cycle of ${cycle.period} tool calls (ending with ${name}) with identical arguments and identical results`
      : `this is the ${ordinal(streak)} identical call to ${name} in a row, with the same arguments and the same result`;
    if (s.hardHalt && !tool.terminalLike && count >= s.identicalHaltAfter) {
      this.stop({ code, tool: name, count, reason: cycle ? `a cycle of ${cycle.period} calls ending with ${name} repeated ${count} times unchanged` : `${name} returned the same result ${count} times in a row` });
      return `[tool-loop halt: ${what}; the turn ends here.]`;
    }
    return `[tool-loop notice: ${what}. Do not repeat it: change the arguments, use another tool, or go on with what you have.]`;
  }

  /** Identical successful (signature, result) entries at the end of the history. */
  private streak(): number {
    const h = this.history;
    const last = h.at(-1);
    let n = 0;
    for (let i = h.length - 1; i >= 0 && last && same(h[i]!, last); i--) n++;
    return n;
  }

  /** The shortest period (2…max) whose last laps repeat identically, with how many laps did. */
  private cycle(): { period: number; laps: number } | undefined {
    const h = this.history;
    for (let period = 2; period <= this.settings.maxCyclePeriod; period++) {
      let laps = 1;
      const lapEqual = (base: number) => Array.from({ length: period }, (_, i) => i).every((i) => same(h[base + i]!, h[h.length - period + i]!));
      while (h.length - period * (laps + 1) >= 0 && lapEqual(h.length - period * (laps + 1))) laps++;
      if (laps >= this.settings.identicalNoticeAfter) return { period, laps };
    }
    return undefined;
  }

  private stop(halt: GuardHalt): void {
    if (this.settings.hardHalt) this.halted ??= halt;
  }
}

/** The turn's final message after a halt; `partial` is what the model said with its last calls. */
export function haltReply(halt: GuardHalt, partial: string): string {
  const tail = partial.trim() ? ` Partial answer: ${partial}` : '';
  return `I stopped: ${halt.reason}, so the tool-loop guard ended this turn (${halt.code}). The last tool result shows the blocker; change the request or remove the blocker, then ask again.${tail}`;
}
