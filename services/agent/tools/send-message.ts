// `send_message` (Hermes' arguments: action send | list, target, message): send a message to an
// explicit target — `platform:chat[:thread]` or a named home channel of the Agent — through the
// delivery ledger, possibly on another platform than the conversation's. Only targets the Agent
// allows (spec.messaging) are accepted; one obligation per tool call, so a worker crash never sends
// it twice. `list` shows the targets the agent may use.
import { z } from 'zod';
import { defineTool } from './registry.js';
import { toolError } from './sandbox-result.js';

export const NO_MESSAGING = 'send_message is not available here: this agent has no messaging targets (Agent spec.messaging.homeChannels / allowedTargets).';

const schema = z.object({
  action: z.enum(['send', 'list']).default('send').describe('send (default): send message to target; list: the targets this agent may send to'),
  target: z.string().trim().min(1).max(300).optional().describe('Where to send: a home channel name (e.g. "ops"), a bare platform for its home channel (e.g. "slack"), or platform:chat_id[:thread_id] (e.g. "telegram:-1001234:17", "slack:C012AB3CD")'),
  message: z.string().min(1).max(20_000).optional().describe('The text to send'),
}).strict();

export const sendMessageTool = defineTool({
  name: 'send_message',
  description: 'Send a message to a chat target other than this conversation: a named home channel or platform:chat_id[:thread_id], on any platform this agent is connected to. Use action "list" first to see the allowed targets. Each call sends once.',
  toolset: 'messaging',
  sideEffect: 'external',
  schema,
  handler: async ({ action, target, message }, ctx) => {
    if (!ctx.messaging) return toolError(NO_MESSAGING);
    if (action === 'list') {
      const t = ctx.messaging.targets();
      return JSON.stringify({ home_channels: t.homeChannels, allowed_targets: t.allowedTargets });
    }
    if (!target || !message) return toolError('send needs both target and message.');
    // The loop sets toolCallId on every call; a direct call without one is keyed by its content.
    const key = ctx.toolCallId ?? `${target}\n${message}`;
    const out = await ctx.messaging.send(target, message, key);
    if (!out.ok) return toolError(out.error);
    return JSON.stringify({ success: true, target: out.target, delivery: out.alreadySent ? 'already recorded by this call (not sent again)' : 'queued for delivery', obligation_id: out.obligationId });
  },
});
