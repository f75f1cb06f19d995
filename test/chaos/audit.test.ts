// The chaos audit must see what it claims to count: a suite whose audit misses a lost reply, a
// turn run twice or two overlapping turns would pass whatever the system did. Each case breaks
// one rule on an otherwise clean ledger and expects exactly that finding.
import { describe, expect, it } from 'vitest';
import { unknownNotice } from '../../services/core/index.js';
import pg from 'pg';
import { audit, readLedger, type LedgerRow } from './audit.js';
import { createTestDatabase } from '../support/services.js';
import type { ChaosModel, ModelCall } from './model.js';
import type { SeenRequest } from '../support/fake-openai.js';

let seq = 0;
const at = (s: number) => new Date(Date.UTC(2026, 11, 3, 12, 0, s));

function row(content: string, o: Partial<LedgerRow> = {}): LedgerRow {
  seq++;
  return {
    id: `a${seq}`, seq, sessionId: 's1', intent: 'message', state: 'terminal', outcome: 'completed', content, resumeOf: null,
    owner: 'w1', createdAt: at(seq * 10), startedAt: at(seq * 10 + 1), finishedAt: at(seq * 10 + 5), updatedAt: at(seq * 10 + 5),
    error: null, obligationId: `o${seq}`, reply: `answer to ${content}`, ...o,
  };
}

function call(token: string, session: string, gen: number, from: number, to: number | undefined, resume = false): ModelCall {
  const seen = { url: `/w${gen}/v1/chat/completions`, receivedAt: from, endedAt: to, aborted: false, finished: to !== undefined } as SeenRequest;
  return { token, session, gen, resume, seen, holdMs: 0 };
}

const model = (calls: ModelCall[]) => ({ calls }) as unknown as ChaosModel;
const checks = (rows: LedgerRow[], o: Parameters<typeof audit>[1] = {}) => audit(rows, o).findings.map((f) => f.check);

describe('chaos audit', () => {
  it('passes a clean ledger', () => {
    const rows = [row('chaos.r.s1.1'), row('chaos.r.s1.2')];
    const calls = [call('chaos.r.s1.1', 's1', 1, 0, 10), call('chaos.r.s1.2', 's1', 1, 20, 30)];
    expect(audit(rows, { model: model(calls) })).toMatchObject({ admissions: 2, lost: 0, runTwice: 0, unknown: 0, findings: [] });
  });

  it('counts an admission never settled, and one settled without its reply, as lost', () => {
    const rows = [row('chaos.r.s1.1', { state: 'started', outcome: null, finishedAt: null, obligationId: null, reply: null }), row('chaos.r.s1.2', { obligationId: null, reply: null })];
    expect(audit(rows, {}).lost).toBe(2);
    expect(checks(rows)).toEqual(['lost', 'lost', 'reply']);
  });

  it('counts an input that reached the model twice as run twice, but not its one resume', () => {
    const twice = [call('chaos.r.s1.1', 's1', 1, 0, 10), call('chaos.r.s1.1', 's1', 2, 20, 30)];
    expect(audit([row('chaos.r.s1.1')], { model: model(twice) }).runTwice).toBe(1);
    const resumed = [call('chaos.r.s1.1', 's1', 1, 0, 10), call('chaos.r.s1.1', 's1', 2, 20, 30, true)];
    expect(audit([row('chaos.r.s1.1')], { model: model(resumed) }).runTwice).toBe(0);
  });

  it('finds two model requests of one session open at once, and turns of a session that overlap or jump the queue', () => {
    const calls = [call('chaos.r.s1.1', 's1', 1, 0, 50), call('chaos.r.s1.2', 's1', 2, 20, 60)];
    expect(checks([row('chaos.r.s1.1'), row('chaos.r.s1.2')], { model: model(calls) })).toEqual(['overlap (model)']);
    const first = row('chaos.r.s1.1');
    const second = row('chaos.r.s1.2', { startedAt: at(first.seq * 10 + 3) });
    expect(checks([first, second])).toEqual(['overlap (ledger)']);
    const a = row('chaos.r.s1.1', { startedAt: at(500), finishedAt: at(505) });
    const b = row('chaos.r.s1.2', { startedAt: at(400), finishedAt: at(405) });
    expect(checks([a, b])).toContain('FIFO');
  });

  it('puts a resume in the place of the turn it continues: before the messages admitted while that turn ran', () => {
    const cut = row('chaos.r.s1.1', { outcome: 'interrupted', obligationId: null, reply: null, startedAt: at(600), finishedAt: at(605) });
    const later = row('chaos.r.s1.2', { startedAt: at(620), finishedAt: at(625) });
    const resume = row('chaos.r.s1.1', { intent: 'resume', resumeOf: cut.id, startedAt: at(610), finishedAt: at(615) });
    expect(checks([cut, later, resume])).toEqual([]);
    const jumped = row('chaos.r.s1.1', { intent: 'resume', resumeOf: cut.id, startedAt: at(630), finishedAt: at(635) });
    expect(checks([cut, later, jumped])).toContain('FIFO');
  });

  it('accepts unknown turns only of a stopped process, and only with the notice', () => {
    const cut = row('chaos.r.s1.1', { state: 'unknown', outcome: null, owner: 'dead', reply: unknownNotice });
    expect(checks([cut], { mayBeUnknown: new Set(['dead']) })).toEqual([]);
    expect(checks([cut], { mayBeUnknown: new Set(['other']) })).toEqual(['unknown on a live owner']);
    expect(checks([{ ...cut, reply: 'hello' }], { mayBeUnknown: new Set(['dead']) })).toEqual(['notice']);
  });

  it('finds a completed turn answering another input', () => {
    expect(checks([row('chaos.r.s1.1', { reply: 'answer to chaos.r.s1.9' })])).toEqual(['reply']);
  });

  it('reads seq from Postgres as a number, so a resume is placed right after the turn it continues', async () => {
    // Seen in a clean-clone run (seed 209453281, Postgres restart): cut #13, its resume #16 run next,
    // then #15 and #19 — a correct order, reported as FIFO breaks because seq came back as a string.
    const db = await createTestDatabase();
    const c = new pg.Client({ connectionString: db.url });
    try {
      await c.connect();
      await c.query('SET session_replication_role = replica'); // rows without their agent and session
      const insert = (n: number, id: string, intent: string, outcome: string, started: number, resumeOf: string | null = null) => c.query(
        `INSERT INTO admissions (id, seq, agent_id, session_id, platform, intent, state, outcome, content, started_at, finished_at, resume_of)
         VALUES ($1, $2, gen_random_uuid(), '00000000-0000-0000-0000-0000000000aa', 'api', $3, 'terminal', $4, 'x', $5, $6, $7)`,
        [id, n, intent, outcome, at(started), at(started + 1), resumeOf]);
      const cut = '00000000-0000-0000-0000-000000000013';
      await insert(13, cut, 'queue', 'interrupted', 100);
      await insert(15, '00000000-0000-0000-0000-000000000015', 'queue', 'completed', 104);
      await insert(16, '00000000-0000-0000-0000-000000000016', 'resume', 'completed', 102, cut);
      await insert(19, '00000000-0000-0000-0000-000000000019', 'queue', 'completed', 106);
      const rows = await readLedger(c as unknown as pg.Pool);
      expect(rows.map((r) => r.seq)).toEqual([13, 15, 16, 19]);
      expect(audit(rows, {}).findings.filter((f) => f.check === 'FIFO' || f.check === 'overlap (ledger)')).toEqual([]);
    } finally {
      await c.end();
      await db.drop();
    }
  });
});
