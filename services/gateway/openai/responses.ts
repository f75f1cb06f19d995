// The OpenAI Responses API as Hermes' API server serves it: the request (`input` as a string or
// message items, `instructions`, `previous_response_id`, `conversation`, `store`, `stream`,
// `background`, `metadata`) and the `response` object. Client-side `tools` and sampling knobs are
// accepted and ignored: the agent's own model, tools and prompt apply.
import { z } from 'zod';
import { HermesError, errorCatalogue, type ApiTurn, type CallerMessage } from '../../core/index.js';
import type { TurnView } from '../turn-view.js';
import { freeText, identifier, singleLine } from '../validation.js';

const textPart = z.object({ type: z.enum(['input_text', 'output_text', 'text']), text: freeText });

const messageItem = z.object({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([freeText, z.array(textPart, { error: 'only text parts ({"type": "input_text", "text": …}) are supported' })]),
}, { error: 'only message items ({"role": …, "content": …}) are supported' });
export type MessageItem = z.infer<typeof messageItem>;

/** `input` of /v1/responses and /v1/runs: a string, or message items whose last one is the user's turn. */
// The union's own error: an item or part of another type (function_call_output, input_image) fails
// both branches, and zod would say only "body.input: Invalid input".
export const turnInput = z.union([freeText.min(1), z.array(messageItem).min(1)], {
  error: 'send a string, or message items ({"role": "user", "content": …}) whose content is a string or text parts ({"type": "input_text", "text": …}); other items (function_call_output…) and image, audio and file parts are not supported',
});

export const responseBody = (maxInstructions: number) => z.object({
  model: singleLine.min(1).max(512).optional(),
  input: turnInput,
  instructions: freeText.max(maxInstructions).nullish(),
  previous_response_id: singleLine.min(1).max(256).nullish(),
  conversation: z.union([identifier, z.object({ id: identifier })]).nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  background: z.boolean().nullish(),
  user: identifier.optional(),
  metadata: z.record(singleLine.max(64), freeText.max(512)).nullish(),
});
export type ResponseBody = z.infer<ReturnType<typeof responseBody>>;

const itemText = (m: MessageItem) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''));

/** Hermes keeps system, user and assistant lines: developer counts as system. */
const toCallerMessage = (m: MessageItem): CallerMessage => ({ role: m.role === 'developer' ? 'system' : m.role, content: itemText(m) });

/** The turn's text (the last item, a user message) and the earlier items as caller history. */
export function splitInput(input: z.infer<typeof turnInput>, maxChars: number): { content: string; history: CallerMessage[] } {
  if (typeof input === 'string') {
    if (input.length > maxChars) throw new HermesError('HERMES_BAD_REQUEST', `body.input: must be at most ${maxChars} characters (HERMES_MAX_MESSAGE_CHARS), got ${input.length}.`);
    return { content: input, history: [] };
  }
  const last = input[input.length - 1]!;
  if (last.role !== 'user') throw new HermesError('HERMES_BAD_REQUEST', `body.input: the last item must have role "user" (got "${last.role}"); it is the input of the turn.`);
  const content = itemText(last);
  if (content.length === 0 || content.length > maxChars) {
    throw new HermesError('HERMES_BAD_REQUEST', `body.input.${input.length - 1}.content: must be 1..${maxChars} characters (HERMES_MAX_MESSAGE_CHARS), got ${content.length}.`);
  }
  return { content, history: input.slice(0, -1).map(toCallerMessage) };
}

/**
 * The caller history a turn is admitted with: `instructions` first (a request-only system message
 * layered on the agent's prompt), then — only for a new conversation — the earlier input items.
 * A continued conversation keeps its stored transcript.
 */
export function turnHistory(instructions: string | null | undefined, history: CallerMessage[], continued: boolean): CallerMessage[] {
  return [...(instructions ? [{ role: 'system' as const, content: instructions }] : []), ...(continued ? [] : history)];
}

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled' | 'incomplete';

export interface ResponseState {
  status: ResponseStatus;
  /** The reply text, once there is one. */
  text?: string;
  error: { code: string; message: string } | null;
  usage?: { inputTokens: number; outputTokens: number };
}

/** Where a turn stands, in the Responses API's words. */
export function responseState(view: TurnView): ResponseState {
  const { admission, end } = view;
  if (admission.state === 'queued') return { status: 'queued', error: null };
  if (!end) return { status: 'in_progress', error: null };
  const usage = end.usage;
  if (admission.state === 'unknown') {
    return { status: 'failed', error: { code: 'server_error', message: `${errorCatalogue.HERMES_TURN_INTERRUPTED.message} Send /retry in this conversation to run it again.` }, usage };
  }
  const text = end.reply?.content;
  if (admission.outcome === 'completed') return { status: 'completed', text: text ?? '', error: null, usage };
  if (admission.outcome === 'failed') return { status: 'failed', error: { code: 'server_error', message: `${errorCatalogue.HERMES_TURN_FAILED.message} ${text ?? ''}`.trim() }, usage };
  // Stopped (/stop, POST /v1/runs/{id}/stop) or discarded: what it said before stopping, if anything.
  return { status: 'cancelled', ...(text !== undefined ? { text } : {}), error: null, usage };
}

export const messageId = (responseId: string) => `msg_${responseId.replace(/^resp_/, '')}`;

export function outputMessage(responseId: string, text: string, status: 'in_progress' | 'completed' | 'incomplete') {
  return {
    id: messageId(responseId), type: 'message' as const, status, role: 'assistant' as const,
    content: status === 'in_progress' ? [] : [{ type: 'output_text' as const, text, annotations: [], logprobs: [] }],
  };
}

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

/** The `response` object of `turn` in `state`. */
export function responseObject(turn: ApiTurn, state: ResponseState, opts: { background?: boolean } = {}) {
  const usage = state.usage;
  return {
    id: turn.id,
    object: 'response' as const,
    created_at: seconds(turn.createdAt),
    status: state.status,
    background: opts.background ?? false,
    error: state.error,
    incomplete_details: null,
    instructions: turn.instructions,
    max_output_tokens: null,
    metadata: turn.metadata ?? {},
    model: turn.model,
    output: state.text !== undefined ? [outputMessage(turn.id, state.text, state.status === 'cancelled' ? 'incomplete' : 'completed')] : [],
    parallel_tool_calls: false,
    previous_response_id: turn.previousId,
    store: turn.store,
    temperature: null,
    text: { format: { type: 'text' as const } },
    tool_choice: 'auto' as const,
    tools: [],
    top_p: null,
    truncation: 'disabled' as const,
    usage: usage ? {
      input_tokens: usage.inputTokens, input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.outputTokens, output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.inputTokens + usage.outputTokens,
    } : null,
    user: turn.apiUser,
  };
}
