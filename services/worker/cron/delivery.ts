// Delivery of a cron run's result: the obligation is the admission's (platform `cron`), and its
// target names where the CronJob's `deliver` points. `local` is stored only (the run's history and
// the transcript keep it); otherwise the platform's own adapter sends it (Slack channel or thread,
// Telegram chat or topic, Discord channel, the Agent's signed webhook) — with the ledger's retries,
// flood control and duplicate marking, as any reply.
import { z } from 'zod';
import type { Obligation } from '../../core/index.js';
import type { DeliveryAdapter } from '../delivery.js';
import { NotConfigured } from '../platform-delivery.js';

const cronTargetSchema = z.object({
  kind: z.literal('cron'),
  cronJob: z.string(),
  deliver: z.object({ platform: z.string(), target: z.unknown().optional() }),
});

/** Where a cron obligation really goes: the platform's adapter and the obligation as that adapter reads it; undefined for `local`. */
function routed(adapters: ReadonlyMap<string, DeliveryAdapter>, ob: Obligation): { adapter: DeliveryAdapter; ob: Obligation } | undefined {
  const parsed = cronTargetSchema.safeParse(ob.target);
  if (!parsed.success) throw new NotConfigured(`cron obligation ${ob.id} has no CronJob delivery target`);
  const { platform, target } = parsed.data.deliver;
  if (platform === 'local') return undefined;
  const adapter = platform === 'cron' ? undefined : adapters.get(platform);
  if (!adapter) throw new NotConfigured(`CronJob ${parsed.data.cronJob} delivers to "${platform}", which this worker cannot send to`);
  return { adapter, ob: { ...ob, platform, target } };
}

/**
 * The `cron` adapter; `adapters` are the worker's others (read when sending, so all are registered
 * by then). `route` hands the ledger the platform's own adapter, so a long result is split at that
 * platform's limit with each piece recorded (a retry after a failed later piece sends only the rest).
 */
export function cronDelivery(adapters: () => ReadonlyMap<string, DeliveryAdapter>): DeliveryAdapter {
  return {
    route(ob: Obligation) {
      try {
        return routed(adapters(), ob);
      } catch {
        return undefined; // `send` says why
      }
    },
    async send(ob: Obligation, text: string, signal: AbortSignal): Promise<void> {
      const to = routed(adapters(), ob);
      if (to) await to.adapter.send(to.ob, text, signal);
    },
  };
}
