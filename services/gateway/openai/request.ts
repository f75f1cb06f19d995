// The OpenAI chat-completions request: validation and mapping onto an admission. The last
// message is the turn's input (it must be a user message); earlier ones become the caller's
// history (stateless, like Hermes' API server) unless the caller names a stored conversation.
import { z } from 'zod';
import { HermesError, type CallerMessage } from '../../core/index.js';
import { freeText, identifier, singleLine } from '../validation.js';

const textPart = z.object({ type: z.literal('text'), text: freeText });

const chatMessage = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  // null: an assistant message that only carried tool calls.
  // The union's own error: a part of another type (an image) fails every branch, and zod would say only "Invalid input".
  content: z.union([freeText, z.array(textPart), z.null()], { error: 'send a string or text parts ({"type": "text", "text": …}); image, audio and file parts are not supported' }).optional(),
});
type ChatMessage = z.infer<typeof chatMessage>;

export const chatCompletionBody = z.object({
  model: singleLine.min(1).max(512),
  messages: z.array(chatMessage).min(1),
  stream: z.boolean().optional(),
  user: identifier.optional(),
});
export type ChatCompletionBody = z.infer<typeof chatCompletionBody>;

/** `<namespace>/<name>`, or a bare `<name>` in namespace `default`. */
export function parseModel(model: string): { namespace: string; name: string } {
  const parts = model.split('/');
  if (parts.length === 1) return { namespace: 'default', name: parts[0]! };
  if (parts.length === 2 && parts[0] && parts[1]) return { namespace: parts[0], name: parts[1] };
  throw new HermesError('HERMES_BAD_REQUEST', `body.model: "${model}" is not "<namespace>/<agent>" or "<agent>" (see GET /v1/models).`);
}

const text = (m: ChatMessage) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text).join(''));

/** Hermes keeps system, user and assistant lines: developer counts as system, a tool result as a user line. */
function toCallerMessage(m: ChatMessage): CallerMessage {
  if (m.role === 'developer') return { role: 'system', content: text(m) };
  if (m.role === 'tool') return { role: 'user', content: `(tool result) ${text(m)}` };
  return { role: m.role, content: text(m) };
}

export function splitMessages(messages: ChatMessage[], maxChars: number): { content: string; history: CallerMessage[] } {
  const last = messages[messages.length - 1]!;
  if (last.role !== 'user') {
    throw new HermesError('HERMES_BAD_REQUEST', `body.messages: the last message must have role "user" (got "${last.role}"); it is the input of the turn.`);
  }
  const content = text(last);
  if (content.length === 0 || content.length > maxChars) {
    throw new HermesError('HERMES_BAD_REQUEST', `body.messages.${messages.length - 1}.content: must be 1..${maxChars} characters (HERMES_MAX_MESSAGE_CHARS), got ${content.length}.`);
  }
  return { content, history: messages.slice(0, -1).map(toCallerMessage) };
}
