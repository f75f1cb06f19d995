// The Discord Gateway connection of an agent's bot: channel messages (DMs, guild channels under
// groupPolicy, threads) arrive over it. One connection per bot across gateway replicas (the
// supervisor's leader lock is named by a hash of the bot token); a bot without a token in its
// Secret has none. Each MESSAGE_CREATE is normalised, admitted (deduplicated by message id), and
// only then is the Gateway's sequence advanced; a failed admission resumes before the message.
import { isStoreUnavailable, pause, sha256, type AgentRecord, type Logger } from '../../core/index.js';
import { discord, type InboundEvent, type PlatformSettings } from '../../platforms/index.js';
import type { GatewayContext } from '../context.js';
import { admitPlatformEvent, settleFollowUp } from '../platform-admission.js';
import type { Connector } from './supervisor.js';

/** Channels whose type we looked up (threads vs channels); bounded, oldest dropped first. */
const CHANNEL_CACHE_SIZE = 1_000;

async function botToken(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings): Promise<string | undefined> {
  const ref = { name: settings.credentialsSecret, key: discord.DISCORD_KEYS.botToken };
  return (await ctx.deps.secrets?.resolve(agent.compiled.agent.namespace, ref))?.trim() || undefined;
}

type ChannelInfo = { type: number; parentId?: string | null };

/** Looks up guild channels' types (is it a thread?) through REST, remembering a bounded number. */
function channelTypes(rest: discord.DiscordRest, log: Logger): (id: string) => Promise<ChannelInfo | undefined> {
  const known = new Map<string, ChannelInfo>();
  return async (id) => {
    const hit = known.get(id);
    if (hit) return hit;
    try {
      const c = await rest.request<{ type: number; parent_id?: string | null }>('GET', `/channels/${id}`);
      const info = { type: c.type, parentId: c.parent_id ?? null };
      if (known.size >= CHANNEL_CACHE_SIZE) known.delete(known.keys().next().value!);
      known.set(id, info);
      return info;
    } catch (err) {
      // Not readable (permissions): treated as a plain channel, asked again next time.
      log.warn({ err, channel: id }, 'Could not read a Discord channel; treating it as a plain channel');
      return undefined;
    }
  };
}

interface Link { ctx: GatewayContext; agent: AgentRecord; settings: PlatformSettings; log: Logger; channel: (id: string) => Promise<ChannelInfo | undefined> }

/** One MESSAGE_CREATE: normalise → (follow-up: is the thread ours?) → admit. Throws when the admission failed. */
async function onMessage(link: Link, botUserId: string | undefined, d: unknown): Promise<void> {
  const { ctx, agent, settings, log } = link;
  const m = discord.parseDiscordMessage(d);
  if (!m) { log.warn('Ignored a MESSAGE_CREATE of a shape we do not know'); return; }
  if (!botUserId) { log.warn({ message: m.id }, 'Ignored a Discord message that arrived before READY'); return; }
  const channel = m.guild_id !== undefined ? await link.channel(m.channel_id) : undefined;
  let normalised = discord.normaliseDiscordMessage(m, settings, { botUserId, ...(channel ? { channel } : {}) });
  normalised = await settleFollowUp(ctx, agent, settings, normalised);
  if (normalised.kind !== 'message') {
    const reason = normalised.kind === 'ignore' ? normalised.reason : normalised.kind;
    log[normalised.kind === 'ignore' && normalised.warn ? 'warn' : 'debug']({ message: m.id, reason }, 'Ignored a Discord message');
    return;
  }
  await admitOrSkip(link, normalised.event);
}

/**
 * Postgres (or Redis) unavailable: rethrown, so the connection resumes before this message and
 * Discord sends it again. Anything else would fail again the same way: logged and skipped.
 */
async function admitOrSkip(link: Link, event: InboundEvent): Promise<void> {
  const { ctx, agent, settings, log } = link;
  try {
    const admitted = await admitPlatformEvent(ctx, agent, settings, event, { trace: {}, log });
    log.info({ platform: 'discord', eventId: event.eventId, ...admitted }, 'Admitted Discord message');
  } catch (err) {
    if (isStoreUnavailable(err) || ((err as { statusCode?: number }).statusCode ?? 0) >= 500) throw err;
    log.error({ err, message: event.eventId }, 'Could not admit a Discord message; skipped');
  }
}

export const discordConnector: Connector = {
  platform: 'discord',
  async plan(ctx, agent, settings) {
    const token = await botToken(ctx, agent, settings);
    return token ? `discord-gateway:${sha256(token).slice(0, 16)}` : undefined;
  },
  async run(ctx, agent, settings, signal) {
    const token = await botToken(ctx, agent, settings);
    if (!token) return;
    const log = ctx.deps.log.child({ agent: `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`, platform: 'discord' });
    const rest = new discord.DiscordRest({ apiUrl: discord.discordApiUrl(settings, ctx.deps.config.HERMES_DISCORD_API_URL), token });
    const link: Link = { ctx, agent, settings, log, channel: channelTypes(rest, log) };
    let botUserId: string | undefined;
    try {
      await discord.runDiscordGateway({
        rest, token, log,
        handlers: {
          ready: (user) => { botUserId = user.id; },
          dispatch: (type, d) => (type === 'MESSAGE_CREATE' ? onMessage(link, botUserId, d) : Promise.resolve()),
        },
      }, signal);
    } catch (err) {
      if (!(err instanceof discord.DiscordGatewayFatal)) throw err;
      // Reconnecting cannot help until someone fixes the bot's settings: wait (the agent changing restarts us).
      log.error({ err }, 'The Discord Gateway refused this bot; not reconnecting for 5 minutes');
      await pause(300_000, signal);
    }
  },
};
