// `hermes kanban create` as an operator types it (the real binary against a real Postgres): a
// numeric option that is not a whole number in range is refused by name before anything is
// written, instead of reaching Postgres as NaN ("invalid input syntax for type integer").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHermes } from '../../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';

let database: TestDatabase;

const hermes = (...args: string[]) => runHermes(args, { DATABASE_URL: database.url });

beforeAll(async () => { database = await createTestDatabase(); });
afterAll(async () => { await database?.drop(); });

describe('hermes kanban create: numeric options', () => {
  it.each([
    ['--priority', 'abc'], ['--priority', '1.5'], ['--priority', '99999999999'],
    ['--max-runtime', '0'], ['--max-runtime', 'ten'], ['--max-retries', '-1'],
  ])('%s %s is refused by name, with exit 1 and no database error', async (flag, value) => {
    const r = await hermes('kanban', 'create', 'team/ops', 'A task', flag, value);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error: option '${flag} <`);
    expect(r.stderr).toContain(`argument '${value}' is invalid`);
    expect(r.stderr).not.toMatch(/NaN|invalid input syntax|out of range/);
  });

  it('takes good values (and then says what else is wrong: no such agent here)', async () => {
    const r = await hermes('kanban', 'create', 'team/ops', 'A task', '--priority', '-3', '--max-runtime', '600', '--max-retries', '0');
    expect(r.stderr.trim()).toBe('No agent team/ops.');
    expect(r.code).toBe(2);
  });
});
