// send_message for one turn (issue 14): the target is resolved against the Agent's spec.messaging
// (home channels, allowed targets) and must be one of the same Agent's platforms; the message is a
// delivery obligation of this turn keyed to the tool call ('send:<tool call id>'), so a repeat of
// the call — a worker that crashed after recording it — finds the same row and nothing is sent
// twice. The delivery worker sends it with that platform's credentials (platform-delivery.ts).
import { enqueueDelivery, recordCallObligation, type Admission, type CompiledAgent, type Db, type Logger, type Queues } from '../core/index.js';
import type { MessagingAccess, SendOutcome } from '../agent/index.js';
import { platformOf, replyTargetOf, resolveTarget, targetAllowed, targetText } from '../platforms/index.js';

export interface MessagingDeps {
  db: Db;
  queues: Queues;
  log: Logger;
}

/** The turn's messaging, when the Agent names any target; undefined otherwise (the tool refuses). */
export function turnMessaging(deps: MessagingDeps, agent: CompiledAgent, adm: Admission): MessagingAccess | undefined {
  const messaging = agent.messaging;
  if (!messaging) return undefined;
  return {
    targets: () => ({ homeChannels: messaging.homeChannels, allowedTargets: messaging.allowedTargets }),
    async send(name: string, message: string, callKey: string): Promise<SendOutcome> {
      const resolved = resolveTarget(messaging, name);
      if ('error' in resolved) return { ok: false, error: resolved.error };
      const { target, home } = resolved;
      const text = targetText(target);
      if (!targetAllowed(messaging, target, home)) return { ok: false, error: `${text} is not an allowed target of this agent (Agent spec.messaging.allowedTargets). Nothing was sent; use action "list" for the targets you may use.` };
      if (!platformOf(agent, target.platform)) return { ok: false, error: `this agent is not connected to ${target.platform} (Agent spec.platforms), so nothing can be sent to ${text}.` };
      const reply = replyTargetOf(target);
      if ('error' in reply) return { ok: false, error: `${reply.error}. Nothing was sent.` };
      const ob = await recordCallObligation(deps.db.pool, { admissionId: adm.id, callKey: `send:${callKey}`, platform: target.platform, target: reply.target, content: message });
      if (ob.pending) {
        await enqueueDelivery(deps.queues, { obligationId: ob.id }).catch((err: unknown) => deps.log.warn({ err, obligation: ob.id }, 'send_message enqueue failed; the sweeper will deliver it'));
      }
      deps.log.info({ admission: adm.id, obligation: ob.id, target: text, repeat: !ob.created }, ob.created ? 'Recorded a send_message delivery' : 'send_message repeated a call already recorded; not sent again');
      return { ok: true, target: text, obligationId: ob.id, alreadySent: !ob.created };
    },
  };
}
