// Slash commands answered by the gateway, out of band: at admission, whatever runs in the session,
// so they never wait behind a running turn (core/commands.ts lists which are answered here and
// which run as the session's own turn). Each is admitted and answered in one transaction
// (admitAnswered): the reply goes through the delivery ledger like any other, and a retried
// platform event is answered once. Answers name commands as users of the platform write them.
import {
  commandAllowed, commandWord, COMMANDS, recordSignal, sessionActivity, sessionUsage, sessionUsageText, startNewSession,
  stopSubagents, unavailableCommand, type AdmitInput, type AgentRecord, type AnswerFn, type ParsedCommand, type Permissions, type SessionActivity, type SessionSignal, type Sql,
} from '../core/index.js';
import { readSkillCatalog } from '../agent/index.js';
import type { GatewayContext } from './context.js';
import { kanbanAnswer } from './kanban-command.js';

/** What the gateway does with a command: answer it now, or admit it (possibly rewritten) for a turn. */
export type CommandAction =
  | {
    kind: 'answer'; reply: string | AnswerFn; /** Signals to announce once the answer is committed. */ signals?: SessionSignal[];
    /** The answer rebinds the session key (`/new`): admitted with the key locked, see AnswerOptions. */
    rebindsKey?: boolean;
  }
  | { kind: 'admit'; content: string; /** Skip the busy policy (`/queue`). */ queue: boolean };

