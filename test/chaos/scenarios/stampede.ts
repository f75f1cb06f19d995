// Many processes start at once on a fresh, empty database: most are `hermes migrate` (an init
// container or Job per replica), the rest gateways and workers. Exactly one migrator applies the
// migrations — each once, none failed or rolled back — every other migrator waits for it and
// exits 0 with "up to date", and every gateway and worker becomes ready (a process that exits is
// restarted after a second, as a kubelet would; restarts are counted) and serves a message.
import { finish, withCluster, type Scenario } from '../scenario.js';
import { readdir, readFile } from 'node:fs/promises';
import { migrationsDir } from '../../../prisma/migrate.js';
import type { Exit, Proc } from '../processes.js';
import type { Cluster, Slot } from '../cluster.js';
import { pause } from '../random.js';

/** Keeps the slot's process running: one that exits is started again after `backoffMs` (like a kubelet). */
function supervise(cluster: Cluster, slot: Slot, backoffMs: number, stop: () => boolean): { restarts: number; exits: Exit[]; done: Promise<void> } {
  const state = { restarts: 0, exits: [] as Exit[], done: Promise.resolve() };
  state.done = (async () => {
    for (;;) {
      const exit = await slot.proc!.exited;
      if (stop()) return;
      state.exits.push(exit);
      await pause(backoffMs);
      if (stop()) return;
      cluster.spawn(slot);
      state.restarts++;
    }
  })();
  return state;
}

export const stampede: Scenario = {
  id: 'stampede',
  name: 'processes at once',
  async run(ctx) {
    const startedAt = performance.now();
    const n = ctx.scale.stampede;
    const gateways = Math.max(1, Math.round(n / 6));
    const workers = Math.max(1, Math.round(n / 6));
    const migrators = n - gateways - workers;
    return withCluster(ctx, this.id, { gateways, workers, migrate: false, noStart: true, holdMs: [50, 200] }, async ({ cluster, group, model }) => {
      const expected = (await readdir(migrationsDir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name).sort();
      const env = cluster.baseEnv();
      const migrating: Proc[] = Array.from({ length: migrators }, () => group.spawn('migrate', env));
      for (const s of cluster.slots()) cluster.spawn(s);
      let stopped = false;
      const supervised = cluster.slots().map((s) => supervise(cluster, s, 1_000, () => stopped));
      const exits = await Promise.all(migrating.map((p) => p.exited));
      const migratedAt = performance.now();
      // The agent exists once the schema does (an operator would publish it).
      await cluster.publishAgent();
      const row = await finish({ ctx, cluster, model, faultEnd: startedAt, id: this.id, name: this.name, faults: `${migrators} migrate + ${gateways} gateways + ${workers} workers`, startedAt });
      stopped = true;
      const outputs = await Promise.all(migrating.map((p) => readFile(p.log, 'utf8')));
      const applied = outputs.filter((o) => /Applied \d+ migration/.test(o));
      const upToDate = outputs.filter((o) => /Database is up to date/.test(o));
      const failed = exits.map((e, i) => ({ e, i })).filter(({ e }) => e.code !== 0);
      const { rows } = await cluster.pool.query<{ name: string; finished: boolean; rolledBack: boolean }>(
        `SELECT migration_name AS name, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS "rolledBack" FROM _prisma_migrations ORDER BY migration_name`);
      if (failed.length) row.findings.push({ check: 'migrate', detail: `${failed.length} of ${migrators} migrators failed: ${failed.slice(0, 3).map(({ i, e }) => `${migrating[i]!.name} exit ${e.code ?? e.signal}: ${outputs[i]!.trim().split('\n').slice(-3).join(' / ').slice(0, 300)}`).join(' | ')}` });
      if (applied.length !== 1) row.findings.push({ check: 'one migrator', detail: `${applied.length} migrators applied migrations (expected exactly one)` });
      if (upToDate.length !== migrators - 1) row.findings.push({ check: 'one migrator', detail: `${upToDate.length} migrators found the database up to date (expected ${migrators - 1})` });
      const names = rows.map((r) => r.name);
      if (JSON.stringify(names) !== JSON.stringify(expected) || rows.some((r) => !r.finished || r.rolledBack)) {
        row.findings.push({ check: 'migrations', detail: `_prisma_migrations holds ${JSON.stringify(rows)}; expected each of ${expected.length} once, finished` });
      }
      const restarts = supervised.reduce((t, s) => t + s.restarts, 0);
      row.notes.push(
        `${migrators} migrators: ${applied.length} applied ${expected.length} migrations, ${upToDate.length} found them applied, ${failed.length} failed; all exited after ${((migratedAt - startedAt) / 1_000).toFixed(1)} s`,
        `gateways and workers restarted after exiting: ${restarts}${restarts ? ` (${supervised.flatMap((s) => s.exits).slice(0, 3).map((e) => `exit ${e.code ?? e.signal}`).join(', ')})` : ''}`,
      );
      return row;
    });
  },
};
