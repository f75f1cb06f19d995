// The emergency stop as a running turn sees it: `hermes agents stop` (or spec.stopped) is
// announced with the config NOTIFY; every turn of that agent running here stops at once, like a
// `/stop`. The listener's resync (a reconnect) re-checks too, so a NOTIFY missed meanwhile still stops it.
import { agentStopped, emergencyStopReason, type AgentCache } from '../core/index.js';
import type { TurnControl } from '../agent/index.js';

/** Stops `control` as soon as agent `agentId` is stopped; returns the unsubscribe function. */
export function stopOnEmergency(agents: AgentCache, agentId: string, control: TurnControl): () => void {
  const check = () => void agents.getById(agentId).then((r) => { if (r && agentStopped(r)) control.stop(emergencyStopReason); }, () => undefined);
  const off = agents.onChange((id) => { if (id === undefined || id === agentId) check(); });
  check(); // stopped between the turn's start and this subscription
  return off;
}
