// `hermes agents stop NAME` / `hermes agents resume NAME`: the emergency stop of one agent, for its
// operators. Written straight to Postgres (agents.stopped_at) and announced with the config NOTIFY,
// so it works without the operator or kubectl: every gateway refuses new messages of the agent at
// once (a short reply, no model call) and every worker stops the agent's running turns. The
// Agent's own `spec.stopped: true` does the same through the operator; `resume` clears only this one.
import { userInfo } from 'node:os';
import { Command } from 'commander';
import { findAgent, loadConfig, openDb, setAgentStopped, type AgentRecord, type Db } from '../core/index.js';

class UsageError extends Error {}

/** `NAME` (in --namespace, default "default") or `NAMESPACE/NAME`. */
function agentRef(ref: string, namespace: string): [string, string] {
  const parts = ref.split('/');
  if (parts.length === 1 && parts[0]) return [namespace, parts[0]];
  if (parts.length === 2 && parts[0] && parts[1]) return [parts[0], parts[1]];
  throw new UsageError(`name the agent as NAME or NAMESPACE/NAME (got "${ref}")`);
}

async function withAgent(ref: string, namespace: string, fn: (db: Db, agent: AgentRecord) => Promise<void>): Promise<void> {
  const db = openDb(loadConfig(process.env, { REDIS_URL: process.env.REDIS_URL ?? 'redis://unused:6379' }).DATABASE_URL, { max: 2, applicationName: 'hermes-cli' });
  try {
    const [ns, name] = agentRef(ref, namespace);
    const agent = await findAgent(db.pool, ns, name);
    if (!agent) throw new UsageError(`no agent ${ns}/${name} in this database (hermes agents takes NAME or NAMESPACE/NAME)`);
    await fn(db, agent);
  } catch (err) {
    console.error(err instanceof UsageError ? err.message : `error: ${(err as Error).message}`);
    process.exitCode = 2;
  } finally {
    await db.close();
  }
}

const label = (a: AgentRecord) => `${a.compiled.agent.namespace}/${a.compiled.agent.name}`;

export const agentsCommand = new Command('agents').description('Operate agents: emergency stop and resume.');

agentsCommand.command('stop').description('Emergency stop: refuse new messages (a short reply, no model call) and stop the running turns.')
  .argument('<name>', 'NAME or NAMESPACE/NAME')
  .option('-n, --namespace <namespace>', 'namespace of NAME', 'default')
  .option('-r, --reason <text>', 'why (shown in /status and logs)')
  .action((ref: string, opts: { namespace: string; reason?: string }) => withAgent(ref, opts.namespace, async (db, agent) => {
    const reason = opts.reason?.trim() || `stopped by ${userInfo().username} with hermes agents stop`;
    const stopped = await setAgentStopped(db, agent.agentId, { reason });
    const running = stopped ? stopped.running : 0;
    console.log(`Stopped ${label(agent)}: new messages are refused${running ? `; ${running} running turn(s) are being stopped` : ''}. Undo with: hermes agents resume ${label(agent)}`);
  }));

agentsCommand.command('resume').description('Undo `hermes agents stop`: the agent takes messages again.')
  .argument('<name>', 'NAME or NAMESPACE/NAME')
  .option('-n, --namespace <namespace>', 'namespace of NAME', 'default')
  .action((ref: string, opts: { namespace: string }) => withAgent(ref, opts.namespace, async (db, agent) => {
    await setAgentStopped(db, agent.agentId, false);
    if (agent.compiled.stopped) {
      console.log(`Cleared the emergency stop of ${label(agent)}, but its Agent still has spec.stopped: true: set it to false (kubectl edit agent ${agent.compiled.agent.name} -n ${agent.compiled.agent.namespace}) to resume it.`);
      return;
    }
    console.log(`Resumed ${label(agent)}: it takes messages again.`);
  }));
