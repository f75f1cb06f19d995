// The pure parts of the Teams and signed webhook adapters: the webhook's signature window, what a
// Teams activity becomes (mention rule, threads, ids), and the platform toolset restriction.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { platformToolsets, teams, webhook, type PlatformSettings } from '../../services/platforms/index.js';
import type { CompiledAgent } from '../../services/core/index.js';

const secret = 'webhook-secret';
const body = Buffer.from('{"text":"hi","user":"ci"}');
const sign = (ts: number, b: Buffer | string = body, s = secret) => `sha256=${createHmac('sha256', s).update(`${ts}.${b.toString()}`).digest('hex')}`;
const now = 1_800_000_000;

describe('signed webhook signatures', () => {
  it('accepts a signature over the raw bytes within 300 s either way, and nothing past it', () => {
    for (const ts of [now, now - 300, now + 300]) expect(webhook.verifyWebhookRequest(secret, { timestamp: String(ts), signature: sign(ts) }, body, now)).toEqual({ ok: true });
    for (const ts of [now - 301, now + 301]) expect(webhook.verifyWebhookRequest(secret, { timestamp: String(ts), signature: sign(ts) }, body, now).ok).toBe(false);
  });

  it('refuses a wrong secret, another body, a missing or repeated header, a non-numeric timestamp', () => {
    const ok = { timestamp: String(now), signature: sign(now) };
    expect(webhook.verifyWebhookRequest('other', ok, body, now).ok).toBe(false);
    expect(webhook.verifyWebhookRequest(secret, ok, Buffer.from(`${body.toString()} `), now).ok).toBe(false);
    expect(webhook.verifyWebhookRequest(secret, { timestamp: String(now), signature: undefined }, body, now).ok).toBe(false);
    expect(webhook.verifyWebhookRequest(secret, { timestamp: [String(now), String(now)], signature: ok.signature }, body, now).ok).toBe(false);
    expect(webhook.verifyWebhookRequest(secret, { timestamp: `${now}.5`, signature: ok.signature }, body, now).ok).toBe(false);
    expect(webhook.signWebhook(secret, body, now)).toEqual({ 'X-Hermes-Timestamp': String(now), 'X-Hermes-Signature': sign(now) });
  });

  it('keys sessions by user, or by conversation and user; dedupes by key, id or signature', () => {
    const dm = webhook.webhookEvent({ text: ' hi ', user: 'ci' }, undefined, 'sha256=aa');
    const conv = webhook.webhookEvent({ text: 'hi', user: 'ci', conversation: 'pr-1', id: 'e1' }, 'e1', 'sha256=bb');
    expect(dm.ok && dm.event).toMatchObject({ chat: { type: 'dm', id: 'ci' }, text: 'hi', eventId: expect.stringMatching(/^sig:[0-9a-f]{64}$/) });
    expect(conv.ok && conv.event).toMatchObject({ chat: { type: 'group', id: 'pr-1' }, eventId: 'e1' });
    expect(webhook.webhookEvent({ text: 'hi', user: 'ci', id: 'a' }, 'b', 'x').ok).toBe(false);
  });
});

const settings: PlatformSettings = { type: 'teams', credentialsSecret: 't', allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'mention' };
const BOT = '28:bot';
const act = (o: { conv: string; type: 'personal' | 'groupChat' | 'channel'; text: string; mention?: boolean; from?: string }) => teams.parseTeamsActivity({
  type: 'message', id: '1700000000123', serviceUrl: 'https://smba.trafficmanager.net/amer/', channelId: 'msteams',
  from: { id: o.from ?? '29:u', aadObjectId: 'aad-u' }, recipient: { id: BOT, name: 'Hermes' },
  conversation: { id: o.conv, conversationType: o.type },
  text: o.mention ? `<at>Hermes</at> ${o.text}` : o.text,
  entities: o.mention ? [{ type: 'mention', text: '<at>Hermes</at>', mentioned: { id: BOT, name: 'Hermes' } }] : [],
});

describe('Teams activities', () => {
  it('DMs are messages; group chats need a mention, which is stripped', () => {
    expect(teams.normaliseTeams(act({ conv: 'a:1', type: 'personal', text: 'hi' }), settings)).toMatchObject({ kind: 'message', event: { chat: { type: 'dm', id: 'a:1' }, user: { id: 'aad-u' } } });
    expect(teams.normaliseTeams(act({ conv: '19:g', type: 'groupChat', text: 'hi' }), settings).kind).toBe('ignore');
    expect(teams.normaliseTeams(act({ conv: '19:g', type: 'groupChat', text: 'hi', mention: true }), settings)).toMatchObject({ kind: 'message', event: { text: 'hi', chat: { type: 'group', id: '19:g' } } });
    expect(teams.normaliseTeams(act({ conv: '19:g', type: 'groupChat', text: 'hi', mention: true }), { ...settings, groupPolicy: 'off' }).kind).toBe('ignore');
    expect(teams.normaliseTeams(act({ conv: 'a:1', type: 'personal', text: 'echo', from: BOT }), settings).kind).toBe('ignore');
  });

  it('a channel thread is one session and the reply goes into it; unmentioned thread messages are follow-ups', () => {
    const n = teams.normaliseTeams(act({ conv: '19:c@thread.tacv2;messageid=42', type: 'channel', text: 'q', mention: true }), settings);
    expect(n).toMatchObject({ kind: 'message', event: { chat: { type: 'group', id: '19:c@thread.tacv2', threadId: '42' }, replyTarget: { conversationId: '19:c@thread.tacv2;messageid=42' } } });
    expect(teams.normaliseTeams(act({ conv: '19:c@thread.tacv2;messageid=42', type: 'channel', text: 'q' }), settings).kind).toBe('follow-up');
  });

  it('binds the token to the activity: serviceurl claim and channel endorsement', () => {
    const a = act({ conv: 'a:1', type: 'personal', text: 'hi' });
    const ok = { ok: true as const, claims: { serviceurl: 'https://smba.trafficmanager.net/amer' }, endorsements: ['msteams'] };
    expect(teams.checkActivityClaims(ok, a).ok).toBe(true);
    expect(teams.checkActivityClaims({ ...ok, claims: { serviceurl: 'https://evil.example/' } }, a).ok).toBe(false);
    expect(teams.checkActivityClaims({ ...ok, endorsements: ['skype'] }, a).ok).toBe(false);
    expect(teams.checkActivityClaims({ ok: true, claims: {} }, a).ok).toBe(false);
  });
});

describe('platform toolsets', () => {
  const agent = (platforms: PlatformSettings[]) => ({ platforms } as unknown as CompiledAgent);
  it('restricts webhook turns by default, lets the platform entry choose, and leaves other platforms alone', () => {
    const hook: PlatformSettings = { ...settings, type: 'webhook' };
    expect(platformToolsets(agent([hook]), 'webhook')).toEqual(webhook.WEBHOOK_DEFAULT_TOOLSETS);
    expect(platformToolsets(agent([{ ...hook, toolsets: ['clock', 'todo'] }]), 'webhook')).toEqual(['clock', 'todo']);
    expect(platformToolsets(agent([settings]), 'teams')).toBeUndefined();
    expect(platformToolsets(agent([]), 'api')).toBeUndefined();
  });
});
