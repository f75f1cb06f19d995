// The Discord sender against the fake Discord over HTTP: a /ask reply through the interaction's
// webhook while its token lives (first piece replaces "thinking…", the rest are follow-ups), a
// channel message as the bot after the 15 minutes, 429 → RateLimited, and /ask registration.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimited } from '../../../services/platforms/index.js';
import { DiscordRest, DiscordSender, registerAskCommand } from '../../../services/platforms/discord/index.js';
import { startFakeDiscord, type FakeDiscord } from '../../support/fake-discord.js';

const TOKEN = 'discord-sender-bot-token';
let fake: FakeDiscord;
beforeAll(async () => { fake = await startFakeDiscord(TOKEN); });
afterAll(async () => { await fake?.close(); });

const signal = () => AbortSignal.timeout(10_000);
const target = (expiresAt: number, channelId: string) => ({ kind: 'discord', channelId, interaction: { applicationId: fake.applicationId, token: `itok-${channelId}`, expiresAt } });

describe('DiscordSender', () => {
  it('replies through the interaction webhook while the token lives: @original, then follow-ups', async () => {
    const sender = new DiscordSender({ token: TOKEN, apiUrl: fake.apiUrl });
    const sent = await sender.send(target(Date.now() + 14 * 60_000, '1'), `${'x'.repeat(1_999)} ${'y'.repeat(10)}`, signal());
    const calls = fake.calls.filter((c) => c.path.startsWith(`/webhooks/${fake.applicationId}/itok-1`));
    expect(calls.map((c) => [c.method, c.path.replace(/\?.*/, '')])).toEqual([
      ['PATCH', `/webhooks/${fake.applicationId}/itok-1/messages/@original`],
      ['POST', `/webhooks/${fake.applicationId}/itok-1`],
    ]);
    expect(calls.every((c) => c.auth === undefined)).toBe(true);
    expect(sent).toHaveLength(2);
  });

  it('falls back to a channel message as the bot once the 15-minute token has expired', async () => {
    const now = Date.now();
    const sender = new DiscordSender({ token: TOKEN, apiUrl: fake.apiUrl, now: () => now + 16 * 60_000 });
    await sender.send(target(now + 15 * 60_000, '2'), 'late reply', signal());
    const call = fake.calls.at(-1)!;
    expect(call).toMatchObject({ method: 'POST', path: '/channels/2/messages', auth: `Bot ${TOKEN}`, status: 200 });
    expect(call.body.content).toBe('late reply');
  });

  it('turns a 429 into RateLimited with retry_after, and a wrong token into an error', async () => {
    fake.rateLimitNext(1, 7);
    const sender = new DiscordSender({ token: TOKEN, apiUrl: fake.apiUrl });
    const err = await sender.send({ kind: 'discord', channelId: '3' }, 'hi', signal()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimited);
    expect((err as RateLimited).retryAfterSeconds).toBe(7);
    await expect(new DiscordSender({ token: 'wrong', apiUrl: fake.apiUrl }).send({ kind: 'discord', channelId: '3' }, 'hi', signal())).rejects.toThrow(/401/);
  });

  it('registers /ask with the bot token', async () => {
    const id = await registerAskCommand(new DiscordRest({ apiUrl: fake.apiUrl, token: TOKEN }), fake.applicationId);
    expect(id).toMatch(/^\d+$/);
    const call = fake.calls.at(-1)!;
    expect(call.body).toMatchObject({ name: 'ask', options: [{ name: 'prompt', type: 3, required: true }] });
  });
});
