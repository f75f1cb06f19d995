// Worker SIGKILL at random points, with a slow model: two workers, each respawned at once after its
// kill (every sixth kill takes both). Kill points rotate over: a random moment of a ready worker,
// while one of its model calls is open, and just after the model answered it (the turn being
// written, or the next one starting before its model call). Every turn cut is `unknown` with a
// notice, owned by a killed worker, and never sent to the model again; nothing acknowledged is
// lost; sessions stay FIFO and never overlap.
import { finish, startLoad, withCluster, type Scenario, type ScenarioContext } from '../scenario.js';
import { nextCall, type ChaosModel } from '../model.js';
import { readLedger, type LedgerRow } from '../audit.js';
import { statusOf, within, type Cluster, type Slot } from '../cluster.js';
import { between, pause, pick, prng, type Rand } from '../random.js';

type Phase = 'random' | 'model call' | 'answer';
const phases: Phase[] = ['random', 'model call', 'answer'];

interface Kill { phase: Phase; pid: number; gen: number; at: number; instance?: string }

const ready = async (s: Slot) => (await statusOf(`${s.url}/readyz`)) === 200;

/**
 * Waits for the kill point and returns the worker(s) to kill there: a random ready worker after a
 * random pause, or the worker whose model call just opened / was just answered.
 */
async function aim(phase: Phase, cluster: Cluster, model: ChaosModel, rand: Rand): Promise<{ phase: Phase; victim: Slot }> {
  const randomVictim = async () => {
    const up = await within(60_000, async () => {
      const live = (await Promise.all(cluster.workers.map(async (w) => ((await ready(w)) ? w : undefined)))).filter((w) => w !== undefined);
      return live.length ? live : undefined;
    }, 100);
    await pause(between(rand, [0, 1_500]));
    return pick(rand, up ?? cluster.workers);
  };
  if (phase === 'random') return { phase, victim: await randomVictim() };
  const on = phase === 'model call' ? model.onRequest : model.onAnswer;
  const call = await nextCall(on, (c) => cluster.workers.some((w) => w.proc?.gen === c.gen && w.proc.alive), 20_000);
  const victim = call && cluster.workers.find((w) => w.proc?.gen === call.gen);
  if (!call || !victim) return { phase: 'random', victim: await randomVictim() }; // no work came: kill anyway
  await pause(phase === 'model call' ? between(rand, [0, Math.min(call.holdMs, 600)]) : between(rand, [0, 25]));
  return { phase, victim };
}

/** Where each cut turn was when its worker died: no model request yet, one open, or one answered. */
function cutPoints(rows: LedgerRow[], kills: Kill[], model: ChaosModel): Record<string, number> {
  const genOf = new Map(kills.filter((k) => k.instance).map((k) => [k.instance!, k.gen]));
  const out: Record<string, number> = { 'before the model call': 0, 'during the model call': 0, 'after the answer': 0 };
  for (const r of rows.filter((x) => x.state === 'unknown')) {
    const gen = r.owner ? genOf.get(r.owner) : undefined;
    const calls = model.calls.filter((c) => c.token === r.content && c.gen === gen && c.resume === (r.intent === 'resume'));
    if (calls.length === 0) out['before the model call']!++;
    else if (calls.some((c) => c.seen.finished)) out['after the answer']!++;
    else out['during the model call']!++;
  }
  return out;
}

/** performance.now() once no turn of these (killed) instances is still `started`: the kill is recovered from. */
async function recovered(cluster: Cluster, instances: string[]): Promise<number | undefined> {
  return within(120_000, async () => {
    const { rows } = await cluster.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM admissions WHERE state = 'started' AND owner_instance_id = ANY($1::uuid[])`, [instances]);
    return rows[0]!.n === 0 ? performance.now() : undefined;
  }, 100);
}

async function killLoop(ctx: ScenarioContext, cluster: Cluster, model: ChaosModel, rand: Rand): Promise<{ kills: Kill[]; recoveries: number[] }> {
  const kills: Kill[] = [];
  const recoveries: number[] = [];
  for (let k = 1; kills.length < ctx.scale.workerKills; k++) {
    const aimed = await aim(phases[k % phases.length]!, cluster, model, rand);
    const both = k % 6 === 0 && ctx.scale.workerKills - kills.length >= cluster.workers.length;
    const victims = both ? cluster.workers : [aimed.victim];
    const round: Kill[] = [];
    for (const v of victims) {
      const proc = v.proc!;
      const instance = await cluster.instanceOf(proc.pid);
      await cluster.kill(v);
      round.push({ phase: aimed.phase, pid: proc.pid, gen: proc.gen, at: performance.now(), ...(instance ? { instance } : {}) });
    }
    kills.push(...round);
    // The next kill hits a system that has recovered from this one: the victims' turns all settled.
    const done = await recovered(cluster, round.flatMap((r) => (r.instance ? [r.instance] : [])));
    if (done !== undefined) recoveries.push((done - round[0]!.at) / 1_000);
    if (k % 20 === 0) ctx.say(`worker SIGKILL: ${kills.length}/${ctx.scale.workerKills}`);
  }
  return { kills, recoveries };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

export const workerKill: Scenario = {
  id: 'worker-kill',
  name: 'worker SIGKILL',
  async run(ctx) {
    const startedAt = performance.now();
    return withCluster(ctx, this.id, { gateways: 1, workers: 2, holdMs: [200, 1_500] }, async ({ cluster, model }) => {
      const rand = prng(ctx.seed + 1);
      const load = startLoad(ctx, cluster, { paceMs: [50, 400] });
      const { kills, recoveries } = await killLoop(ctx, cluster, model, rand);
      const faultEnd = performance.now();
      const row = await finish({ ctx, cluster, load, model, faultEnd, id: this.id, name: this.name, faults: `${kills.length} SIGKILLs`, startedAt, dump: { kills }, audit: { mayBeUnknown: new Set(kills.flatMap((k) => (k.instance ? [k.instance] : []))) } });
      const byPhase = phases.map((p) => `${kills.filter((k) => k.phase === p).length} at ${p === 'random' ? 'a random moment' : p === 'model call' ? 'an open model call' : 'an answer'}`).join(', ');
      const cut = Object.entries(cutPoints(await readLedger(cluster.pool), kills, model)).map(([k, v]) => `${v} ${k}`).join(', ');
      row.notes.push(`kills: ${byPhase}`, `per kill, until its turns were settled: median ${median(recoveries).toFixed(1)} s, max ${Math.max(0, ...recoveries).toFixed(1)} s`, `turns cut (unknown): ${cut}`, `model calls: ${model.calls.length}, of which cut by a kill: ${model.calls.filter((c) => c.seen.aborted).length}`);
      return row;
    });
  },
};