export interface CommandCall {
  ctx: GatewayContext;
  agent: AgentRecord;
  input: AdmitInput;
  command: ParsedCommand;
  /** The sender's permissions (team mode): /whoami says them. */
  perms: Permissions;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** `/help`: the commands the sender may use (team mode, `perms`: the same gate as inbound.ts), as their platform writes them. */
function helpText(platform: string, perms: Permissions): string {
  const line = (c: (typeof COMMANDS)[number]) => `${commandWord(platform, c.name)}${c.args ? ` ${c.args}` : ''}${c.aliases?.length ? ` (or ${c.aliases.map((a) => commandWord(platform, a)).join(', ')})` : ''} — ${c.help}`;
  const usable = COMMANDS.filter((c) => commandAllowed(perms, c.name));
  const all = usable.length === COMMANDS.length;
  return [all ? 'Commands:' : 'Commands you may use here:', ...usable.map(line)].join('\n');
}

/** What the sender may use (team mode, `perms`), as /whoami says it. */
function grantsText(perms: Permissions, platform: string): string[] {
  const word = (name: string) => commandWord(platform, name);
  if (perms.commands === 'all' && perms.approve && perms.toolsets === 'all') return [`You may use every command (${word('help')} lists them) and every tool of this agent.`];
  const commands = perms.commands === 'all'
    ? `every command (${word('help')} lists them)${perms.approve ? '' : `, except ${word('approve')} and ${word('deny')}`}`
    : [...perms.commands, ...(perms.approve ? ['approve', 'deny'] : [])].map(word).join(', ') || 'no commands';
  const tools = perms.toolsets === 'all' ? 'every tool of this agent' : perms.toolsets.length ? `the toolsets ${perms.toolsets.join(', ')}` : 'no tools';
  return [`You may use ${commands}.`, `Your turns may use ${tools}.`];
}

function whoamiText({ input, perms }: CommandCall): string {
  const id = input.user.platformUserId;
  return [`You are ${input.platform}:${id}${input.user.displayName ? ` (${input.user.displayName})` : ''}.`,
    perms.admin ? 'You are an admin of this agent.' : 'You are a user of this agent (not an admin).',
    ...grantsText(perms, input.platform)].join('\n');
}

function modelText({ agent, input, command }: CommandCall): string {
  const { model, fallbackModels = [], moa } = agent.compiled;
  const name = (m: { provider: string; model: string }) => `${m.provider}/${m.model}`;
  const lines = [`Model: ${name(model)}.`, fallbackModels.length ? `Fallbacks, in order: ${fallbackModels.map(name).join(', ')}.` : 'No fallback models.'];
  const preset = moa?.presets.find((p) => p.name === (model.provider === 'moa' ? model.model : moa.defaultPreset));
  if (preset) {
    lines.push(`Mixture of Agents "${preset.name}"${model.provider === 'moa' ? '' : ` (${commandWord(input.platform, 'moa')})`}: references ${preset.referenceModels.map(name).join(', ')}; aggregator ${name(preset.aggregator)}.`);
  }
  // Decision (docs/platforms.md "Commands"): the model is the Profile's; a conversation does not switch it.
  if (command.args) lines.push(`Switching the model from a chat is not supported: the operator sets it in the agent's Profile (spec.model, spec.fallbackModels). ${commandWord(input.platform, 'model')} shows it.`);
  return lines.join('\n');
}

const ago = (d: Date | null) => (d ? `${Math.max(0, Math.round((Date.now() - d.getTime()) / 1_000))} s ago` : 'just now');

function activityLines(a: SessionActivity, platform: string): string[] {
  const lines = [a.running ? `A turn is running (started ${ago(a.running.startedAt)}).` : 'No turn is running.'];
  lines.push(`${plural(a.queued, 'message')} queued.`);
  if (a.unknown) lines.push(`${plural(a.unknown, 'interrupted turn')} waiting: send ${commandWord(platform, 'retry')} to run it again or ${commandWord(platform, 'discard')} to drop it.`);
  return lines;
}

/** `/status`: what runs and waits in this conversation, the model, tokens so far. */
function statusAnswer(call: CommandCall): AnswerFn {
  return async (sql, admitted) => {
    const a = await sessionActivity(sql, admitted.sessionId, admitted.admissionId);
    const t = await sessionUsage(sql, admitted.sessionId);
    const c = call.agent.compiled;
    return [
      `Conversation ${admitted.sessionId}.`,
      ...activityLines(a, call.input.platform),
      `Model: ${c.model.provider}/${c.model.model}${c.fallbackModels?.length ? ` (+${plural(c.fallbackModels.length, 'fallback')})` : ''}. Busy policy: ${c.busyPolicy}.`,
      `Tokens so far: input ${t.inputTokens}, output ${t.outputTokens} (${plural(t.calls, 'model call')}).`,
    ].join('\n');
  };
}

/** Records a stop signal for the session's running turn (announced after the commit); false when nothing runs. */
async function stopRunning(sql: Sql, sessionId: string, admissionId: string, text: string, out: SessionSignal[]): Promise<boolean> {
  const a = await sessionActivity(sql, sessionId, admissionId);
  if (!a.running) return false;
  out.push(await recordSignal(sql, { sessionId, admissionId, kind: 'stop', text }));
  return true;
}

/** `/new`, `/reset`: the session key gets a fresh session and the old one ends (its transcript stays); a running turn and delegated tasks are stopped, queued messages dropped. */
function newSession(call: CommandCall): CommandAction {
  const signals: SessionSignal[] = [];
  const word = commandWord(call.input.platform, call.command.name);
  return {
    kind: 'answer', signals, rebindsKey: true,
    reply: async (sql, admitted) => {
      const stopped = await stopRunning(sql, admitted.sessionId, admitted.admissionId, word, signals);
      // Its delegated children stop too, as on /stop: their results must not come back as a turn of the conversation left.
      const children = await stopSubagents(sql, admitted.sessionId);
      signals.push(...children.signals);
      const { dropped } = await startNewSession(sql, admitted.sessionId, admitted.admissionId);
      const left = dropped ? ` ${dropped === 1 ? 'The message' : `The ${dropped} messages`} waiting in it ${dropped === 1 ? 'was' : 'were'} dropped.` : '';
      const tasks = children.ids.length ? ` Stopped ${children.ids.length} delegated task(s).` : '';
      return `Started a new conversation; the previous one is kept.${stopped ? ' Its running turn was stopped.' : ''}${tasks}${left}`;
    },
  };
}

/** `/stop`: the running turn stops within about a second (the signal is durable and announced). */
function stop(): CommandAction {
  const signals: SessionSignal[] = [];
  return {
    kind: 'answer', signals,
    reply: async (sql, admitted) => {
      const running = await stopRunning(sql, admitted.sessionId, admitted.admissionId, '', signals);
      // The conversation's delegated children stop too (their signals are announced with the turn's).
      const children = await stopSubagents(sql, admitted.sessionId);
      signals.push(...children.signals);
      const also = children.ids.length ? ` Stopping ${children.ids.length} delegated task(s).` : '';
      if (running) return `Stopping the running turn.${also}`;
      return also ? also.trim() : 'Nothing was running to stop.';
    },
  };
}

/** `/moa <prompt>` runs as the session's turn (with the default preset); refused here without a prompt or a preset. */
function moaCommand({ agent, input, command }: CommandCall): CommandAction | undefined {
  if (!agent.compiled.moa) return { kind: 'answer', reply: `This agent has no Mixture-of-Agents preset: an operator can add one to its Profile (spec.moa.presets).` };
  return command.args ? undefined : { kind: 'answer', reply: needsText(input.platform, 'moa') };
}

const SIGNALS_WITH_TEXT: ReadonlySet<string> = new Set(['steer', 'redirect']);

const needsText = (platform: string, name: string) => `${commandWord(platform, name)} needs a message: ${commandWord(platform, name)} <your message>.`;

/**
 * What the gateway does with `call.command`; undefined: admit it as it is (a command that runs as
 * the session's turn, or `/steer`, `/approve`, `/deny`, whose signal or decision is recorded at admission).
 */
export function gatewayCommand(call: CommandCall): CommandAction | undefined {
  const { name, args } = call.command;
  const platform = call.input.platform;
  // `/steer` and `/redirect` reach the running turn as signals at admission (inbound.ts): refused here only without text.
  if (SIGNALS_WITH_TEXT.has(name)) return args ? undefined : { kind: 'answer', reply: needsText(platform, name) };
  switch (name) {
    case 'help': return { kind: 'answer', reply: helpText(platform, call.perms) };
    case 'whoami': return { kind: 'answer', reply: whoamiText(call) };
    case 'model': return { kind: 'answer', reply: modelText(call) };
    case 'status': return { kind: 'answer', reply: statusAnswer(call) };
    case 'usage': return { kind: 'answer', reply: (sql, admitted) => sessionUsageText(sql, admitted.sessionId) };
    case 'new': case 'reset': return newSession(call);
    case 'stop': return stop();
    case 'queue': return args ? { kind: 'admit', content: args, queue: true } : { kind: 'answer', reply: needsText(platform, 'queue') };
    case 'moa': return moaCommand(call);
    case 'kanban': return { kind: 'answer', reply: kanbanAnswer(call.agent.agentId, args, platform) };
    default: return undefined;
  }
}

/**
 * A Hermes command this runtime lacks (`/undo`, `/title x`, …: core unavailableCommand), answered
 * now without the model and pointing only at commands the sender may use (`perms`), unless the
 * agent offers a skill of that name — a Skill of its manifests or one it learned (Hermes: every
 * installed skill is a `/<skill-name>` command): then it is that skill's command.
 */
export async function unavailableAnswer(ctx: GatewayContext, agent: AgentRecord, input: AdmitInput, perms: Permissions): Promise<Extract<CommandAction, { kind: 'answer' }> | undefined> {
  const u = unavailableCommand(input.content, input.platform, (name) => commandAllowed(perms, name));
  if (!u || agent.compiled.skills?.some((s) => s.name === u.name)) return undefined;
  // Read only for such a command (rare): the skills the agent has, learned ones too, as the worker's catalog.
  const skills = await readSkillCatalog(ctx.deps.db, agent.agentId, agent.compiled);
  if (skills.some((s) => s.name === u.name)) return undefined;
  return { kind: 'answer', reply: u.reply };
}
