// GET …/admissions/:id/events: server-sent state changes, deltas and the final reply; and a
// graceful close that ends open streams and drops every subscription.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { auth, openHarness, readSse, runFakeTurn, subscribed, type Harness } from './harness.js';
import type { SseEvent } from '../../support/sse.js';

let h: Harness;
let gw: RunningGateway;

beforeAll(async () => {
  h = await openHarness({ HERMES_PORT: 0, HERMES_HOST: '127.0.0.1' });
  gw = await startGateway(h.deps);
});
afterAll(async () => {
  await gw?.close();
  await h?.close();
});

async function admitOne(content: string, conversation: string): Promise<{ admissionId: string; links: { events: string } }> {
  const res = await fetch(`${gw.url}/v1/agents/default/demo/messages`, {
    method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ content, conversation }),
  });
  expect(res.status).toBe(202);
  return (await res.json()) as { admissionId: string; links: { events: string } };
}

const parsed = (events: SseEvent[], name: string) => events.filter((e) => e.event === name).map((e) => JSON.parse(e.data) as Record<string, unknown>);

describe('admission events', () => {
  it('streams state, deltas and the reply, then ends', async () => {
    const { admissionId, links } = await admitOne('tell me', 'events-1');
    const res = await fetch(`${gw.url}${links.events}`, { headers: auth() });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reading = readSse(res);
    await subscribed(h, admissionId);
    await runFakeTurn(h, admissionId, { deltas: ['Once ', 'upon'], result: { outcome: 'completed', reply: 'Once upon a time' } });
    const events = await reading;
    expect(parsed(events, 'state')[0]).toEqual({ state: 'queued', outcome: null });
    expect(parsed(events, 'state').at(-1)).toEqual({ state: 'terminal', outcome: 'completed' });
    expect(parsed(events, 'delta')).toEqual([{ text: 'Once ' }, { text: 'upon' }]);
    expect(events.at(-1)).toEqual({ event: 'reply', data: JSON.stringify({ content: 'Once upon a time', outcome: 'completed', state: 'terminal' }) });
  });

  it('answers at once for a finished admission', async () => {
    const { admissionId, links } = await admitOne('done already', 'events-2');
    await runFakeTurn(h, admissionId, { result: { outcome: 'completed', reply: 'yes' } });
    const events = await readSse(await fetch(`${gw.url}${links.events}`, { headers: auth() }));
    expect(events.map((e) => e.event)).toEqual(['state', 'reply']);
    expect(parsed(events, 'reply')[0]).toMatchObject({ content: 'yes', outcome: 'completed' });
  });

  it('refuses another agent’s key and an unknown admission with JSON errors', async () => {
    const { links } = await admitOne('private', 'events-3');
    const forbidden = await fetch(`${gw.url}${links.events}`, { headers: auth('other-key') });
    expect(forbidden.status).toBe(404);
    expect(((await forbidden.json()) as { error: { code: string } }).error.code).toBe('HERMES_AGENT_NOT_FOUND');
    const missing = await fetch(`${gw.url}/v1/agents/default/demo/admissions/00000000-0000-4000-8000-000000000000/events`, { headers: auth() });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('HERMES_ADMISSION_NOT_FOUND');
  });
});

describe('graceful close', () => {
  it('ends open streams with an error event and unsubscribes', async () => {
    const own = await startGateway(h.deps);
    const { admissionId } = await admitOne('never answered', 'events-4');
    const res = await fetch(`${own.url}/v1/agents/default/demo/admissions/${admissionId}/events`, { headers: auth() });
    const reading = readSse(res);
    await subscribed(h, admissionId);
    await own.close();
    const events = await reading;
    expect(events.at(-1)?.event).toBe('error');
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ code: 'HERMES_GATEWAY_CLOSING' });
    const numsub = (await h.redis.call('PUBSUB', 'NUMSUB', `${h.config.HERMES_QUEUE_PREFIX}:admission:${admissionId}`)) as [string, number];
    expect(Number(numsub[1])).toBe(0);
  });
});
