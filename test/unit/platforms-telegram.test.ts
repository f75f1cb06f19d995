// The pure parts of the Telegram module: the secret-token check, who a group message addresses,
// the text the model sees, topics and keys.
import { describe, expect, it } from 'vitest';
import { platformSessionKey, telegram, type PlatformSettings } from '../../services/platforms/index.js';

const bot = { id: 99, username: 'HermesBot' };
const settings: PlatformSettings = { type: 'telegram', credentialsSecret: 's', allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'mention' };
const msg = (extra: Record<string, unknown>) => telegram.parseTelegramUpdate({
  update_id: 1, message: { message_id: 10, date: 0, from: { id: 5, is_bot: false }, chat: { id: -100, type: 'supergroup' }, text: 'hi', ...extra },
});

describe('telegram webhook secret', () => {
  it('accepts only the exact token, sent once', () => {
    expect(telegram.verifyTelegramSecret('s3cret', 's3cret').ok).toBe(true);
    for (const h of [undefined, '', 's3cre', 's3cret ', 'S3CRET', ['s3cret', 's3cret']]) expect(telegram.verifyTelegramSecret('s3cret', h).ok).toBe(false);
  });
});

describe('telegram updates', () => {
  it('finds mentions, text mentions, replies to the bot and commands, case-insensitively', () => {
    const addressed = (extra: Record<string, unknown>) => telegram.normaliseTelegram(msg(extra), settings, bot).kind;
    expect(addressed({ text: 'hello @hermesbot', entities: [{ type: 'mention', offset: 6, length: 10 }] })).toBe('message');
    expect(addressed({ text: 'hello @otherbot', entities: [{ type: 'mention', offset: 6, length: 9 }] })).toBe('ignore');
    expect(addressed({ text: 'hey Hermes', entities: [{ type: 'text_mention', offset: 4, length: 6, user: { id: 99, is_bot: true } }] })).toBe('message');
    expect(addressed({ text: 'ok', reply_to_message: { message_id: 3, from: { id: 99, is_bot: true } } })).toBe('message');
    expect(addressed({ text: '/stop', entities: [{ type: 'bot_command', offset: 0, length: 5 }] })).toBe('message');
    expect(addressed({ text: '/stop@OtherBot', entities: [{ type: 'bot_command', offset: 0, length: 14 }] })).toBe('ignore');
    expect(addressed({ text: '@hermesbot' })).toBe('ignore'); // no entity: Telegram did not mark a mention
    // In a forum, a topic message "replies" to the topic's root: that is not a reply to the bot.
    expect(addressed({ is_topic_message: true, message_thread_id: 3, reply_to_message: { message_id: 3, from: { id: 99, is_bot: true } } })).toBe('ignore');
    expect(telegram.normaliseTelegram(msg({}), { ...settings, groupPolicy: 'all' }, bot).kind).toBe('message');
    expect(telegram.normaliseTelegram(msg({ text: '/x', entities: [{ type: 'bot_command', offset: 0, length: 2 }] }), { ...settings, groupPolicy: 'off' }, bot).kind).toBe('ignore');
  });

  it('removes the mention and the @bot of a command, keeping other text', () => {
    const text = (t: string, entities: unknown[]) => telegram.cleanText(msg({ text: t, entities }).message!, bot);
    expect(text('@HermesBot  what now?', [{ type: 'mention', offset: 0, length: 10 }])).toBe('what now?');
    expect(text('/steer@HermesBot go left', [{ type: 'bot_command', offset: 0, length: 16 }])).toBe('/steer go left');
    expect(text('ask @alice 🙂 and @HermesBot', [{ type: 'mention', offset: 4, length: 6 }, { type: 'mention', offset: 18, length: 10 }])).toBe('ask @alice 🙂 and');
    expect(text('@HermesBot', [{ type: 'mention', offset: 0, length: 10 }])).toBe('@HermesBot');
  });

  it('makes a topic one shared session and a DM one per chat; event ids are per bot', () => {
    const agent = { namespace: 'ns', name: 'a' };
    const topic = telegram.normaliseTelegram(msg({ text: '/x', entities: [{ type: 'bot_command', offset: 0, length: 2 }], is_topic_message: true, message_thread_id: 4 }), settings, bot);
    if (topic.kind !== 'message') throw new Error(topic.kind);
    expect(platformSessionKey(agent, topic.event)).toBe('agent:ns/a:telegram:group:-100:4');
    expect(topic.event.eventId).toBe('99:1');
    expect(topic.event.replyTarget).toEqual({ kind: 'telegram', chatId: -100, threadId: 4, replyTo: 10 });
    const direct = telegram.normaliseTelegram(msg({ chat: { id: 5, type: 'private' } }), settings, bot);
    if (direct.kind !== 'message') throw new Error(direct.kind);
    expect(platformSessionKey(agent, direct.event)).toBe('agent:ns/a:telegram:dm:5');
    expect(direct.event.replyTarget).toEqual({ kind: 'telegram', chatId: 5 });
  });

  it('ignores bots, anonymous senders, channels and empty messages; refuses unknown shapes', () => {
    for (const extra of [{ from: { id: 7, is_bot: true } }, { from: undefined }, { chat: { id: -1, type: 'channel' } }, { text: '  ' }]) {
      expect(telegram.normaliseTelegram(msg({ ...extra, chat: (extra as { chat?: unknown }).chat ?? { id: 1, type: 'private' } }), settings, bot).kind).toBe('ignore');
    }
    expect(() => telegram.parseTelegramUpdate({ update_id: -1 })).toThrow();
    expect(() => telegram.parseTelegramUpdate({ update_id: 1, message: { message_id: 1 } })).toThrow();
    expect(telegram.botLabel('123:abc')).toBe('123');
    expect(telegram.botLabel('weird-token')).toMatch(/^h[0-9a-f]{16}$/);
  });
});
