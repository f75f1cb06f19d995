// A turn's view of its session, from one read (core readTurnContext): the conversation history
// the model gets, and the session prompt — reused while its identity matches, else built here
// and stored with the turn's end (hermes_finish_turn), so neither costs a statement of its own.
import { parseCommand, parseControlCommand, type Admission, type TurnContext } from '../core/index.js';
import { buildPrompt, historyFromTranscript, promptIdentity, storePrompt, type ChatMessage, type PromptInputs, type ToolCall } from '../agent/index.js';
import { NOTHING_TO_RETRY, isRecoveryCommand } from './recovery-commands.js';

/** One-line replies to control messages: not conversation. */
export const REPLY = {
  stopped: 'Stopped the running turn.',
  idle: 'Nothing was running to stop.',
  sent: 'Sent to the running turn.',
} as const;
const CONTROL_REPLIES: ReadonlySet<string> = new Set([...Object.values(REPLY), NOTHING_TO_RETRY]);
/** Commands (whatever their arguments) that act on the session and are not conversation, with their replies. */
const CONTROL_COMMANDS: ReadonlySet<string> = new Set(['stop', 'usage', 'compress', 'discard']);

/** Request-only (never stored): what a resumed turn is told about the turn it continues. */
export const RESUME_NOTE = '[System note: your previous reply to the user was cut off because the service restarted before it finished. Continue from where it stopped and answer the user\'s last request. A tool call without a result may or may not have run; check before repeating it.]';

/**
 * True when the caller sent its own conversation (OpenAI API) instead of using the stored one.
 * Caller history of system lines only (`instructions` of /v1/responses and /v1/runs on a stored
 * conversation) is request-only context layered on the prompt: the stored transcript still applies.
 */
export const hasCallerConversation = (adm: Pick<Admission, 'callerHistory'>) => adm.callerHistory?.some((m) => m.role !== 'system') ?? false;

/**
 * What the user said in a stored user line: a `/steer <text>` or `/redirect <text>` is `<text>` (the
 * running turn got it as a plain user line; one no turn took runs as its own turn, with the text
 * as its request — never the command word, which the model would read as a skill or an order).
 */
function asSaid(content: string): string {
  const control = parseControlCommand(content);
  return control && control.kind !== 'stop' ? control.text : content;
}

/** The conversation for `adm`: the caller's own history (OpenAI API), else the stored transcript. */
export function historyFor(adm: Admission, ctx: TurnContext): ChatMessage[] {
  if (adm.callerHistory && hasCallerConversation(adm)) {
    const prior = adm.callerHistory.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, content: m.content }) as ChatMessage);
    return [...prior, { role: 'user', content: adm.content }];
  }
  const all = ctx.transcript;
  // Control messages that acted on a turn (and their one-line replies) are not conversation.
  const isCommand = (m: (typeof all)[number]) => (m.role === 'user' && CONTROL_COMMANDS.has(parseCommand(m.content)?.name ?? '')) || (m.role === 'assistant' && CONTROL_REPLIES.has(m.content));
  const control = new Set(all.filter((m) => m.admissionId && isCommand(m)).map((m) => m.admissionId));
  // A "/retry" line is followed by the request it re-ran (recovery-commands.ts): only that is conversation,
  // and the attempt it replaced is not (Hermes truncates it): the model answers the request afresh.
  const replaced = new Set(ctx.retried);
  const dropped = (id: string | null) => id !== null && (control.has(id) || replaced.has(id));
  const stored = all.filter((m) => m.role === 'system' || !(dropped(m.admissionId) || (m.role === 'user' && isRecoveryCommand(m.content))));
  const history = historyFromTranscript(stored.map((m) => ({ seq: m.seq, role: m.role, content: m.role === 'user' ? asSaid(m.content) : m.content, toolCalls: m.toolCalls as ToolCall[] | null, toolCallId: m.toolCallId })));
  return adm.intent === 'resume' ? [...history, { role: 'user', content: RESUME_NOTE }] : history;
}

export interface SessionPrompt {
  stored: string;
  /** Context files refused while building it (told to the user once). */
  notices: string[];
  /** Set when built now: store it with the turn's end. */
  store?: { text: string; identity: string };
}

/** True when `adm` is someone else's turn in a session opened for `ownerUserId` (a shared thread). */
export const speaksAsGuest = (adm: Pick<Admission, 'userId'>, ownerUserId: string | null): boolean =>
  adm.userId !== null && ownerUserId !== null && adm.userId !== ownerUserId;

/**
 * The session's stored prompt: built once (three layers) and reused while its identity
 * (model/provider/toolset) matches, so the provider's prefix cache stays warm across turns.
 * `stale`: the turn compressed the history first, so the stored prompt must be rebuilt.
 * `snapshot`: the memory blocks and the skills index, read only when the prompt is built (frozen
 * for the session after that).
 *
 * A stored prompt holds the USER block of the person the session was opened for. In a session
 * several people share (a Slack thread, a Discord or Telegram thread), anyone else's turn gets a
 * prompt built now with their own USER block, and it is not stored: no person's profile reaches
 * another's turn (SPEC: no cross-user memory bleed).
 */
export async function sessionPrompt(adm: Admission, inputs: PromptInputs, ctx: TurnContext, stale: boolean,
  snapshot?: () => Promise<Pick<PromptInputs, 'memory' | 'user' | 'skillsIndex'>>): Promise<SessionPrompt> {
  const identity = promptIdentity(inputs);
  const { text, identity: storedIdentity, sessionStartedAt, ownerUserId } = ctx.prompt;
  const guest = speaksAsGuest(adm, ownerUserId);
  if (!guest && !stale && text !== null && storedIdentity === identity) return { stored: text, notices: [] };
  // Memory and skills are read only when the prompt is built: frozen for the session after that.
  const parts = snapshot ? await snapshot() : {};
  const built = buildPrompt({ ...inputs, ...parts, session: { startedAt: sessionStartedAt, platform: adm.platform } });
  const stored = storePrompt(built.layers);
  return { stored, notices: built.notices, ...(guest ? {} : { store: { text: stored, identity } }) };
}
