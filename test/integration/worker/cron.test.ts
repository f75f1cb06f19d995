// The CronJob scheduler end to end on real Postgres and Redis, with a fake model and a fake Slack,
// the clock injected (each tick is given its `now`; nothing waits for real time to pass):
// a due slot fires once, as a fresh session on platform `cron` whose prompt has no project context
// files and whose tools exclude messaging, and its result reaches the Slack channel through the
// delivery ledger; concurrency policies Forbid, Allow and Replace; catch-up rules; suspend and
// resume; history limits; a run whose worker dies settles `interrupted` and is never re-run; a run
// cut by a worker shutdown goes on in its resume (Forbid waits for it, Replace stops it, its history is the resume's);
// a scheduler dying mid-tick (and two ticking at once) fire no slot twice and lose none.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  acquireLease, cronHistory, cronStatus, cutTurn, enqueueTurn, getAdmission, getObligationForAdmission, interruptedNotice, markStopped, recordModelCall, registerInstance, releaseLease, requestRunNow,
  startNextTurn, type CompiledAgent, type Lease,
} from '../../../services/core/index.js';
import type { SecretData } from '../../../services/agent/index.js';
import { cronTick, type CronDeps, type TickOptions } from '../../../services/worker/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { cronJobSchema } from '../../../operator/api/cronjob.js';
import { upsertSchedule } from '../../../operator/cron/store.js';
import { loadManifests, storeManifestCronJobs } from '../../../operator/index.js';
import { startFakeSlack, type FakeSlack } from '../../support/fake-slack.js';
import { lastUser, startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, deliveredObligation, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';

const BOT_TOKEN = 'xoxb-cron-bot';
const slackSecret: SecretData = { namespace: 'default', name: 'slack', data: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: 'unused-here' } };
const slackPlatform: NonNullable<CompiledAgent['platforms']>[number] = { type: 'slack', credentialsSecret: 'slack', allowlist: [], allowAll: false, dmPairing: false, groupPolicy: 'mention' };

let database: TestDatabase;
let slack: FakeSlack;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let deps: CronDeps;
/** Model calls whose conversation has a user message containing "hold" wait for this (a resume's too: its last user message is the resume note). */
let release: () => void = () => undefined;
let hold: Promise<void> = Promise.resolve();

beforeAll(async () => {
  database = await createTestDatabase();
  slack = await startFakeSlack(BOT_TOKEN);
  model = await startFakeOpenAI((b: ChatRequestBody) => {
    const text = lastUser(b);
    const held = b.messages.some((m) => m.role === 'user' && JSON.stringify(m.content).includes('hold'));
    if (text.includes('key-revoked')) return { status: 401, errorMessage: 'key revoked' };
    return { text: `done: ${text}`, usage: { prompt_tokens: 11, completion_tokens: 7 }, ...(held ? { hold } : {}) };
  });
  rt = await openTestRuntime(testConfig(database.url, { HERMES_SLACK_API_URL: slack.apiUrl }), 'cron');
  await createTestAgent(rt, model.baseURL, {
    platforms: [slackPlatform], toolsets: ['core', 'messaging'], messaging: { homeChannels: [], allowedTargets: ['slack:*'] },
    contextFiles: [{ name: 'AGENTS.md', content: 'PROJECT-CONTEXT-MARKER' }],
  });
  // The test drives the scheduler's ticks itself, with its own clock.
  // The agent has send_message (toolset messaging, Slack allowed): chat turns would be offered it, cron turns never.
  worker = await startTestWorker(rt, { secrets: [slackSecret], cron: false });
  deps = { db: rt.db, queues: rt.queues, redis: rt.redis, log: rt.log, prefix: rt.config.HERMES_QUEUE_PREFIX };
});

afterAll(async () => {
  release();
  await worker?.close();
  await rt?.close();
  await slack?.close();
  await model?.close();
  await database?.drop();
});

// Each test's CronJobs alone are due: the earlier ones stop (their history stays).
beforeEach(async () => { await rt.db.pool.query(`UPDATE cron_schedules SET suspend = true`); });

const T0 = new Date('2031-01-06T09:00:00Z');
const plus = (minutes: number, seconds = 0) => new Date(T0.getTime() + minutes * 60_000 + seconds * 1_000);
const tick = (now: Date, extra: Omit<TickOptions, 'now'> = {}) => cronTick(deps, { now, ...extra });

