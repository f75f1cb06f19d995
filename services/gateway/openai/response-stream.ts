// `POST /v1/responses` with `stream: true`: the Responses API's semantic events over SSE, each an
// `event: <type>` frame whose data carries the same `type` and a `sequence_number`:
//   response.created → response.in_progress → response.output_item.added →
//   response.content_part.added → response.output_text.delta … (as the worker streams, only while
//   every delta has reached us) → response.output_text.done → response.content_part.done →
//   response.output_item.done → response.completed | response.failed | response.incomplete.
// The text of the `done` events and of the final response is the recorded reply, so a client
// that joined late or lost a delta still ends with the whole answer. Following the turn stopped
// early (timeout, shutdown, Postgres) → an `error` event; the turn still runs and is recorded.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiTurn } from '../../core/index.js';
import { waitSignal, type GatewayContext } from '../context.js';
import { openAiErrorBody, toApiError } from '../errors.js';
import { openSse } from '../sse.js';
import { viewOfEnd } from '../turn-view.js';
import type { AdmissionFollower } from '../waiter.js';
import { missingText } from './response.js';
import { messageId, outputMessage, responseObject, responseState } from './responses.js';

export interface ResponseStreamTarget {
  request: FastifyRequest;
  reply: FastifyReply;
  follower: AdmissionFollower;
  turn: ApiTurn;
  links: { self: string };
  headers: Record<string, string>;
}

const finalEvent = { completed: 'response.completed', failed: 'response.failed' } as const;

export async function streamResponse(ctx: GatewayContext, t: ResponseStreamTarget): Promise<void> {
  const sse = openSse(t.request, t.reply, { heartbeatMs: ctx.deps.tuning?.heartbeatMs, headers: t.headers });
  const wait = waitSignal(ctx, t.request, t.links);
  let seq = 0;
  const send = (type: string, fields: Record<string, unknown>) => sse.send({ type, sequence_number: seq++, ...fields }, type);
  const item = { item_id: messageId(t.turn.id), output_index: 0, content_index: 0 };
  let streamed = '';
  try {
    const started = responseObject(t.turn, { status: 'in_progress', error: null });
    send('response.created', { response: started });
    send('response.in_progress', { response: started });
    send('response.output_item.added', { output_index: 0, item: outputMessage(t.turn.id, '', 'in_progress') });
    send('response.content_part.added', { ...item, part: { type: 'output_text', text: '', annotations: [] } });
    const end = await t.follower.untilDone({
      signal: wait.signal,
      onDelta: (text) => {
        if (!t.follower.deltasComplete || text === '') return;
        streamed += text;
        send('response.output_text.delta', { ...item, delta: text, logprobs: [] });
      },
    });
    const state = responseState(viewOfEnd(end));
    const text = state.text ?? '';
    const rest = missingText(streamed, text);
    if (rest) send('response.output_text.delta', { ...item, delta: rest, logprobs: [] });
    send('response.output_text.done', { ...item, text, logprobs: [] });
    send('response.content_part.done', { ...item, part: { type: 'output_text', text, annotations: [] } });
    send('response.output_item.done', { output_index: 0, item: outputMessage(t.turn.id, text, state.status === 'completed' ? 'completed' : 'incomplete') });
    const name = state.status === 'completed' || state.status === 'failed' ? finalEvent[state.status] : 'response.incomplete';
    send(name, { response: responseObject(t.turn, state) });
  } catch (err) {
    const apiError = toApiError(err, t.request, ctx.deps.config.HERMES_MAX_BODY_BYTES);
    if (apiError.status >= 500) t.request.log.warn({ err, id: t.turn.id }, 'Response stream ended with an error');
    const { error } = openAiErrorBody(apiError).body;
    if (!sse.clientGone.aborted) send('error', { code: error.code, message: error.message, param: null });
  } finally {
    wait.dispose();
    sse.end(ctx.shutdown.aborted);
  }
}
