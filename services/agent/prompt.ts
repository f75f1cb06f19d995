// The session prompt in three layers — stable (identity/persona, the skills index) → context
// (project context files) → volatile (memory and user snapshots; when the conversation started,
// on which platform, with which model) — built once per session and
// stored with a prompt identity, so every turn sends a byte-identical prefix and the provider's
// prefix cache stays warm. Ephemeral additions (steer text, budget warnings) never enter it.
import { createHash } from 'node:crypto';
import type { CompiledAgent } from '../core/index.js';
import type { ChatMessage } from './messages.js';

export interface ContextFile {
  name: string;
  content: string;
}

export interface PromptInputs {
  agent: CompiledAgent;
  /** Names of the tools offered this session. */
  toolNames: readonly string[];
  /**
   * What the model sees of tools whose definitions can change without their names (MCP servers'
   * tools): a new value rebuilds the stored prompt once, as a changed tool list does.
   */
  toolsVersion?: string;
  /** The frozen MEMORY and USER blocks (memory/snapshot.ts), each with its own header. */
  memory?: string;
  user?: string;
  /** The skills index (skills/catalog.ts skillsIndexBlock), part of the stable layer. */
  skillsIndex?: string;
  /** The conversation this prompt is for: when it started (not when the prompt was built) and where. */
  session?: { startedAt: Date; platform: string };
}

export interface BuiltPrompt {
  /** Layers as stored: stable, then context, then volatile (empty layers dropped). */
  layers: string[];
  identity: string;
  /** Refused context files, in words for the user. */
  notices: string[];
}

/** Context files in priority order: the first present of each group is used. */
const PRIORITY = [['.hermes.md', 'HERMES.md'], ['AGENTS.md'], ['CLAUDE.md'], ['.cursorrules']];
const MAX_CONTEXT_CHARS = 20_000;
const LAYER_SEPARATOR = '\u001e';

const INJECTION: { re: RegExp; why: string }[] = [
  { re: /ignore\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier)\s+(instructions|prompts|rules)/i, why: 'it tells the model to ignore its instructions' },
  { re: /disregard\s+(your|all|the)\s+(instructions|rules|system prompt)/i, why: 'it tells the model to disregard its instructions' },
  { re: /(reveal|print|show|repeat)\s+(your|the)\s+(system prompt|instructions|hidden prompt)/i, why: 'it asks the model to reveal its system prompt' },
  { re: /do\s+not\s+(tell|inform|let)\s+the\s+user/i, why: 'it asks the model to hide things from the user' },
  { re: /<\|im_start\|>|<\|system\|>|\[INST\]|<\/?system>/i, why: 'it contains chat-template control tokens' },
  { re: /(curl|wget)\s+[^\n]*\|\s*(ba)?sh/i, why: 'it pipes a download into a shell' },
  { re: /(send|post|upload|exfiltrate)\s+[^\n]{0,40}(api[_ ]?key|secret|password|token|credentials)/i, why: 'it asks for secrets to be sent out' },
];
// Zero-width, bidi controls, word joiners, BOM, tag characters: text a reviewer cannot see.
const INVISIBLE = /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]|[\u{E0000}-\u{E007F}]/u;

/** Why `text` must not enter the prompt, or undefined when it is clean. */
export function scanForInjection(text: string): string | undefined {
  if (INVISIBLE.test(text)) return 'it contains invisible Unicode characters';
  return INJECTION.find((p) => p.re.test(text))?.why;
}

export function selectContextFiles(files: readonly ContextFile[]): ContextFile[] {
  const out: ContextFile[] = [];
  for (const group of PRIORITY) {
    const f = group.map((n) => files.find((x) => x.name === n)).find(Boolean);
    if (f) out.push(f);
  }
  return out;
}

function contextLayer(files: readonly ContextFile[], notices: string[]): string {
  const parts: string[] = [];
  for (const f of selectContextFiles(files)) {
    const why = scanForInjection(f.content);
    if (why) {
      notices.push(`Context file ${f.name} was not loaded: ${why}.`);
      parts.push(`[Context file ${f.name} was blocked: ${why}.]`);
      continue;
    }
    const body = f.content.length > MAX_CONTEXT_CHARS ? `${f.content.slice(0, MAX_CONTEXT_CHARS)}\n[truncated]` : f.content;
    parts.push(`# ${f.name}\n\n${body.trim()}`);
  }
  return parts.join('\n\n');
}

/**
 * Model, provider, endpoint and toolset: while they match, the stored prompt is reused as is (a
 * persona edit reaches new sessions; a running session keeps its warm prefix).
 */
export function promptIdentity(inputs: PromptInputs): string {
  const { agent } = inputs;
  const source = JSON.stringify({
    provider: agent.model.provider, model: agent.model.model, baseURL: agent.model.baseURL ?? null, tools: [...inputs.toolNames].sort(),
    ...(inputs.toolsVersion ? { toolsVersion: inputs.toolsVersion } : {}),
  });
  return createHash('sha256').update(source).digest('hex').slice(0, 32);
}

const startedFormat = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });

/**
 * Facts that hold for the whole conversation: its start (a fixed point in time, so a prompt
 * built once never goes stale — `get_time` answers "now"), the platform and the model.
 */
function sessionBlock(agent: CompiledAgent, session: NonNullable<PromptInputs['session']>): string {
  return [
    '# This conversation',
    '',
    `Started: ${startedFormat.format(session.startedAt)} UTC`,
    `Platform: ${session.platform}`,
    `Model: ${agent.model.model} (${agent.model.provider})`,
  ].join('\n');
}

export function buildPrompt(inputs: PromptInputs): BuiltPrompt {
  const { agent } = inputs;
  const notices: string[] = [];
  const persona = agent.persona.trim() || `You are ${agent.agent.name}, a helpful assistant.`;
  const stable = inputs.skillsIndex ? `${persona}\n\n${inputs.skillsIndex}` : persona;
  const context = contextLayer(agent.contextFiles ?? [], notices);
  const volatile = [
    inputs.memory ?? '',
    inputs.user ?? '',
    inputs.session ? sessionBlock(agent, inputs.session) : '',
  ].filter(Boolean).join('\n\n');
  return { layers: [stable, context, volatile].filter(Boolean), identity: promptIdentity(inputs), notices };
}

/** Stored form: layers joined by a record separator that is never sent. */
export const storePrompt = (layers: readonly string[]): string => layers.join(LAYER_SEPARATOR);

/**
 * Stored prompt → system messages: the stable layer alone (the static prefix a cache breakpoint
 * marks), then the rest together (the end of the system prompt).
 */
export function promptMessages(stored: string): ChatMessage[] {
  const [stable, ...rest] = stored.split(LAYER_SEPARATOR);
  const out: ChatMessage[] = [{ role: 'system', content: stable ?? '' }];
  if (rest.length) out.push({ role: 'system', content: rest.join('\n\n') });
  return out;
}
