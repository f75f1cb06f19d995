// The slash commands users send (Hermes' gateway set), how each is written on a platform, and
// where each is answered:
//   gateway — out of band, at admission, whatever runs in the session (never waits behind a turn);
//   turn    — as the session's own turn, in order, under its lease (they change the transcript or
//             the workspace, so they must not overlap a running turn; with one running they queue).
// `/stop`, `/steer` and `/approve|/deny` act at admission too (a signal / a decision) and are
// answered after the turn they addressed (see gateway/admission.ts).
// On Slack `/word` belongs to Slack, so commands are written `!word` (platforms/slack/events.ts
// rewrites them to `/word`); every text that names a command uses commandWord() for its platform.

export type CommandPlace = 'gateway' | 'turn';

export interface CommandInfo {
  name: string;
  /** Argument syntax for /help (empty: none). */
  args: string;
  help: string;
  place: CommandPlace;
  /** Hermes' other names for it (`/q` is `/queue`): parsed as the command itself, so its grant covers them. */
  aliases?: readonly string[];
}

export const COMMANDS: readonly CommandInfo[] = [
  { name: 'new', args: '', help: 'start a new conversation (the old one is kept); stops a running turn', place: 'gateway' },
  { name: 'reset', args: '', help: 'same as new', place: 'gateway' },
  { name: 'stop', args: '', help: 'stop the running turn', place: 'gateway' },
  { name: 'status', args: '', help: 'this conversation: running turn, queued messages, model, tokens', place: 'gateway' },
  { name: 'usage', args: '', help: 'tokens and cost of this conversation', place: 'gateway' },
  { name: 'model', args: '', help: 'the model this agent answers with, and its fallbacks', place: 'gateway' },
  { name: 'queue', args: '<message>', help: 'run the message after the running turn (whatever the busy policy)', place: 'gateway', aliases: ['q'] },
  { name: 'steer', args: '<message>', help: 'tell the running turn something, after its current tool call', place: 'gateway' },
  { name: 'redirect', args: '<message>', help: 'cancel the running model call and go on with this correction (after a tool call: as steer)', place: 'gateway' },
  { name: 'approve', args: '', help: 'let the command waiting for approval run', place: 'gateway' },
  { name: 'deny', args: '[reason]', help: 'refuse the command waiting for approval', place: 'gateway' },
  { name: 'whoami', args: '', help: 'your user id here and what you may do', place: 'gateway' },
  { name: 'kanban', args: '[list|show|create|comment|block|unblock|complete|archive …]', help: 'your task board: tasks this agent works on in the background', place: 'gateway' },
  { name: 'help', args: '', help: 'this list', place: 'gateway' },
  { name: 'retry', args: '', help: 'run an interrupted turn again (or your last message)', place: 'turn' },
  { name: 'discard', args: '', help: 'drop interrupted turns without running them', place: 'turn' },
  { name: 'compress', args: '[focus | here N]', help: 'summarise the older part of the conversation', place: 'turn' },
  { name: 'rollback', args: '[N]', help: 'list workspace checkpoints, or restore checkpoint N', place: 'turn' },
  { name: 'memory', args: '[pending|approve ID|reject ID]', help: 'memory writes waiting for approval', place: 'turn' },
  { name: 'skills', args: '[pending|diff ID|approve ID|reject ID]', help: 'skill writes waiting for approval', place: 'turn' },
  { name: 'curator', args: '[status|run|pin|unpin|restore SKILL]', help: 'the skills this agent learned: status and upkeep (admins)', place: 'turn' },
  { name: 'moa', args: '<prompt>', help: 'answer one prompt with the Mixture-of-Agents preset (several models advise, one answers)', place: 'turn' },
];

const byName = new Map(COMMANDS.flatMap((c) => [c.name, ...(c.aliases ?? [])].map((n) => [n, c] as const)));

