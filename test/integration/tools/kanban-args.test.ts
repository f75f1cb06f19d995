// The kanban_* tools bound their arguments as the admin API does: a title, body, idempotency key
// or handoff past those lengths is an invalid argument the model can fix — not a Postgres error
// from the insert (an idempotency key of 9 000 random characters failed with "index row requires
// 9032 bytes, maximum size is 8191").
import { describe, expect, it } from 'vitest';
import { kanbanCompleteTool, kanbanCreateTool } from '../../../services/agent/index.js';
import { call, toolContext } from './helpers.js';

describe('kanban tool arguments', () => {
  it('refuses lengths past the admin API\'s before anything runs', async () => {
    const create = (extra: Record<string, unknown>) => call(kanbanCreateTool, { title: 't', assignee: 'demo', ...extra }, toolContext());
    for (const [field, value] of [['title', 'x'.repeat(501)], ['body', 'x'.repeat(100_001)], ['idempotency_key', 'k'.repeat(201)], ['assignee', 'a'.repeat(511)]] as const) {
      expect(await create({ [field]: value }), field).toMatchObject({ kind: 'invalid', content: expect.stringContaining(`Invalid arguments for kanban_create: ${field}: Too big`) });
    }
    expect(await call(kanbanCompleteTool, { summary: 's'.repeat(20_001) }, toolContext())).toMatchObject({ kind: 'invalid', content: expect.stringContaining('summary: Too big') });
    // Within the bounds the arguments reach the handler (here: no board for this turn).
    expect(await create({ idempotency_key: 'k'.repeat(200) })).toMatchObject({ content: expect.stringContaining('not available here') });
  });
});
