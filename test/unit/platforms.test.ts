// The adapter contract's pure parts: Slack's v0 signature window, splitting, session keys, the
// authorisation order and what a Slack envelope becomes.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { phraseCommands, authorise, platformSessionKey, slack, splitMessage, type InboundEvent, type PlatformSettings } from '../../services/platforms/index.js';

const secret = 'signing-secret';
const body = Buffer.from('{"type":"event_callback"}');
const sign = (ts: number, b: Buffer | string = body, s = secret) => `v0=${createHmac('sha256', s).update(`v0:${ts}:${b.toString()}`).digest('hex')}`;
const now = 1_800_000_000;

describe('Slack v0 signatures', () => {
  it('accepts a signature over the raw bytes within 300 s either way, and nothing past it', () => {
    for (const ts of [now, now - 300, now + 300]) expect(slack.verifySlackRequest(secret, { timestamp: String(ts), signature: sign(ts) }, body, now)).toEqual({ ok: true });
    for (const ts of [now - 301, now + 301]) expect(slack.verifySlackRequest(secret, { timestamp: String(ts), signature: sign(ts) }, body, now).ok).toBe(false);
  });

  it('refuses a wrong secret, another body, a missing or repeated header, a non-numeric timestamp', () => {
    const ok = { timestamp: String(now), signature: sign(now) };
    expect(slack.verifySlackRequest('other', ok, body, now).ok).toBe(false);
    expect(slack.verifySlackRequest(secret, ok, Buffer.from(`${body.toString()} `), now).ok).toBe(false);
    expect(slack.verifySlackRequest(secret, { timestamp: String(now), signature: undefined }, body, now).ok).toBe(false);
    expect(slack.verifySlackRequest(secret, { timestamp: [String(now), String(now)], signature: ok.signature }, body, now).ok).toBe(false);
    expect(slack.verifySlackRequest(secret, { timestamp: `${now}.5`, signature: ok.signature }, body, now).ok).toBe(false);
    expect(slack.verifySlackRequest(secret, { timestamp: String(now), signature: `${ok.signature}0` }, body, now).ok).toBe(false);
  });
});

describe('Slack reply text (slackText)', () => {
  it('writes a model\'s Markdown as mrkdwn: bold, strike, links, headings', () => {
    expect(slack.slackText('# Plan\n**bold** and __also__, ~~gone~~, see [the docs](https://example.com/a?b=1&c=2).'))
      .toBe('*Plan*\n*bold* and *also*, ~gone~, see <https://example.com/a?b=1&amp;c=2|the docs>.');
  });

  it('keeps code as written (escaped only) and leaves snake_case and lone asterisks alone', () => {
    expect(slack.slackText('run `a **b** <c>` then\n```\n# not a heading\nx = **y** && z\n```\nmy_var_name 2 * 3')).toBe(
      'run `a **b** &lt;c&gt;` then\n```\n# not a heading\nx = **y** &amp;&amp; z\n```\nmy_var_name 2 * 3');
  });
});