/** Every alias of a command here (`q`), for parsers that must know the words (Slack's `!word` rewrite). */
export const COMMAND_ALIASES: readonly string[] = COMMANDS.flatMap((c) => c.aliases ?? []);

export interface ParsedCommand {
  name: string;
  info: CommandInfo;
  /** The text after the command word, trimmed. */
  args: string;
}

const SLASH = /^\/([a-z][a-z0-9_-]*)(?:\s+([\s\S]*))?$/i;

/** A leading command word (`/word` or Slack's `!word`) and the control characters right after it. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const WORD_THEN_CONTROL = /^(\s*[/!][A-Za-z][\w-]*)[\u0000-\u0008\u000e-\u001f\u007f\uFFFD]+/;

/**
 * `text` with a NUL or other control character right after its leading command word (or the
 * U+FFFD a NUL is stored as) written as a space: `/status<NUL>` is `/status`, as `/status ` is.
 * Applied once where a message comes in (gateway/inbound.ts, and Slack's `!word` before it is
 * rewritten), so every parser of the stored text — here, the worker's, a skill's — reads it alike.
 */
export const commandText = (text: string): string => text.replace(WORD_THEN_CONTROL, '$1 ');

/** A known command (`/status`, `/queue do this`, …), or undefined for anything else (including `/<skill>`). */
export function parseCommand(content: string): ParsedCommand | undefined {
  const m = SLASH.exec(content.trim());
  if (!m) return undefined;
  const info = byName.get(m[1]!.toLowerCase());
  return info ? { name: info.name, info, args: (m[2] ?? '').trim() } : undefined;
}

/** Platforms whose users write commands with another prefix than `/`. */
const prefixes: Readonly<Record<string, string>> = { slack: '!' };

/** How a user of `platform` writes command `name`: `/retry`, or `!retry` on Slack. */
export const commandWord = (platform: string | undefined, name: string): string => `${(platform && prefixes[platform]) ?? '/'}${name}`;

/** The silence token the runtime itself answers with (a message a running turn already took in). */
export const SILENT_REPLY = '[SILENT]';

/** Silence tokens (Hermes: `[SILENT]`, `SILENT`, `NO_REPLY`, `NO REPLY`): a final reply that is exactly one is stored, never sent. */
const SILENCE = /^\s*(\[SILENT\]|SILENT|NO_REPLY|NO REPLY)\s*$/;

/** True for a reply that must not be sent (its SQL twin, hermes_is_silent, settles it delivered when the turn ends). */
export const isSilentReply = (text: string): boolean => SILENCE.test(text);

/**
 * Hermes' commands (docs/platforms.md "Hermes commands not here") that this runtime does not
 * implement, with what to use instead (`w` writes a command as the user's platform does). They
 * are answered at admission, without the model: as text the model would read them as a request and
 * might claim to have done it (`/undo` "done"). `/start` (a platform's start ping) is answered
 * silently, as Hermes does. A skill the agent offers under the same name wins (gateway/commands.ts).
 */
