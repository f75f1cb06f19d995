// A Postgres connection lost during a turn's first reads (the permissions, the control, usage and
// recovery checks before the model) costs latency, not the turn: the read is retried while the
// lease holds and the turn answers. Made deterministic with a table lock: the worker's read of
// `model_call_usage` for a `/usage` message waits on it, its backend is terminated (what a
// Postgres restart does to every connection), the lock goes, and the retry goes through.
import { expect, it } from 'vitest';
import pg from 'pg';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';
import { eventually } from '../../support/services.js';

const sys = useAgentSystem(() => ({ text: 'the model was asked' }));

it('retries a read lost to a terminated connection before the model, and answers', async () => {
  const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'blip' } });
  const locker = new pg.Client({ connectionString: sys.database.url });
  const admin = new pg.Client({ connectionString: sys.database.url });
  await locker.connect();
  await admin.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE model_call_usage IN ACCESS EXCLUSIVE MODE');
    const turn = runTurn(sys.rt, { agentId, sessionKey: `${agentId}:blip`, content: '/usage' });
    const pid = await eventually(async () => (await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%model_call_usage%'`)).rows[0]?.pid,
    'the worker waiting on the usage read');
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await eventually(async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0, 'the backend gone');
    await locker.query('COMMIT');
    const { a, reply } = await turn;
    expect(a.outcome).toBe('completed');
    expect(reply).toMatch(/^Usage in this conversation: 0 model call\(s\)\./);
    expect(sys.model.requests).toHaveLength(0);
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
    await admin.end();
  }
});