/** Stores a CronJob as the operator does, its first slot at `first`. */
async function cronJob(name: string, spec: Record<string, unknown>, first = T0): Promise<void> {
  const job = cronJobSchema.parse({
    apiVersion: 'hermes.dev/v1alpha1', kind: 'CronJob', metadata: { name, namespace: 'default' },
    spec: { agentRef: { name: 'demo' }, schedule: '* * * * *', prompt: `${name} prompt`, ...spec },
  });
  await upsertSchedule(rt.db, job, first);
}

const history = async (name: string) => (await cronHistory(rt.db.pool, 'default', name, 100))!;
const runsOf = async (name: string) => (await history(name)).filter((r) => r.state !== 'skipped');
const skipsOf = async (name: string) => (await history(name)).filter((r) => r.state === 'skipped').map((r) => `${r.slot.toISOString().slice(11, 16)} ${r.reason!.split(':')[0]!}`);

async function ended(admissionId: string) {
  return eventually(async () => {
    const a = await getAdmission(rt.db.pool, admissionId);
    return a?.state === 'terminal' ? a : undefined;
  }, `admission ${admissionId} terminal`);
}

async function started(admissionId: string) {
  await eventually(async () => (await getAdmission(rt.db.pool, admissionId))?.state === 'started' || undefined, `admission ${admissionId} started`);
}

function holdModel(): () => void {
  let open: () => void = () => undefined;
  hold = new Promise<void>((r) => { open = r; });
  release = open;
  return open;
}

