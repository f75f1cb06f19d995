// The platform-connection supervisor on real Postgres: two gateway replicas campaign for the same
// connection and exactly one holds it; a changed agent restarts it, a stopped replica hands it
// over, and an agent that no longer asks for it stops it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishRevision } from '../../../services/core/index.js';
import { createContext } from '../../../services/gateway/context.js';
import { startConnectors, type Connector, type ConnectorSupervisor } from '../../../services/gateway/connectors/index.js';
import { eventually } from '../../support/services.js';
import { compiledAgent, openHarness, type Harness } from './harness.js';

const slackPlatform = { type: 'slack', credentialsSecret: 'conn-secret', allowlist: [], allowAll: false, dmPairing: false, groupPolicy: 'mention' as const };

describe('platform connection supervisor', () => {
  let h: Harness;
  beforeAll(async () => { h = await openHarness(); });
  afterAll(async () => { await h.close(); });

  it('holds each connection on one replica, restarts it on change, fails over, and stops it when unwanted', async () => {
    const runs: { replica: string; persona: string; ended: boolean }[] = [];
    const connector = (replica: string): Connector => ({
      platform: 'slack',
      plan: (_ctx, agent, settings) => Promise.resolve(agent.compiled.agent.name === 'conn' ? `test:${settings.credentialsSecret}` : undefined),
      run: (_ctx, agent, _settings, signal) => new Promise<void>((resolve) => {
        const run = { replica, persona: agent.compiled.persona, ended: false };
        runs.push(run);
        signal.addEventListener('abort', () => { run.ended = true; resolve(); }, { once: true });
      }),
    });
    const live = () => runs.filter((r) => !r.ended);
    await publishRevision(h.db, { ...compiledAgent('conn'), persona: 'v1', platforms: [slackPlatform] });
    const opts = { refreshMs: 100, leader: { pingMs: 100, pingTimeoutMs: 1_000 } };
    const ctxA = createContext(h.deps);
    const ctxB = createContext(h.deps);
    const a: ConnectorSupervisor = startConnectors(ctxA, [connector('a')], opts);
    const b: ConnectorSupervisor = startConnectors(ctxB, [connector('b')], opts);
    try {
      await eventually(() => live().length === 1, 'one replica holds the connection');
      await new Promise((r) => setTimeout(r, 500));
      expect(live()).toHaveLength(1);
      expect(a.campaigns()).toEqual(['test:conn-secret']);
      expect(b.campaigns()).toEqual(['test:conn-secret']);

      await publishRevision(h.db, { ...compiledAgent('conn'), persona: 'v2', platforms: [slackPlatform] });
      await eventually(() => live().length === 1 && live()[0]!.persona === 'v2', 'the connection restarts with the new revision');

      const holder = live()[0]!.replica === 'a' ? a : b;
      const other = holder === a ? 'b' : 'a';
      await holder.stop();
      await eventually(() => live().length === 1 && live()[0]!.replica === other, 'the other replica takes the connection over');

      await publishRevision(h.db, { ...compiledAgent('conn'), persona: 'v3' });
      await eventually(() => live().length === 0, 'no agent asks for the connection: it stops');
      expect((holder === a ? b : a).campaigns()).toEqual([]);
    } finally {
      await a.stop();
      await b.stop();
      await ctxA.close();
      await ctxB.close();
    }
  });
});
