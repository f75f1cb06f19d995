// `hermes pairing list|approve|deny|revoke` (issue 11 point 2), for an agent's owners: the DM
// pairing requests of unknown users, decided by the code the user was sent (they pass it on to
// the owner). Talks to Postgres only (DATABASE_URL), like `hermes review`; the approved user's
// "you're in" notice is recorded in the delivery ledger and sent by the workers' sweeper.
import { userInfo } from 'node:os';
import { Command } from 'commander';
import { listPairings, revokePairing, type AgentRecord, type Db } from '../core/index.js';
import { decideAndNotify, decisionProblem } from '../gateway/pairing.js';
import { UsageError, withAgent } from './cli-db.js';

const when = (d: Date) => d.toISOString().replace('.000Z', 'Z');

async function list(db: Db, agent: AgentRecord): Promise<void> {
  const { pending, paired } = await listPairings(db.pool, agent.agentId, new Date());
  if (!pending.length) console.log('No pending pairing requests.');
  for (const p of pending) console.log(`pending  ${p.platform}:${p.userId}${p.displayName ? ` (${p.displayName})` : ''}  asked ${when(p.createdAt)}  expires ${when(p.expiresAt)}`);
  for (const p of paired) console.log(`paired   ${p.platform}:${p.userId}${p.displayName ? ` (${p.displayName})` : ''}  by ${p.approvedBy} at ${when(p.approvedAt)}`);
}

function decide(decision: 'approve' | 'deny') {
  return (ref: string, code: string, opts: { platform?: string }) => withAgent(ref, async (db, agent) => {
    const decided = await decideAndNotify({ db }, agent, { code, decision, by: `cli:${userInfo().username}`, now: new Date(), ...(opts.platform ? { platform: opts.platform } : {}) });
    if (!decided.ok) throw new UsageError(decisionProblem(decided));
    const who = `${decided.request.platform}:${decided.request.userId}`;
    console.log(decision === 'approve' ? `Approved ${who}: they may talk to ${ref} now (they are told so).` : `Denied the pairing request of ${who}.`);
  });
}

const platformOption = ['-p, --platform <platform>', 'the platform the code is for (slack, telegram, …); default: any of the agent\'s'] as const;

export const pairingCommand = new Command('pairing')
  .description('DM pairing: unknown users who DM the agent get a code; list their requests, approve or deny them by code, revoke approved users.')
  .addHelpText('after', '\nLimits: codes expire after 1 h; 1 request per user per 10 min; 3 pending per platform; 5 wrong codes lock the platform\'s pairing for 1 h.');

pairingCommand.command('list').description('Pending (unexpired) pairing requests and the users approved so far.')
  .argument('<agent>', 'NAMESPACE/NAME')
  .action((ref: string) => withAgent(ref, list));

pairingCommand.command('approve').description('Approve the request with this code: the user is authorised on that platform from now on.')
  .argument('<agent>', 'NAMESPACE/NAME').argument('<code>', 'the 8-character code the user was sent').option(...platformOption)
  .action(decide('approve'));

pairingCommand.command('deny').description('Deny the request with this code.')
  .argument('<agent>', 'NAMESPACE/NAME').argument('<code>', 'the 8-character code the user was sent').option(...platformOption)
  .action(decide('deny'));

pairingCommand.command('revoke').description('Remove an approved user (they go back to pairing).')
  .argument('<agent>', 'NAMESPACE/NAME').argument('<user>', 'PLATFORM:ID, e.g. slack:U012ALICE')
  .action((ref: string, user: string) => withAgent(ref, async (db, agent) => {
    const sep = user.indexOf(':');
    if (sep < 1) throw new UsageError(`name the user as PLATFORM:ID (got "${user}")`);
    const removed = await revokePairing(db.pool, agent.agentId, user.slice(0, sep), user.slice(sep + 1));
    console.log(removed ? `Revoked ${user}.` : `${user} was not paired with ${ref}.`);
  }));
