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

/** The `cron` adapter; `adapters` are the worker's others (read when sending, so all are registered by then). */
export function cronDelivery(adapters: () => ReadonlyMap<string, DeliveryAdapter>): DeliveryAdapter {
  return {
    async send(ob: Obligation, text: string, signal: AbortSignal): Promise<void> {
      const parsed = cronTargetSchema.safeParse(ob.target);
      if (!parsed.success) throw new NotConfigured(`cron obligation ${ob.id} has no CronJob delivery target`);
      const { platform, target } = parsed.data.deliver;
      if (platform === 'local') return;
      const adapter = platform === 'cron' ? undefined : adapters().get(platform);
      if (!adapter) throw new NotConfigured(`CronJob ${parsed.data.cronJob} delivers to "${platform}", which this worker cannot send to`);
      await adapter.send({ ...ob, platform, target }, text, signal);
    },
  };
}
