// Where a CronJob's result goes (spec.deliver): `local` (stored only, read with `hermes cron
// history`), `webhook` (the Agent's signed webhook callbackUrl), or `platform:target[:thread]` —
// `slack:#eng`, `slack:C0123:1712345678.000100`, `telegram:-100123:42`, `discord:1234567890`.
// A bare chat platform names no place to post (this install keeps no home channel), so it is refused;
// so is a target its platform cannot take (a Discord channel name, a Telegram chat that is not an id or @username).
import { ScheduleError } from './schedule.js';

/** The parsed target: `target` is the platform's own reply address (as its sender reads it). */
export type CronDelivery =
  | { platform: 'local' }
  | { platform: 'webhook'; target: { kind: 'webhook'; cronJob: string } }
  | { platform: 'slack'; target: { kind: 'slack'; channel: string; threadTs?: string } }
  | { platform: 'telegram'; target: { kind: 'telegram'; chatId: number | string; threadId?: number } }
  | { platform: 'discord'; target: { kind: 'discord'; channelId: string } };

const usage = 'write local, webhook, slack:<channel>[:<thread ts>], telegram:<chat id>[:<topic id>] or discord:<channel id>';

export function parseDeliver(deliver: string | undefined, cronJob: string): CronDelivery {
  const d = (deliver ?? 'local').trim();
  if (d === 'local' || d === '') return { platform: 'local' };
  if (d === 'webhook') return { platform: 'webhook', target: { kind: 'webhook', cronJob } };
  const [platform, target, thread, ...rest] = d.split(':');
  if (!target || rest.length) {
    const why = ['slack', 'telegram', 'discord'].includes(platform!) ? `"${d}" names no ${platform} channel (there is no home channel)` : `"${d}" is not a delivery target`;
    throw new ScheduleError(`deliver: ${why}: ${usage}`);
  }
  if (platform === 'slack') return slackDelivery(target, thread);
  if (platform === 'telegram') return telegramDelivery(target, thread);
  if (platform === 'discord' && !thread) return discordDelivery(target);
  throw new ScheduleError(`deliver: "${d}" is not a delivery target: ${usage}`);
}

function slackDelivery(channel: string, thread: string | undefined): CronDelivery {
  if (thread && !/^\d+\.\d+$/.test(thread)) throw new ScheduleError(`deliver: slack thread "${thread}" must be a message ts (e.g. 1712345678.000100): ${usage}`);
  return { platform: 'slack', target: { kind: 'slack', channel, ...(thread ? { threadTs: thread } : {}) } };
}

/** Discord posts to a channel id only: a name (#general, as Hermes' channel directory resolves) would fail every delivery. */
function discordDelivery(channel: string): CronDelivery {
  if (!/^\d{1,20}$/.test(channel)) throw new ScheduleError(`deliver: discord channel "${channel}" must be a channel id (digits, e.g. discord:1234567890; Developer Mode → Copy Channel ID): ${usage}`);
  return { platform: 'discord', target: { kind: 'discord', channelId: channel } };
}

function telegramDelivery(chat: string, topic: string | undefined): CronDelivery {
  if (topic !== undefined && !/^\d+$/.test(topic)) throw new ScheduleError(`deliver: telegram topic "${topic}" must be a number: ${usage}`);
  // Telegram's chat_id: a number, or @username of a public channel or group; anything else is "chat not found" on every send.
  if (!/^-?\d+$/.test(chat) && !/^@[A-Za-z0-9_]{4,32}$/.test(chat)) throw new ScheduleError(`deliver: telegram chat "${chat}" must be a chat id (e.g. -1001234567890) or @channelusername: ${usage}`);
  const chatId = /^-?\d+$/.test(chat) ? Number(chat) : chat;
  return { platform: 'telegram', target: { kind: 'telegram', chatId, ...(topic ? { threadId: Number(topic) } : {}) } };
}
