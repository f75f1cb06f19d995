// `clarify` (Hermes' arguments: question, choices — at most 4): ask the user and wait for the
// answer, which is their next message in the conversation. The wait is durable (ToolContext.clarify,
// worker/clarify.ts); it ends with the answer, a timeout (the Profile's clarify.timeoutSeconds,
// Hermes' 3600 s) or a /stop. Unattended turns (cron) are never offered it; where it is offered
// but nobody can be asked, it refuses at once.
import { z } from 'zod';
import { defineTool } from './registry.js';
import { toolError } from './sandbox-result.js';

export const MAX_CLARIFY_CHOICES = 4;

export const NO_CLARIFY = 'Nobody can be asked in this conversation (it runs unattended), so clarify is not available: decide with the information you have and say what you assumed.';

const schema = z.object({
  question: z.string().trim().min(1).max(2_000).describe('The question for the user: one clear question'),
  choices: z.array(z.string().trim().min(1).max(200)).max(MAX_CLARIFY_CHOICES).optional()
    .describe(`Up to ${MAX_CLARIFY_CHOICES} suggested answers (multiple choice); omit for an open-ended question. The user may still answer in their own words.`),
}).strict();

export const clarifyTool = defineTool({
  name: 'clarify',
  description: 'Ask the user a question and wait for the answer (their next message). Use it when the request is ambiguous and a wrong guess would waste work, or before an irreversible choice; not for things you can find out yourself. Offer choices for a multiple-choice question. Returns the user\'s answer, or a timeout or stopped status (then carry on with your best judgement and say what you assumed).',
  toolset: 'clarify',
  // A person's answer is not re-runnable: never in parallel with other calls.
  sideEffect: 'external',
  waitsForPerson: true,
  schema,
  handler: async ({ question, choices }, ctx) => {
    if (!ctx.clarify) return toolError(NO_CLARIFY);
    const out = await ctx.clarify.ask({ question, ...(choices?.length ? { choices } : {}) }, ctx.signal, ctx.keepAlive);
    const asked = { question, ...(choices?.length ? { choices_offered: choices } : {}) };
    switch (out.status) {
      case 'answered':
        return JSON.stringify({ ...asked, user_response: out.answer });
      case 'timeout':
        return JSON.stringify({ ...asked, status: 'timeout', user_response: null, note: `The user did not answer within ${out.timeoutSeconds} s. Carry on with your best judgement and tell them what you assumed.` });
      case 'stopped':
        return JSON.stringify({ ...asked, status: 'stopped', user_response: null, note: 'The wait was stopped (/stop) before the user answered.' });
      default:
        return toolError(`The question could not be asked: ${out.reason}.`, asked);
    }
  },
});
