// What send_message sends through (ToolContext.messaging): the worker resolves the target against
// the Agent's spec.messaging (named home channels, allowed targets) and records one delivery
// obligation per tool call to that platform, sent with the same Agent's credentials
// (worker/messaging.ts). Absent: the turn may send nothing (unattended turns still may: cron).

export interface MessagingTargets {
  /** Named home channels: name → `platform:chat[:thread]`. */
  homeChannels: { name: string; target: string }[];
  /** Explicit targets the agent may send to, as `platform:chat[:thread]` (`platform:*` = any chat there). */
  allowedTargets: string[];
}

export type SendOutcome =
  | { ok: true; target: string; obligationId: string; alreadySent: boolean }
  | { ok: false; error: string };

export interface MessagingAccess {
  targets(): MessagingTargets;
  /** Sends once per `callKey` (the tool call): a repeat returns the first obligation. */
  send(target: string, message: string, callKey: string): Promise<SendOutcome>;
}
