// `hermes agents stop NAME` / `hermes agents resume NAME`: the emergency stop of one agent, for its
// operators. Written straight to Postgres (agents.stopped_at) and announced with the config NOTIFY,
// so it works without the operator or kubectl: every gateway refuses new messages of the agent at
// once (a short reply, no model call) and every worker stops the agent's running turns. The
// Agent's own `spec.stopped: true` does the same through the operator; `resume` clears only this one.
import { userInfo } from 'node:os';
import { Command } from 'commander';
import { setAgentStopped, type AgentRecord } from '../core/index.js';
import { withAgent } from './cli-db.js';

const refOptions = (namespace: string) => ({ namespace, hint: 'hermes agents takes NAME or NAMESPACE/NAME' });

const label = (a: AgentRecord) => `${a.compiled.agent.namespace}/${a.compiled.agent.name}`;

export const agentsCommand = new Command('agents').description('Operate agents: emergency stop and resume.');

agentsCommand.command('stop').description('Emergency stop: refuse new messages (a short reply, no model call) and stop the running turns.')
  .argument('<name>', 'NAME or NAMESPACE/NAME')
  .option('-n, --namespace <namespace>', 'namespace of NAME', 'default')
  .option('-r, --reason <text>', 'why (shown in /status and logs)')
  .action((ref: string, opts: { namespace: string; reason?: string }) => withAgent(ref, async (db, agent) => {
    const reason = opts.reason?.trim() || `stopped by ${userInfo().username} with hermes agents stop`;
    const stopped = await setAgentStopped(db, agent.agentId, { reason });
    const running = stopped ? stopped.running : 0;
    console.log(`Stopped ${label(agent)}: new messages are refused${running ? `; ${running} running turn(s) are being stopped` : ''}. Undo with: hermes agents resume ${label(agent)}`);
  }, refOptions(opts.namespace)));

agentsCommand.command('resume').description('Undo `hermes agents stop`: the agent takes messages again.')
  .argument('<name>', 'NAME or NAMESPACE/NAME')
  .option('-n, --namespace <namespace>', 'namespace of NAME', 'default')
  .action((ref: string, opts: { namespace: string }) => withAgent(ref, async (db, agent) => {
    await setAgentStopped(db, agent.agentId, false);
    if (agent.compiled.stopped) {
      console.log(`Cleared the emergency stop of ${label(agent)}, but its Agent still has spec.stopped: true: set it to false (kubectl edit agent ${agent.compiled.agent.name} -n ${agent.compiled.agent.namespace}) to resume it.`);
      return;
    }
    console.log(`Resumed ${label(agent)}: it takes messages again.`);
  }, refOptions(opts.namespace)));