type Word = (name: string) => string;
/** One pointer to a command of ours: shown only to a sender who may use `command`. */
interface Hint { command: string; text: (w: Word) => string }
const hint = (command: string, text: (w: Word) => string): Hint => ({ command, text });
const OPERATOR_WHY = 'is not available here: this agent\'s settings are its operator\'s (the Agent and Profile manifests), never changed from a chat.';
const UNAVAILABLE_GROUPS: readonly { names: readonly string[]; why: string; hints?: readonly Hint[] }[] = [
  { names: ['undo'], why: 'is not available here: a conversation cannot be backed up.', hints: [
    hint('retry', (w) => `${w('retry')} answers your last message afresh (the earlier answer leaves the conversation).`), hint('new', (w) => `${w('new')} starts over.`)] },
  { names: ['title'], why: 'is not available here: conversations have no titles.', hints: [hint('status', (w) => `${w('status')} shows this conversation's id.`)] },
  { names: ['sessions', 'resume', 'branch', 'fork', 'topic'], why: 'is not available here: a chat has one conversation at a time and cannot switch, reopen or branch one.', hints: [
    hint('new', (w) => `${w('new')} starts a new one (the old one is kept).`)] },
  { names: ['background', 'bg', 'btw', 'goal', 'subgoal'], why: 'is not available here.', hints: [
    hint('queue', (w) => `${w('queue')} <message> runs a message after the running turn.`), hint('kanban', (w) => `${w('kanban')} create gives this agent a task to work on in the background.`)] },
  { names: ['agents', 'tasks'], why: 'is not available here.', hints: [
    hint('status', (w) => `${w('status')} shows what runs in this conversation.`), hint('kanban', (w) => `${w('kanban')} lists the agent's background tasks.`)] },
  { names: ['commands'], why: 'is not available here.', hints: [hint('help', (w) => `${w('help')} lists the commands.`)] },
  { names: ['credits', 'billing', 'insights'], why: 'is not available here.', hints: [hint('usage', (w) => `${w('usage')} shows the tokens and cost of this conversation.`)] },
  { names: ['tools', 'toolsets'], why: 'is not available here: the tools are the operator\'s (the Profile\'s toolsets).', hints: [hint('whoami', (w) => `${w('whoami')} says which your turns may use.`)] },
  { names: ['cron'], why: 'is not available here: scheduled tasks are CronJob manifests (`hermes cron` and kubectl), set up by the operator.' },
  {
    names: ['config', 'personality', 'yolo', 'reasoning', 'fast', 'verbose', 'footer', 'voice', 'codex-runtime', 'codex_runtime', 'sethome', 'set-home', 'profile',
      'reload-mcp', 'reload_mcp', 'reload-skills', 'reload_skills', 'bundles', 'learn', 'suggestions', 'suggest', 'blueprint', 'bp',
      'restart', 'update', 'version', 'v', 'debug', 'platform', 'platforms', 'gateway'],
    why: OPERATOR_WHY,
    hints: [hint('model', (w) => `${w('model')} shows the model.`), hint('whoami', (w) => `${w('whoami')} says what you may use.`)],
  },
  {
    names: ['clear', 'redraw', 'history', 'save', 'prompt', 'compose', 'handoff', 'snapshot', 'snap', 'statusbar', 'sb', 'timestamps', 'ts', 'skin', 'indicator', 'busy',
      'pet', 'hatch', 'generate-pet', 'journey', 'learning', 'memory-graph', 'reload', 'browser', 'plugins', 'copy', 'paste', 'image', 'quit', 'exit'],
    why: 'is a command of Hermes\' terminal UI; there is no terminal here.',
  },
];

/** Names of Hermes commands this runtime answers only with "not available here" (and `/start`). */
export const UNAVAILABLE_COMMANDS: ReadonlySet<string> = new Set(['start', ...UNAVAILABLE_GROUPS.flatMap((g) => g.names)]);

const unavailableGroup = new Map(UNAVAILABLE_GROUPS.flatMap((g) => g.names.map((n) => [n, g] as const)));

/**
 * The answer to a Hermes command this runtime lacks (`/undo`, `/title x`, …), written for
 * `platform`; `/start` gets the silence token; undefined for any other message. It points only at
 * commands the sender may use (`may`: team mode's commandAllowed for them), as /help lists only those.
 */
export function unavailableCommand(content: string, platform: string, may: (command: string) => boolean = () => true): { name: string; reply: string } | undefined {
  const name = SLASH.exec(content.trim())?.[1]?.toLowerCase();
  if (!name || !UNAVAILABLE_COMMANDS.has(name)) return undefined;
  const group = unavailableGroup.get(name);
  if (!group) return { name, reply: SILENT_REPLY };
  const w = (n: string) => commandWord(platform, n);
  const hints = (group.hints ?? []).filter((h) => may(h.command)).map((h) => h.text(w));
  return { name, reply: [`${w(name)} ${group.why}`, ...hints].join(' ') };
}
