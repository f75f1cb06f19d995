// Kanban task writes at the edges, in the ledger functions every surface shares (the tools, the
// admin API, `hermes kanban`): two callers linking the same two tasks in opposite directions at
// once get one link and one cycle refusal — never a Postgres deadlock (a 500 on the admin API) and
// never a cycle, which would leave both tasks waiting for each other forever; numbers a column
// cannot hold are refused with a reason, not a Postgres "out of range".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminScope, createTask, KanbanError, linkTasks, listTasks, namedBoard, showTask, type KanbanScope } from '../../../services/core/index.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, type TestRuntime } from '../../support/system.js';

let database: TestDatabase;
let rt: TestRuntime;
let scope: KanbanScope;
const now = new Date('2026-03-01T00:00:00Z');

beforeAll(async () => {
  database = await createTestDatabase();
  rt = await openTestRuntime(testConfig(database.url));
  await createTestAgent(rt, 'http://127.0.0.1:9');
  scope = adminScope(await namedBoard(rt.db.pool, { namespace: 'default', agent: 'demo', board: 'edges' }, true), 'test');
});
afterAll(async () => {
  await rt?.close();
  await database?.drop();
});

const create = (title: string) => rt.db.tx(async (sql) => (await createTask(sql, scope, { title, assignee: 'demo' }, now)).task.id);
const link = (parent: string, child: string) => rt.db.tx((sql) => linkTasks(sql, scope, parent, child, now));

describe('Kanban task writes', () => {
  it('two opposite links made at once: one is kept, the other is refused as a cycle', async () => {
    for (let i = 0; i < 10; i += 1) {
      const [p, q] = [await create(`p${i}`), await create(`q${i}`)];
      const results = await Promise.allSettled([link(p, q), link(q, p)]);
      const refusals = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toBeInstanceOf(KanbanError);
      expect(refusals[0]).toMatchObject({ message: expect.stringContaining('would make a cycle') });
      const parents = [...(await showTask(rt.db.pool, scope, p)).parents, ...(await showTask(rt.db.pool, scope, q)).parents];
      expect(parents).toHaveLength(1);
    }
  });

  it('refuses a priority, max runtime or retry count its column cannot hold, writing nothing', async () => {
    const before = (await listTasks(rt.db.pool, scope, {})).tasks.length;
    const refused = (extra: Record<string, number>) => rt.db.tx((sql) => createTask(sql, scope, { title: 'edge', assignee: 'demo', ...extra }, now)).then(() => undefined, (err: unknown) => err);
    expect(await refused({ priority: 99_999_999_999 })).toMatchObject({ code: 'invalid', message: 'priority must be a whole number from -2147483648 to 2147483647 (got 99999999999).' });
    expect(await refused({ maxRuntimeSeconds: 99_999_999_999 })).toMatchObject({ code: 'invalid', message: expect.stringContaining('max_runtime_seconds must be a whole number from 1') });
    expect(await refused({ maxRetries: 0 })).toMatchObject({ code: 'invalid', message: expect.stringContaining('max_retries') });
    expect(await refused({ priority: 2_147_483_647 })).toBeUndefined();
    expect((await listTasks(rt.db.pool, scope, {})).tasks.length).toBe(before + 1);
  });

  it('refuses a title, body or idempotency key past its length with a reason, as every surface does (hermes kanban create had no bound: a long key failed in Postgres)', async () => {
    const before = (await listTasks(rt.db.pool, scope, {})).tasks.length;
    const refused = (extra: { title?: string; body?: string; idempotencyKey?: string }) => rt.db.tx((sql) => createTask(sql, scope, { title: 'edge', assignee: 'demo', ...extra }, now)).then(() => undefined, (err: unknown) => err);
    expect(await refused({ idempotencyKey: 'k'.repeat(9_000) })).toMatchObject({ code: 'invalid', message: 'idempotency key takes at most 200 characters (got 9000).' });
    expect(await refused({ title: 't'.repeat(501) })).toMatchObject({ code: 'invalid', message: expect.stringContaining('title takes at most 500') });
    expect(await refused({ body: 'b'.repeat(100_001) })).toMatchObject({ code: 'invalid', message: expect.stringContaining('body takes at most 100000') });
    expect((await listTasks(rt.db.pool, scope, {})).tasks.length).toBe(before);
    expect(await refused({ idempotencyKey: 'k'.repeat(200), title: 't'.repeat(500) })).toBeUndefined();
  });
});
