// Which platforms get a hook URL in the Agent's status: Slack, Discord (interactions), Teams,
// signed webhooks, and Telegram unless it long-polls.
import { describe, expect, it } from 'vitest';
import { platformSchema } from '../../../operator/api/agent.js';
import { receivesWebhooks } from '../../../operator/controllers/agent.js';

const platform = (p: Record<string, unknown>) => platformSchema.parse({ credentials: { secretRef: { name: 's' } }, ...p });

describe('Agent status hooks', () => {
  it('lists slack, discord, teams, webhook and webhook-mode telegram, not polling telegram', () => {
    expect(receivesWebhooks(platform({ type: 'slack' }))).toBe(true);
    expect(receivesWebhooks(platform({ type: 'telegram' }))).toBe(true);
    expect(receivesWebhooks(platform({ type: 'telegram', mode: 'webhook' }))).toBe(true);
    expect(receivesWebhooks(platform({ type: 'telegram', mode: 'polling' }))).toBe(false);
    for (const type of ['discord', 'teams', 'webhook']) expect(receivesWebhooks(platform({ type }))).toBe(true);
    expect(receivesWebhooks(platform({ type: 'matrix' }))).toBe(false);
  });

  it('refuses mode on platforms other than telegram', () => {
    expect(() => platform({ type: 'slack', mode: 'polling' })).toThrow(/telegram platforms only/);
  });
});
