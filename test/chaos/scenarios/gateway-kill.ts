// Gateway SIGKILL under load: two gateways, one killed at a time and respawned on its port. Half
// the sessions use the message API, half chat completions that wait for their answer on the
// gateway that gets killed; a client whose connection dropped retries — on the other gateway —
// with the same Idempotency-Key. An input admitted before the kill must not be admitted again
// (the retry is answered as a duplicate, and a chat completion follows the same turn), and
// nothing is lost. Workers are never touched: no turn may end unknown.
import { finish, startLoad, withCluster, type Scenario } from '../scenario.js';
import { nextCall } from '../model.js';
import { between, pause, pick, prng } from '../random.js';

export const gatewayKill: Scenario = {
  id: 'gateway-kill',
  name: 'gateway SIGKILL',
  async run(ctx) {
    const startedAt = performance.now();
    return withCluster(ctx, this.id, { gateways: 2, workers: 2, holdMs: [100, 800] }, async ({ cluster, model }) => {
      const rand = prng(ctx.seed + 2);
      const load = startLoad(ctx, cluster, { gateways: () => cluster.gateways.map((g) => g.url), apiOf: (i) => (i % 2 === 0 ? 'messages' : 'chat') });
      let kills = 0;
      for (let k = 1; k <= ctx.scale.gatewayKills; k++) {
        await cluster.ready(cluster.gateways);
        // Kill while turns are running (chat completions are waiting on the gateways), or at a random moment.
        if (k % 2 === 0) await nextCall(model.onRequest, () => true, 10_000);
        await pause(between(rand, [0, 600]));
        await cluster.kill(pick(rand, cluster.gateways));
        kills++;
      }
      const faultEnd = performance.now();
      const row = await finish({ ctx, cluster, load, model, faultEnd, id: this.id, name: this.name, faults: `${kills} SIGKILLs`, startedAt });
      const retried = load.inputs.filter((i) => i.attempts > 1);
      row.notes.push(
        `inputs retried after a dropped connection: ${retried.length} (${retried.filter((i) => i.api === 'chat').length} chat completions, answered by the turn their first attempt admitted; ${load.inputs.filter((i) => i.acked?.duplicate).length} messages answered as duplicates)`,
        `chat completions answered: ${load.inputs.filter((i) => i.api === 'chat' && i.acked?.status === 200).length}/${load.inputs.filter((i) => i.api === 'chat').length}`,
      );
      return row;
    });
  },
};
