// `stream: true`: OpenAI chunks over SSE. First the role chunk, then content chunks as the worker
// publishes deltas (only while we are sure we have seen every delta), then whatever text the
// client still lacks, a `finish_reason: "stop"` chunk and `data: [DONE]`. Errors after the
// stream began are an OpenAI error object on a data line (OpenAI SDKs raise it as APIError).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { waitSignal, type GatewayContext } from '../context.js';
import { openAiErrorBody, toApiError } from '../errors.js';
import { openSse } from '../sse.js';
import type { AdmissionFollower } from '../waiter.js';
import { chunk, missingText, replyText, type CompletionIds } from './response.js';

export interface StreamTarget {
  request: FastifyRequest;
  reply: FastifyReply;
  follower: AdmissionFollower;
  ids: CompletionIds;
  links: { self: string };
  headers: Record<string, string>;
}

export async function streamCompletion(ctx: GatewayContext, t: StreamTarget): Promise<void> {
  const sse = openSse(t.request, t.reply, { heartbeatMs: ctx.deps.tuning?.heartbeatMs, headers: t.headers });
  const wait = waitSignal(ctx, t.request, t.links);
  let streamed = '';
  try {
    sse.send(chunk(t.ids, { role: 'assistant', content: '' }));
    const end = await t.follower.untilDone({
      signal: wait.signal,
      onDelta: (text) => {
        if (!t.follower.deltasComplete || text === '') return;
        streamed += text;
        sse.send(chunk(t.ids, { content: text }));
      },
    });
    const rest = missingText(streamed, replyText(end));
    if (rest) sse.send(chunk(t.ids, { content: rest }));
    sse.send(chunk(t.ids, {}, 'stop'));
    sse.send('[DONE]');
  } catch (err) {
    const apiError = toApiError(err, t.request, ctx.deps.config.HERMES_MAX_BODY_BYTES);
    if (apiError.status >= 500) t.request.log.warn({ err, admissionId: t.follower.admissionId }, 'Chat completion stream ended with an error');
    if (!sse.clientGone.aborted) sse.send(openAiErrorBody(apiError).body);
  } finally {
    wait.dispose();
    sse.end(ctx.shutdown.aborted);
  }
}