describe('splitMessage', () => {
  it('keeps short text whole and cuts long text at boundaries, within the limit', () => {
    expect(splitMessage('hello', 10)).toEqual(['hello']);
    const pieces = splitMessage(`${'a'.repeat(8)}\n\n${'b'.repeat(8)} ${'c'.repeat(3)}`, 10);
    expect(pieces).toEqual(['aaaaaaaa', 'bbbbbbbb', 'ccc']);
    const words = splitMessage('x'.repeat(25), 10);
    expect(words).toEqual(['x'.repeat(10), 'x'.repeat(10), 'x'.repeat(5)]);
  });

  it('closes a code block at a cut and opens it again, with its language, in the next piece', () => {
    const lines = Array.from({ length: 60 }, (_, i) => `  line(${i});`);
    const text = `Here:\n\`\`\`js\n${lines.join('\n')}\n\`\`\`\nDone.`;
    const pieces = splitMessage(text, 200);
    expect(pieces.length).toBeGreaterThan(3);
    for (const [i, p] of pieces.entries()) {
      expect(p.length).toBeLessThanOrEqual(200);
      expect(p.match(/^```/gm)?.length ?? 0).toBe(2); // every piece holds a whole block
      if (i > 0) expect(p.startsWith('```js\n  line(')).toBe(true); // reopened, indentation kept
    }
    expect(pieces.at(-1)!.endsWith('```\nDone.')).toBe(true);
    // Without the added fences the pieces are the text itself.
    const joined = pieces.map((p, i) => (i > 0 ? p.replace(/^```js\n/, '') : p).replace(/\n```$/, (m) => (i < pieces.length - 1 ? '' : m))).join('\n');
    expect(joined).toBe(text);
    expect(splitMessage(text, 200)).toEqual(pieces); // the same cuts on every attempt
  });

  it('never cuts a surrogate pair', () => {
    const pieces = splitMessage(`${'a'.repeat(9)}😀${'b'.repeat(5)}`, 10);
    expect(pieces.join('')).toBe(`${'a'.repeat(9)}😀${'b'.repeat(5)}`);
    expect(pieces.every((p) => p.isWellFormed())).toBe(true);
  });
});

const event = (chat: InboundEvent['chat'], user = 'U1'): InboundEvent => ({ platform: 'slack', eventId: 'Ev1', chat, user: { id: user }, text: 'hi', replyTarget: { kind: 'slack' } });
const agent = { namespace: 'team-a', name: 'bot' };

describe('session keys (ARCHITECTURE §7)', () => {
  it('DMs by chat, groups per participant, threads shared', () => {
    expect(platformSessionKey(agent, event({ type: 'dm', id: 'D1' }))).toBe('agent:team-a/bot:slack:dm:D1');
    expect(platformSessionKey(agent, event({ type: 'group', id: 'G1' }, 'U1'))).toBe('agent:team-a/bot:slack:group:G1:U1');
    expect(platformSessionKey(agent, event({ type: 'group', id: 'G1' }, 'U1'), { groupPerUser: false })).toBe('agent:team-a/bot:slack:group:G1');
    const thread = (u: string) => platformSessionKey(agent, event({ type: 'group', id: 'C1', threadId: '17.5' }, u));
    expect(thread('U1')).toBe('agent:team-a/bot:slack:group:C1:17.5');
    expect(thread('U2')).toBe(thread('U1'));
  });

  it('escapes ":" so a platform id cannot forge another key', () => {
    expect(platformSessionKey(agent, event({ type: 'group', id: 'G1:U2' }, 'U1'))).not.toBe(platformSessionKey(agent, event({ type: 'group', id: 'G1' }, 'U2:U1')));
  });
});

const settings = (p: Partial<PlatformSettings>): PlatformSettings => ({ type: 'slack', credentialsSecret: 's', allowlist: [], allowAll: false, dmPairing: true, groupPolicy: 'mention', ...p });

describe('authorisation order', () => {
  it('allow-all, then the allowlist, then default deny (pairing marked for DMs)', () => {
    expect(authorise(settings({ allowAll: true }), event({ type: 'dm', id: 'D' }))).toEqual({ allowed: true, by: 'allow-all' });
    expect(authorise(settings({ allowlist: ['U1'] }), event({ type: 'group', id: 'C' }))).toEqual({ allowed: true, by: 'allowlist' });
    expect(authorise(settings({ allowlist: ['U2'] }), event({ type: 'dm', id: 'D' }))).toEqual({ allowed: false, reason: 'not-allowed', pairing: true });
    expect(authorise(settings({}), event({ type: 'group', id: 'C' }))).toEqual({ allowed: false, reason: 'not-allowed', pairing: false });
  });
});

describe('Slack envelopes', () => {
  const envelope = (ev: Record<string, unknown>) => slack.parseSlackEnvelope({ type: 'event_callback', event_id: 'Ev9', team_id: 'T1', authorizations: [{ user_id: 'UBOT', is_bot: true }], event: ev });

  it('strips the mention of our bot, threads a top-level channel mention, leaves DMs unthreaded', () => {
    const mention = slack.normaliseSlack(envelope({ type: 'app_mention', user: 'U1', text: '<@UBOT> help me', channel: 'C1', ts: '10.1' }), settings({}));
    expect(mention).toMatchObject({ kind: 'message', event: { text: 'help me', chat: { type: 'group', id: 'C1', threadId: '10.1' }, replyTarget: { kind: 'slack', channel: 'C1', threadTs: '10.1' } } });
    const dm = slack.normaliseSlack(envelope({ type: 'message', channel_type: 'im', user: 'U1', text: 'hi', channel: 'D1', ts: '11.1' }), settings({}));
    expect(dm).toMatchObject({ kind: 'message', event: { chat: { type: 'dm', id: 'D1' }, replyTarget: { channel: 'D1' } } });
    expect((dm as { event: InboundEvent }).event.chat.threadId).toBeUndefined();
  });

  it('turns `!command` into the agent\'s `/command` (Slack keeps `/…` for itself), and only known commands', () => {
    const text = (t: string) => (slack.normaliseSlack(envelope({ type: 'message', channel_type: 'im', user: 'U1', text: t, channel: 'D1', ts: '12.1' }), settings({})) as { event: InboundEvent }).event.text;
    expect(text('!retry')).toBe('/retry');
    expect(text('!steer use the other file')).toBe('/steer use the other file');
    expect(text('<@UBOT> !stop')).toBe('/stop');
    expect(text('!important: read this')).toBe('!important: read this');
    expect(text('wow!stop')).toBe('wow!stop');
  });

  it('in a thread, a message mentioning us is left to its app_mention; one mentioning a user whose id starts with ours is a follow-up', () => {
    const inThread = (text: string) => slack.normaliseSlack(envelope({ type: 'message', user: 'U1', text, channel: 'C1', ts: '20.2', thread_ts: '20.1' }), settings({})).kind;
    expect(inThread('<@UBOT> and again')).toBe('ignore');
    expect(inThread('<@UBOT|hermes> and again')).toBe('ignore');
    expect(inThread('ask <@UBOTANIST> about this')).toBe('follow-up');
    expect(inThread('plain follow-up')).toBe('follow-up');
  });

  it('ignores what is not a person talking to us', () => {
    const s = settings({ groupPolicy: 'off' });
    expect(slack.normaliseSlack(envelope({ type: 'app_mention', user: 'U1', text: '<@UBOT> hi', channel: 'C1', ts: '1.1' }), s).kind).toBe('ignore');
    expect(slack.normaliseSlack(envelope({ type: 'message', subtype: 'message_deleted', channel_type: 'im', channel: 'D1', ts: '1.2' }), settings({})).kind).toBe('ignore');
    expect(slack.normaliseSlack(envelope({ type: 'reaction_added', user: 'U1' }), settings({})).kind).toBe('ignore');
    expect(slack.normaliseSlack(slack.parseSlackEnvelope({ type: 'app_rate_limited', team_id: 'T1', minute_rate_limited: 1_518_467_820 }), settings({}))).toMatchObject({ kind: 'ignore', warn: true });
    expect(() => slack.parseSlackEnvelope({ type: 'something_new' })).toThrow();
  });
});

describe('phraseCommands (notices name commands as users write them on the platform)', () => {
  it('writes Slack commands with `!`, whole command words only', () => {
    const notice = 'The turn was interrupted. Send /retry or /discard (or start over with /new). See "/help".';
    expect(phraseCommands(notice, '!')).toBe('The turn was interrupted. Send !retry or !discard (or start over with !new). See "!help".');
    expect(phraseCommands('/retry', '!')).toBe('!retry');
    // The interrupted turn's marker (worker stopReason) names the command inside brackets.
    expect(phraseCommands('Once upo\n\n[interrupted: stopped by /stop]', '!')).toBe('Once upo\n\n[interrupted: stopped by !stop]');
    expect(phraseCommands('[/new] and (/help)', '!')).toBe('[!new] and (!help)');
    expect(phraseCommands('Edit /new/file.txt, /usr/bin/stop and a/retry; /retrying is no command', '!')).toBe('Edit /new/file.txt, /usr/bin/stop and a/retry; /retrying is no command');
    expect(phraseCommands(notice, '/')).toBe(notice);
  });

  it('rewrites every built-in command, the worker\'s too (/memory, /skills, /curator, /kanban, /moa)', () => {
    const usage = 'Not understood: /memory frob. Use /memory pending, /skills approve <id>, /curator status, /kanban list or /moa <prompt>.';
    expect(phraseCommands(usage, '!')).toBe('Not understood: !memory frob. Use !memory pending, !skills approve <id>, !curator status, !kanban list or !moa <prompt>.');
  });
});