describe('cron runs', () => {
  it('fires a due slot once, as a fresh cron session without context files or messaging tools, and delivers to Slack', async () => {
    await cronJob('report', { deliver: 'slack:C0REPORT' });
    expect((await tick(plus(0, 20))).fired).toBe(1);
    expect((await tick(plus(0, 40))).fired).toBe(0); // the same slot never again
    const [run] = await runsOf('report');
    const a = await ended(run!.admissionId!);
    expect(a).toMatchObject({ platform: 'cron', outcome: 'completed', content: 'report prompt' });
    await eventually(() => slack.posts().find((p) => p.args.channel === 'C0REPORT' && p.args.text === 'done: report prompt'), 'the result posted to #C0REPORT');
    const req = model.requests.find((r) => lastUser(r.body) === 'report prompt')!;
    expect(JSON.stringify(req.body.messages)).not.toContain('PROJECT-CONTEXT-MARKER');
    expect(JSON.stringify(req.body.messages)).toContain('Platform: cron');
    expect((req.body.tools ?? []).map((t) => t.function.name)).not.toContain('send_message');
    expect((req.body.tools ?? []).length).toBeGreaterThan(0); // the other tools are offered

    // The next minute's run is a new session; history has slot, times, outcome, reply, tokens.
    expect((await tick(plus(1, 5))).fired).toBe(1);
    const second = (await runsOf('report')).find((r) => r.slot.getTime() === plus(1).getTime())!;
    expect((await ended(second.admissionId!)).sessionId).not.toBe(a.sessionId);
    await deliveredObligation(rt.db.pool, second.admissionId!, 'second delivered');
    await tick(plus(1, 10));
    const h = await history('report');
    expect(h[0]).toMatchObject({ trigger: 'schedule', state: 'finished', outcome: 'completed', deliveryState: 'delivered', inputTokens: 11, outputTokens: 7 });
    expect(h[0]!.startedAt).toBeInstanceOf(Date);
    expect(h[0]!.finishedAt).toBeInstanceOf(Date);
    expect(h[0]!.obligationId).toBeTruthy();
  });

  it('Forbid skips a slot while a run goes; Allow runs beside it; Replace stops it and runs the new slot', async () => {
    const open = holdModel();
    await cronJob('forbid', { prompt: 'hold forbid', concurrencyPolicy: 'Forbid' }, plus(10));
    await cronJob('allow', { prompt: 'hold allow', concurrencyPolicy: 'Allow' }, plus(10));
    await cronJob('replace', { prompt: 'hold replace', concurrencyPolicy: 'Replace' }, plus(10));
    expect((await tick(plus(10, 1))).fired).toBe(3);
    for (const name of ['forbid', 'allow', 'replace']) await started((await runsOf(name))[0]!.admissionId!);
    await tick(plus(11, 1));
    expect(await skipsOf('forbid')).toEqual(['09:11 ConcurrencyForbid']);
    expect((await runsOf('allow')).length).toBe(2);
    const replaced = (await runsOf('replace')).find((r) => r.slot.getTime() === plus(10).getTime())!;
    expect(replaced.reason).toMatch(/^Replaced/);
    expect((await ended(replaced.admissionId!)).outcome).toBe('interrupted');
    const newer = (await runsOf('replace')).find((r) => r.slot.getTime() === plus(11).getTime())!;
    open();
    expect((await ended(newer.admissionId!)).outcome).toBe('completed');
    // The /stop that replaced the old run is stored only: nothing is posted for it.
    expect(slack.posts().some((p) => /Stopped/.test(p.args.text ?? ''))).toBe(false);
  });

  it('Replace with a chat delivery: the stopped run\'s interrupted reply is stored, not posted; only the newer run\'s result reaches the channel', async () => {
    const open = holdModel();
    await cronJob('replace-slack', { prompt: 'hold replace-slack', concurrencyPolicy: 'Replace', deliver: 'slack:C0REPLACE' }, plus(15));
    expect((await tick(plus(15, 1))).fired).toBe(1);
    const [old] = await runsOf('replace-slack');
    await started(old!.admissionId!);
    expect((await tick(plus(16, 1))).fired).toBe(1);
    expect((await ended(old!.admissionId!)).outcome).toBe('interrupted');
    const stored = await deliveredObligation(rt.db.pool, old!.admissionId!, 'the replaced run\'s reply settled');
    // Nobody sent this run a message, and nobody can /retry it: the notice says what happened, no more.
    expect(stored.content).toBe('The run was interrupted (stopped by a newer run of its CronJob).');
    const newer = (await runsOf('replace-slack')).find((r) => r.slot.getTime() === plus(16).getTime())!;
    open();
    await deliveredObligation(rt.db.pool, newer.admissionId!, 'the newer run delivered');
    expect(slack.posts().filter((p) => p.args.channel === 'C0REPLACE').map((p) => p.args.text)).toEqual(['done: hold replace-slack']);
  });

  it('a long result to Slack is split by the ledger: a retry after a failed later piece posts only the rest', async () => {
    const prompt = `long ${'a'.repeat(3_990)} ${'b'.repeat(3_990)}`;
    await cronJob('long-slack', { prompt, deliver: 'slack:C0LONG' }, plus(17));
    slack.failNext(1, 500, 1); // the first piece goes out, the second meets a 500
    expect((await tick(plus(17, 1))).fired).toBe(1);
    const [run] = await runsOf('long-slack');
    await ended(run!.admissionId!);
    const failed = await eventually(async () => {
      const ob = await getObligationForAdmission(rt.db.pool, run!.admissionId!);
      return ob?.state === 'failed' ? ob : undefined;
    }, 'the first attempt failed');
    expect(failed.piecesSent).toBe(1);
    await rt.db.pool.query(`UPDATE delivery_obligations SET not_before = now() WHERE id = $1`, [failed.id]);
    await deliveredObligation(rt.db.pool, run!.admissionId!, 'the rest delivered');
    // Two pieces, each posted once: the first was not posted again.
    const posts = slack.posts().filter((p) => p.args.channel === 'C0LONG').map((p) => p.args.text ?? '');
    expect(posts.length).toBe(2);
    expect(posts[0]).toMatch(/^done: long a/);
    expect(posts[1]).toMatch(/b{3990}$/);
  });

  it('catch-up rules: missed slots are skipped with a reason; a late newest slot runs only with catchUpMissed, within its deadline', async () => {
    await cronJob('nocatch', { failedRunsHistoryLimit: 10 }, plus(20));
    await cronJob('catch', { catchUpMissed: true, failedRunsHistoryLimit: 10 }, plus(20));
    await tick(plus(23, 30)); // the scheduler was down for 09:20–09:22; 09:23 is on time
    expect(await skipsOf('nocatch')).toEqual(['09:22 Missed', '09:21 Missed', '09:20 Missed']);
    expect(await skipsOf('catch')).toEqual(['09:22 Superseded', '09:21 Superseded', '09:20 Superseded']);
    for (const n of ['nocatch', 'catch']) expect((await runsOf(n)).map((r) => r.slot.toISOString().slice(11, 16))).toEqual(['09:23']);

    // Hourly jobs whose 10:00 slot is 30 minutes late when the scheduler comes back.
    const hourly = { schedule: '0 * * * *', failedRunsHistoryLimit: 10 };
    await cronJob('late-nocatch', hourly, plus(60));
    await cronJob('late-catch', { ...hourly, catchUpMissed: true }, plus(60));
    await cronJob('late-deadline', { ...hourly, catchUpMissed: true, startingDeadlineSeconds: 600 }, plus(60));
    await tick(plus(90));
    expect(await skipsOf('late-nocatch')).toEqual(['10:00 Missed']);
    expect((await runsOf('late-catch')).map((r) => r.slot.toISOString().slice(11, 16))).toEqual(['10:00']);
    expect(await skipsOf('late-deadline')).toEqual(['10:00 DeadlineExceeded']);
    expect((await history('late-deadline'))[0]!.reason).toMatch(/1800 s late, past the startingDeadlineSeconds of 600 s/);
  });

  it('suspend stops new runs; resuming starts at the next slot, not the ones missed while suspended', async () => {
    await cronJob('pausable', { failedRunsHistoryLimit: 10 }, plus(30));
    await cronJob('pausable', { failedRunsHistoryLimit: 10, suspend: true }, plus(30));
    expect((await tick(plus(32, 1))).fired).toBe(0);
    expect(await history('pausable')).toEqual([]);
    await cronJob('pausable', { failedRunsHistoryLimit: 10, suspend: false }, plus(35)); // the operator restarts the schedule on a changed spec
    await tick(plus(34, 1));
    expect(await history('pausable')).toEqual([]);
    expect((await tick(plus(35, 1))).fired).toBe(1);
    expect(await skipsOf('pausable')).toEqual([]);
  });

  it('keeps successfulRunsHistoryLimit completed and failedRunsHistoryLimit other runs', async () => {
    await cronJob('bounded', { successfulRunsHistoryLimit: 2, failedRunsHistoryLimit: 1 }, plus(40));
    for (let m = 40; m < 44; m++) {
      await tick(plus(m, 1));
      const latest = (await runsOf('bounded'))[0]!;
      await ended(latest.admissionId!);
    }
    await tick(plus(47, 30)); // 44–46 missed (skipped), 47 fires
    await ended((await runsOf('bounded'))[0]!.admissionId!);
    await tick(plus(47, 40));
    const h = await history('bounded');
    expect(h.filter((r) => r.outcome === 'completed').map((r) => r.slot.toISOString().slice(11, 16))).toEqual(['09:47', '09:43']);
    expect(h.filter((r) => r.state === 'skipped').length).toBe(1);
  });

  it('lastSuccessfulTime outlives the history: successfulRunsHistoryLimit 0 keeps no run, but the status still says when one last succeeded', async () => {
    await cronJob('no-history', { successfulRunsHistoryLimit: 0 }, plus(48));
    await tick(plus(48, 1));
    const run = (await runsOf('no-history'))[0]!;
    const done = await ended(run.admissionId!);
    await tick(plus(48, 30)); // copies the ended turn into its run, then prunes it
    expect(await runsOf('no-history')).toEqual([]);
    const st = (await cronStatus(rt.db.pool, 'default', 'no-history'))!;
    expect([st.lastStatus, st.lastSuccessfulTime]).toEqual(['completed', done.finishedAt]);
  });

  it('run now fires a manual run at the next tick, once per request', async () => {
    await cronJob('manual', { suspend: true });
    expect(await requestRunNow(rt.db, 'default', 'manual')).toBe('requested');
    expect(await requestRunNow(rt.db, 'default', 'nope')).toBe('no-cronjob');
    expect((await tick(plus(50))).fired).toBe(1);
    expect((await tick(plus(50, 30))).fired).toBe(0);
    const [run] = await runsOf('manual');
    expect(run).toMatchObject({ trigger: 'manual' });
    expect((await ended(run!.admissionId!)).outcome).toBe('completed');
    // The annotation's value asks once: the same value again does nothing.
    expect(await requestRunNow(rt.db, 'default', 'manual', 'v1')).toBe('requested');
    await tick(plus(51));
    // Said so: the operator logged 'Requested a CronJob run now' at every reconcile (each minute) of the same value.
    expect(await requestRunNow(rt.db, 'default', 'manual', 'v1')).toBe('already-requested');
    expect((await tick(plus(52))).fired).toBe(0);
  });
});

