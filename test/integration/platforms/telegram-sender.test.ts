// The Telegram sender against the fake Bot API over HTTP (the real grammY client): topics and
// quotes, edits, a rate limit on the first and on a later piece, a refused token, the deadline, a
// group that became a supergroup.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimited, Undeliverable, telegram } from '../../../services/platforms/index.js';
import { startFakeTelegram, type FakeTelegram } from '../../support/fake-telegram.js';

let fake: FakeTelegram;
const token = '424242:sender-test-token';
const never = () => new AbortController().signal;

beforeAll(async () => { fake = await startFakeTelegram(token); });
afterAll(async () => { await fake?.close(); });

const sender = (t = token) => new telegram.TelegramSender({ token: t, apiUrl: fake.url });
const to = (chat: number) => fake.calls.filter((c) => c.args.chat_id === chat);

describe('TelegramSender', () => {
  it('sends into the topic, quoting the message it answers, and edits what it sent', async () => {
    const [sent] = await sender().send({ kind: 'telegram', chatId: -1, threadId: 9, replyTo: 77 }, 'working…', never());
    await sender().edit({ kind: 'telegram', chatId: -1 }, sent!, 'done', never());
    expect(to(-1).map((c) => [c.method, c.args.text, c.args.message_thread_id, (c.args.reply_parameters as { message_id?: number } | undefined)?.message_id])).toEqual([
      ['sendMessage', 'working…', 9, 77], ['editMessageText', 'done', undefined, undefined],
    ]);
    expect(to(-1)[1]!.args.message_id).toBe(Number(sent!.id));
  });

  it('follows a group into the supergroup it became, once: a server that names yet another chat ends the send', async () => {
    const upgraded = (to: number) => ({ code: 400, description: 'Bad Request: group chat was upgraded to a supergroup chat', parameters: { migrate_to_chat_id: to } });
    fake.refusedChats.set('-31', upgraded(-1_000_031));
    fake.refusedChats.set('-1000031', upgraded(-31)); // and back again
    const err = await sender().send({ kind: 'telegram', chatId: -31 }, 'hello', never()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(Undeliverable);
    expect([...to(-31), ...to(-1_000_031)].map((c) => [c.args.chat_id, c.status])).toEqual([[-31, 400], [-1_000_031, 400]]);
  });

  it('sends nothing for a blank reply', async () => {
    expect(await sender().send({ kind: 'telegram', chatId: -7 }, ' \n ', never())).toEqual([]);
    expect(to(-7)).toHaveLength(0);
  });

  it('a 429 on the first piece is RateLimited with retry_after, nothing sent', async () => {
    fake.rateLimitNext(1, 7);
    const err = await sender().send({ kind: 'telegram', chatId: -2 }, 'hello', never()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimited);
    expect((err as RateLimited).retryAfterSeconds).toBe(7);
    expect(to(-2).map((c) => c.status)).toEqual([429]);
  });

  it('a 429 on a later piece waits and goes on; only the first piece quotes', async () => {
    const text = `${'a'.repeat(4_095)} ${'b'.repeat(10)}`;
    fake.rateLimitNext(1, 1, 1);
    await sender().send({ kind: 'telegram', chatId: -3, replyTo: 5 }, text, never());
    expect(to(-3).map((c) => [c.status, String(c.args.text)[0], c.args.reply_parameters !== undefined])).toEqual([[200, 'a', true], [429, 'b', false], [200, 'b', false]]);
  });

  it('a refused token is an error that does not contain the token; the deadline aborts the call', async () => {
    const err = await sender('424242:wrong').send({ kind: 'telegram', chatId: -4 }, 'x', never()).then(() => new Error('sent'), (e: unknown) => e as Error);
    expect(err.message).toMatch(/401/);
    expect(err.message).not.toContain('424242:wrong');
    const gone = new AbortController();
    gone.abort(new Error('deadline'));
    await expect(sender().send({ kind: 'telegram', chatId: -5 }, 'x', gone.signal)).rejects.toThrow();
    expect(to(-5).filter((c) => c.ok)).toHaveLength(0);
    await expect(sender().send({ kind: 'slack' }, 'x', never())).rejects.toThrow();
  });
});
