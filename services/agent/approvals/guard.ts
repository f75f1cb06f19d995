// The command guard (ToolContext.guard): every command a tool wants to run passes it first, in
// SPEC's order — hardline blocklist (no override) → deny globs → mode off → allow globs →
// dangerous-command detection (a command that is not dangerous runs) → unattended turns deny →
// smart reviewer (APPROVE / DENY / ESCALATE) → a human (manual: the call is parked until
// `/approve`, `/deny` or the timeout: "Silence is not consent").
import type { CompiledApprovals } from '../../core/index.js';
import type { CommandGuard, GuardDecision } from '../tools/registry.js';
import { dangerousReason } from './dangerous.js';
import { allowedBy, deniedBy } from './globs.js';
import { hardlineReason } from './hardline.js';
import { DenialBreaker, smartVerdict, type ReviewerCall } from './smart.js';

/** Hermes' defaults when the Profile has no `approvals` block: manual, 60 s, no globs. */
export const DEFAULT_APPROVALS: CompiledApprovals = { mode: 'manual', deny: [], allow: [], timeoutSeconds: 60 };

export interface HumanApprovalRequest {
  command: string;
  /** Why it needs a decision (the detector's category), in words for the user. */
  reason: string;
  timeoutSeconds: number;
}

/** How a human answered — or did not. */
export type HumanDecision =
  | { decision: 'approved' }
  | { decision: 'denied'; note?: string }
  | { decision: 'expired' }
  | { decision: 'cancelled' }
  | { decision: 'unavailable'; reason: string };

/** Where a command waits for a person (the worker: a durable pending approval in Postgres). */
export interface HumanApprovals {
  ask(request: HumanApprovalRequest, signal: AbortSignal): Promise<HumanDecision>;
}

/** Every way a check ends (metric label `outcome`). */
export type ApprovalOutcome =
  | 'hardline' | 'deny_rule' | 'mode_off' | 'allow_rule' | 'not_dangerous' | 'unattended_denied'
  | 'smart_approved' | 'smart_denied' | 'approved' | 'denied' | 'expired' | 'cancelled' | 'unavailable';

export interface GuardOptions {
  /** The compiled `approvals` block; absent = DEFAULT_APPROVALS. */
  settings?: CompiledApprovals;
  /** Key of the denial breaker (the session). */
  session: string;
  /** Nobody watches this turn (cron): whatever needs a human is denied. */
  unattended: boolean;
  /** Where manual decisions are asked; absent = no way to ask (such commands are denied). */
  human?: HumanApprovals;
  /** The smart reviewer's model call; absent in smart mode = every dangerous command goes to a human. */
  reviewer?: ReviewerCall;
  breaker?: DenialBreaker;
  onOutcome?: (outcome: ApprovalOutcome) => void;
}

const quote = (command: string) => JSON.stringify(command.length > 200 ? `${command.slice(0, 200)}…` : command);
const blocked = (message: string): GuardDecision => ({ allowed: false, message: `BLOCKED: ${message}` });

const BREAKER_NOTE = ' CIRCUIT BREAKER: several commands in a row were denied by the security reviewer. Stop trying variations of this operation; tell the user what you wanted to run and why, and let them run it or send /approve.';

export class ApprovalGuard implements CommandGuard {
  private readonly settings: CompiledApprovals;
  private readonly breaker: DenialBreaker;

  constructor(private readonly opts: GuardOptions) {
    this.settings = opts.settings ?? DEFAULT_APPROVALS;
    this.breaker = opts.breaker ?? new DenialBreaker();
  }

  async check(command: string, signal: AbortSignal): Promise<GuardDecision> {
    const [outcome, decision] = await this.decide(command, signal);
    this.opts.onOutcome?.(outcome);
    return decision;
  }

  private async decide(command: string, signal: AbortSignal): Promise<[ApprovalOutcome, GuardDecision]> {
    const { settings } = this;
    const hard = hardlineReason(command);
    if (hard) return ['hardline', blocked(`${quote(command)} is on the hardline blocklist (${hard}) and never runs, whatever the approval settings. Do not retry it or a variation of it.`)];
    const rule = deniedBy(command, settings.deny);
    if (rule) return ['deny_rule', blocked(`${quote(command)} matches this agent's deny rule ${JSON.stringify(rule)} (approvals.deny). Do not retry it; if it is needed, ask the user to run it themselves.`)];
    if (settings.mode === 'off') return ['mode_off', { allowed: true, via: 'mode off' }];
    if (allowedBy(command, settings.allow)) return ['allow_rule', { allowed: true, via: 'allow rule' }];
    const reason = dangerousReason(command);
    if (!reason) return ['not_dangerous', { allowed: true, via: 'not dangerous' }];
    if (this.opts.unattended) return ['unattended_denied', blocked(`${quote(command)} needs approval (${reason}), and nobody watches this turn (scheduled), so it did not run. Unattended turns deny what needs a human.`)];
    if (settings.mode === 'smart') {
      const smart = await this.smart(command, reason, signal);
      if (smart) return smart;
    }
    return this.askHuman(command, reason, signal);
  }

  /** The reviewer's verdict; undefined = escalate to a human. */
  private async smart(command: string, reason: string, signal: AbortSignal): Promise<[ApprovalOutcome, GuardDecision] | undefined> {
    const { session } = this.opts;
    if (!this.opts.reviewer || this.breaker.tripped(session)) return undefined;
    const v = await smartVerdict(this.opts.reviewer, command, reason, signal);
    if (v.verdict === 'approve') {
      this.breaker.reset(session);
      return ['smart_approved', { allowed: true, via: 'smart approval' }];
    }
    if (v.verdict === 'escalate') return undefined;
    const n = this.breaker.denied(session);
    return ['smart_denied', blocked(`the security reviewer denied ${quote(command)} (${reason}): ${v.why}${n >= this.breaker.threshold ? BREAKER_NOTE : ' Do not retry it; ask the user what they want instead.'}`)];
  }

  private async askHuman(command: string, reason: string, signal: AbortSignal): Promise<[ApprovalOutcome, GuardDecision]> {
    const { human } = this.opts;
    const { timeoutSeconds } = this.settings;
    if (!human) return ['unavailable', blocked(`${quote(command)} needs approval (${reason}), and this conversation has no way to ask for it. The command did not run.`)];
    const d = await human.ask({ command, reason, timeoutSeconds }, signal);
    switch (d.decision) {
      case 'approved':
        this.breaker.reset(this.opts.session);
        return ['approved', { allowed: true, via: 'approved by the user' }];
      case 'denied':
        return ['denied', blocked(`the user denied ${quote(command)} (${reason})${d.note ? `: ${d.note}` : ''}. Do not retry it; ask what they want instead.`)];
      case 'expired':
        return ['expired', blocked(`${quote(command)} (${reason}) waited ${timeoutSeconds} s for /approve and nobody answered. Silence is not consent. The command did not run; do not retry it until the user approves.`)];
      case 'cancelled':
        return ['cancelled', blocked(`the turn was stopped while ${quote(command)} waited for approval; it did not run.`)];
      default:
        return ['unavailable', blocked(`${quote(command)} needs approval (${reason}), but the approval could not be recorded (${d.reason}). The command did not run.`)];
    }
  }
}