describe('cron failures', () => {
  it('a run whose worker died is settled interrupted, told to its target, and never run again', async () => {
    await cronJob('orphan', { deliver: 'slack:C0ORPHAN' }, plus(60));
    const ghost = await registerInstance(rt.db.pool, 'worker');
    let admissionId = '';
    // The ghost worker takes the turn before anyone else can, then dies; this tick's enqueue is lost with it.
    await expect(tick(plus(60, 1), {
      afterCommit: async () => {
        const [run] = await runsOf('orphan');
        admissionId = run!.admissionId!;
        const lease = (await acquireLease(rt.db.pool, (await getAdmission(rt.db.pool, admissionId))!.sessionId, ghost.id, 300, { instanceTtlSeconds: 3, steady: true }))!;
        expect((await startNextTurn(rt.db, lease))?.id).toBe(admissionId);
        await markStopped(rt.db.pool, ghost.id);
        throw new Error('scheduler died too');
      },
    })).rejects.toThrow('scheduler died too');
    const a = await ended(admissionId);
    expect(a).toMatchObject({ outcome: 'interrupted', startedAt: expect.any(Date) });
    await eventually(() => slack.posts().find((p) => p.args.channel === 'C0ORPHAN' && p.args.text === interruptedNotice), 'the interrupted notice posted');
    await tick(plus(60, 30));
    expect((await history('orphan'))[0]).toMatchObject({ outcome: 'interrupted' });
    const { rows } = await rt.db.pool.query(`SELECT count(*)::int AS n FROM admissions WHERE session_id = $1`, [a.sessionId]);
    expect(rows[0].n).toBe(1);
  });

  it('a run whose model call failed tells its channel what failed and who can mend it, not to try again or rephrase', async () => {
    await cronJob('revoked', { prompt: 'key-revoked report', deliver: 'slack:C0REVOKED' }, plus(80));
    await tick(plus(80, 1));
    const [run] = await runsOf('revoked');
    expect(await ended(run!.admissionId!)).toMatchObject({ outcome: 'failed' });
    const post = await eventually(() => slack.posts().find((p) => p.args.channel === 'C0REVOKED'), 'the failure posted');
    expect(post.args.text).toBe(`This run failed: the model provider refused our credentials for gpt-test. An operator needs to check the API key.`);
  });

  it('a run cut by a worker shutdown goes on in its resume: Forbid skips the next slot, Replace stops the resume, the run ends as the resume did', async () => {
    const open = holdModel();
    await cronJob('cut-forbid', { prompt: 'hold cut-forbid', concurrencyPolicy: 'Forbid', deliver: 'slack:C0CUTFORBID' }, plus(100));
    await cronJob('cut-replace', { prompt: 'hold cut-replace', concurrencyPolicy: 'Replace' }, plus(100));
    // A worker takes both turns before the test worker can (as the orphan test's ghost), then shuts
    // down gracefully past its drain deadline: each turn is cut and resumed as settleTurn does it —
    // cutTurn (terminal/interrupted, a queued `resume` admission), the lease let go, the resume enqueued.
    const stopping = await registerInstance(rt.db.pool, 'worker');
    const taken: { name: string; admissionId: string; lease: Lease }[] = [];
    await tick(plus(100, 1), {
      afterCommit: async (scheduleId) => {
        const { rows: [r] } = await rt.db.pool.query<{ name: string; admissionId: string; sessionId: string }>(
          `SELECT s.name, r.admission_id AS "admissionId", r.session_id AS "sessionId" FROM cron_runs r JOIN cron_schedules s ON s.id = r.schedule_id
           WHERE r.schedule_id = $1 AND r.state = 'dispatched'`, [scheduleId]);
        const lease = (await acquireLease(rt.db.pool, r!.sessionId, stopping.id, 300, { instanceTtlSeconds: 3, steady: true }))!;
        expect((await startNextTurn(rt.db, lease))?.id).toBe(r!.admissionId);
        taken.push({ name: r!.name, admissionId: r!.admissionId, lease });
      },
    });
    expect(taken.map((t) => t.name).sort()).toEqual(['cut-forbid', 'cut-replace']);
    const resumes = new Map<string, { cut: string; resume: string }>();
    for (const t of taken) {
      // The cut turn's model calls were made: settleTurn records them before it cuts.
      const adm = (await getAdmission(rt.db.pool, t.admissionId))!;
      await recordModelCall(rt.db.pool, {
        agentId: adm.agentId, profileKey: 'default', sessionId: adm.sessionId, userId: adm.userId, admissionId: adm.id, provider: 'openai', model: 'fake',
        inputTokens: 5, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costUsd: null, costStatus: 'unknown', task: 'turn',
      });
      const cut = await cutTurn(rt.db, t.lease, t.admissionId, { reply: 'half an answer' });
      if (!cut.resumed) throw new Error('the cut did not resume');
      await releaseLease(rt.db.pool, t.lease);
      await enqueueTurn(rt.queues, { admissionId: cut.resumeAdmissionId, sessionId: t.lease.sessionId });
      resumes.set(t.name, { cut: t.admissionId, resume: cut.resumeAdmissionId });
    }
    await markStopped(rt.db.pool, stopping.id);
    const forbid = resumes.get('cut-forbid')!;
    const replace = resumes.get('cut-replace')!;
    for (const r of resumes.values()) await started(r.resume); // held by the model

    // The runs go on in their resumes: the status names the resume, history shows it started.
    expect((await cronStatus(rt.db.pool, 'default', 'cut-forbid'))!.active).toEqual([{ slot: plus(100), admissionId: forbid.resume }]);
    expect((await runsOf('cut-forbid'))[0]).toMatchObject({ state: 'dispatched', outcome: 'started', admissionId: forbid.cut });
    await tick(plus(101, 1));
    expect(await skipsOf('cut-forbid')).toEqual(['10:41 ConcurrencyForbid']);
    expect((await runsOf('cut-forbid')).length).toBe(1);
    // Replace acts on the turn that runs, the resume: it is stopped, and the newer slot fires.
    const [newer, replaced] = await runsOf('cut-replace');
    expect(newer!.slot).toEqual(plus(101));
    expect(replaced!.reason).toMatch(/^Replaced: a newer run of the CronJob stopped it/);
    expect((await ended(replace.resume)).outcome).toBe('interrupted');

    open();
    const resumed = await ended(forbid.resume);
    expect(resumed.outcome).toBe('completed');
    const reply = await deliveredObligation(rt.db.pool, forbid.resume, 'the resume\'s reply delivered');
    expect(slack.posts().some((p) => p.args.channel === 'C0CUTFORBID')).toBe(true);
    await tick(plus(101, 30));
    const run = (await runsOf('cut-forbid')).find((r) => r.slot.getTime() === plus(100).getTime());
    const cutAdm = (await getAdmission(rt.db.pool, forbid.cut))!;
    expect(cutAdm.outcome).toBe('interrupted');
    expect(run).toMatchObject({
      state: 'finished', outcome: 'completed', admissionId: forbid.cut, obligationId: reply.id, deliveryState: 'delivered',
      startedAt: cutAdm.startedAt, finishedAt: resumed.finishedAt, inputTokens: 5 + 11, outputTokens: 3 + 7, // every call the run made
    });
    const { rows: [s] } = await rt.db.pool.query(`SELECT last_status FROM cron_schedules WHERE name = 'cut-forbid'`);
    expect(s.last_status).toBe('completed');
    expect((await runsOf('cut-replace')).find((r) => r.slot.getTime() === plus(100).getTime())).toMatchObject({ state: 'finished', outcome: 'interrupted' });
  });

  it('a CronJob that cannot be written does not hold back the others of its chunk', async () => {
    for (const n of ['good-1', 'broken', 'good-2']) await cronJob(n, {}, plus(80));
    await rt.db.pool.query(`UPDATE cron_schedules SET schedule = 'not a schedule' WHERE name = 'broken'`); // past the operator's checks
    const r = await tick(plus(80, 1));
    expect([r.fired, r.errors]).toEqual([2, 1]);
    for (const n of ['good-1', 'good-2']) expect((await runsOf(n)).length).toBe(1);
    expect(await history('broken')).toEqual([]);
  });

  it('a CronJob stored with a deliver target that no longer parses skips its slot as InvalidDeliver and moves on, without failing the tick', async () => {
    await cronJob('old-target', { deliver: 'discord:#general' }, plus(85)); // stored before deliver was checked this strictly
    const r = await tick(plus(85, 1));
    expect([r.fired, r.skipped, r.errors]).toEqual([0, 1, 0]);
    expect(await skipsOf('old-target')).toEqual(['10:25 InvalidDeliver']);
    expect((await history('old-target'))[0]!.reason).toMatch(/discord channel "#general" must be a channel id/);
    const [row] = (await rt.db.pool.query<{ next: Date }>(`SELECT next_run_at AS next FROM cron_schedules WHERE name = 'old-target'`)).rows;
    expect(row!.next).toEqual(plus(86));
  });

  it('a scheduler dying mid-tick, and two ticking at once, fire every slot exactly once', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `fleet-${i}`);
    for (const n of names) await cronJob(n, { prompt: `${n} run` }, plus(70));
    let committed = 0;
    // Chunks of 4: the first is committed and enqueued; the second committed, and the scheduler dies before enqueueing it.
    await expect(tick(plus(70, 2), { parallel: 1, chunk: 4, afterCommit: () => { if (++committed === 5) throw new Error('killed'); } })).rejects.toThrow('killed');
    const { rows: marked } = await rt.db.pool.query(`SELECT count(*)::int AS n FROM cron_schedules WHERE name LIKE 'fleet-%' AND pending_slot IS NOT NULL`);
    expect(marked[0].n).toBe(4);
    // The next leader enqueues the pending slots and fires the rest; two schedulers overlap.
    const [b, c] = await Promise.all([tick(plus(70, 3), { chunk: 2 }), tick(plus(70, 3), { chunk: 2 })]);
    expect(b.fired + c.fired).toBe(names.length - 8);
    // Each turn is enqueued at least once; a pending slot may be enqueued by both overlapping
    // schedulers (one reads its mark before the other clears it): the job id is the admission id,
    // so the second add is a no-op, and the admissions below are what must be unique.
    expect(b.enqueued + c.enqueued).toBeGreaterThanOrEqual(names.length - 4);
    expect(b.enqueued + c.enqueued).toBeLessThanOrEqual(names.length);
    const admissions: string[] = [];
    for (const n of names) {
      const runs = await runsOf(n);
      expect(runs.map((r) => r.slot.toISOString())).toEqual([plus(70).toISOString()]);
      admissions.push(runs[0]!.admissionId!);
    }
    const { rows } = await rt.db.pool.query(`SELECT count(*)::int AS n FROM admissions WHERE platform = 'cron' AND content LIKE 'fleet-%'`);
    expect(rows[0].n).toBe(names.length);
    for (const id of admissions) expect((await ended(id)).outcome).toBe('completed');
    const { rows: pending } = await rt.db.pool.query(`SELECT count(*)::int AS n FROM cron_schedules WHERE name LIKE 'fleet-%' AND pending_slot IS NOT NULL`);
    expect(pending[0].n).toBe(0);
  });
});

describe('hermes dev file mode', () => {
  it('loads Skill and CronJob manifests and stores the CronJobs for the scheduler, refusing a bad one by name', async () => {
    const set = await loadManifests(new URL('../../../examples/cron-digest/', import.meta.url).pathname);
    expect(set.cronJobs.map((c) => c.metadata.name)).toEqual(['morning-digest']);
    expect(set.skipped).toEqual([]);
    expect(await storeManifestCronJobs(rt.db, set, T0)).toEqual(['default/morning-digest']);
    const { rows } = await rt.db.pool.query(`SELECT next_run_at FROM cron_schedules WHERE namespace = 'default' AND name = 'morning-digest'`);
    expect(rows[0].next_run_at).toEqual(new Date('2031-01-07T08:00:00Z')); // 09:00 Paris, the next weekday after T0's 09:00 UTC
    const bad = { ...set, cronJobs: [{ ...set.cronJobs[0]!, spec: { ...set.cronJobs[0]!.spec, deliver: 'slack' } }] };
    await expect(storeManifestCronJobs(rt.db, bad, T0)).rejects.toThrow(/CronJob default\/morning-digest: deliver: "slack" names no slack channel/);
  });
});
