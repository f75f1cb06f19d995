// The Slack sender against the fake Slack Web API over HTTP (the real @slack/web-api client):
// what a rate limit means on the first and on a later piece, edits, a refused token, the deadline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimited, slack } from '../../../services/platforms/index.js';
import { startFakeSlack, type FakeSlack } from '../../support/fake-slack.js';

let fake: FakeSlack;
const token = 'xoxb-sender-test';
const never = () => new AbortController().signal;

beforeAll(async () => { fake = await startFakeSlack(token); });
afterAll(async () => { await fake?.close(); });

const sender = (t = token) => new slack.SlackSender({ token: t, apiUrl: fake.apiUrl });
const to = (channel: string) => fake.calls.filter((c) => c.args.channel === channel);

describe('SlackSender', () => {
  it('posts into the thread and edits the message it posted', async () => {
    const [sent] = await sender().send({ kind: 'slack', channel: 'C1', threadTs: '1.5' }, 'working…', never());
    await sender().edit({ kind: 'slack', channel: 'C1', threadTs: '1.5' }, sent!, 'done', never());
    expect(to('C1').map((c) => [c.method, c.args.text, c.args.thread_ts ?? c.args.ts])).toEqual([['chat.postMessage', 'working…', '1.5'], ['chat.update', 'done', sent!.id]]);
  });

  it('sends the text as written: no @channel, @here, mention or disguised link a model writes is read as markup', async () => {
    const text = 'Sure: <!channel> <!here> <@U012ALICE> & <https://evil.example|your bank>';
    const [sent] = await sender().send({ kind: 'slack', channel: 'C8' }, text, never());
    await sender().edit({ kind: 'slack', channel: 'C8' }, sent!, 'now <!everyone>', never());
    expect(to('C8').map((c) => c.args.text)).toEqual([
      'Sure: &lt;!channel&gt; &lt;!here&gt; &lt;@U012ALICE&gt; &amp; &lt;https://evil.example|your bank&gt;',
      'now &lt;!everyone&gt;',
    ]);
  });

  it('posts the model\'s Markdown as Slack mrkdwn, code kept as written', async () => {
    await sender().send({ kind: 'slack', channel: 'C9' }, '## Result\n**done**, see [the log](https://ci.example/1) and `a**b**`', never());
    expect(to('C9').map((c) => c.args.text)).toEqual(['*Result*\n*done*, see <https://ci.example/1|the log> and `a**b**`']);
  });

  it('sends nothing for a blank reply (Slack would refuse it as no_text)', async () => {
    expect(await sender().send({ kind: 'slack', channel: 'C7' }, ' \n ', never())).toEqual([]);
    expect(to('C7')).toHaveLength(0);
  });

  it('a 429 on the first piece is RateLimited with Slack\'s Retry-After, nothing sent', async () => {
    fake.rateLimitNext(1, 7);
    const err = await sender().send({ kind: 'slack', channel: 'C2' }, 'hello', never()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimited);
    expect((err as RateLimited).retryAfterSeconds).toBe(7);
    expect(to('C2').map((c) => c.status)).toEqual([429]);
  });

  it('a 429 on a later piece waits and goes on, so no piece is posted twice', async () => {
    const text = `${'a'.repeat(3_999)} ${'b'.repeat(10)}`;
    fake.rateLimitNext(1, 1, 1); // the first piece goes out, then the limit hits the second
    await sender().send({ kind: 'slack', channel: 'C3' }, text, never());
    expect(to('C3').map((c) => [c.status, (c.args.text ?? '')[0]])).toEqual([[200, 'a'], [429, 'b'], [200, 'b']]);
  });

  it('does not retry by itself: one failed HTTP call is one failed attempt (the ledger retries)', async () => {
    fake.failNext(1, 503);
    await expect(sender().send({ kind: 'slack', channel: 'C6' }, 'x', never())).rejects.toThrow();
    expect(to('C6').map((c) => c.status)).toEqual([503]);
  });

  it('a token Slack refuses is an error naming it, and the attempt deadline aborts the call', async () => {
    await expect(sender('xoxb-wrong').send({ kind: 'slack', channel: 'C4' }, 'x', never())).rejects.toThrow(/invalid_auth/);
    const gone = new AbortController();
    gone.abort(new Error('deadline'));
    await expect(sender().send({ kind: 'slack', channel: 'C5' }, 'x', gone.signal)).rejects.toThrow();
    expect(to('C5').filter((c) => c.ok)).toHaveLength(0);
    await expect(sender().send({ kind: 'api' }, 'x', never())).rejects.toThrow();
  });
});
