// The guard's order (SPEC "Terminal backend"): hardline (no override) → deny → off → allow →
// dangerous → unattended → smart → human, with the words the model gets for each refusal.
import { describe, expect, it } from 'vitest';
import { ApprovalGuard, DenialBreaker, type GuardOptions, type HumanApprovals, type HumanDecision } from '../../../services/agent/index.js';

const signal = new AbortController().signal;

function human(decision: HumanDecision): HumanApprovals & { asked: string[] } {
  const asked: string[] = [];
  return { asked, ask: (r) => { asked.push(r.command); return Promise.resolve(decision); } };
}

const guard = (o: Partial<GuardOptions>) => new ApprovalGuard({ session: 's1', unattended: false, ...o });

describe('ApprovalGuard order', () => {
  it('hardline blocks even in mode off, with an allow rule, and never asks anybody', async () => {
    const h = human({ decision: 'approved' });
    const d = await guard({ settings: { mode: 'off', deny: [], allow: ['*'], timeoutSeconds: 60 }, human: h }).check('sudo rm -rf /', signal);
    expect(d).toMatchObject({ allowed: false, message: expect.stringMatching(/^BLOCKED: .*hardline blocklist/) });
    expect(h.asked).toEqual([]);
  });

  it('deny globs win over mode off and the allowlist', async () => {
    const d = await guard({ settings: { mode: 'off', deny: ['NPM PUBLISH*'], allow: ['npm *'], timeoutSeconds: 60 } }).check('npm  publish --tag x', signal);
    expect(d).toMatchObject({ allowed: false, message: expect.stringContaining('deny rule "NPM PUBLISH*"') });
  });

  it('mode off allows dangerous commands; allow globs skip detection; safe commands run without asking', async () => {
    expect(await guard({ settings: { mode: 'off', deny: [], allow: [], timeoutSeconds: 60 } }).check('git push --force', signal)).toEqual({ allowed: true, via: 'mode off' });
    const h = human({ decision: 'denied' });
    expect(await guard({ settings: { mode: 'manual', deny: [], allow: ['git push*'], timeoutSeconds: 60 }, human: h }).check('git push --force', signal)).toEqual({ allowed: true, via: 'allow rule' });
    expect(await guard({ human: h }).check('ls -la', signal)).toEqual({ allowed: true, via: 'not dangerous' });
    expect(h.asked).toEqual([]);
  });

  it('the defaults (no approvals block) are manual: a dangerous command waits for a human', async () => {
    const h = human({ decision: 'approved' });
    expect(await guard({ human: h }).check('kill -9 42', signal)).toEqual({ allowed: true, via: 'approved by the user' });
    expect(h.asked).toEqual(['kill -9 42']);
  });

  it('turns the human answers into the words the model gets', async () => {
    const denied = await guard({ human: human({ decision: 'denied', note: 'not on prod' }) }).check('kill -9 42', signal);
    expect(denied).toMatchObject({ allowed: false, message: expect.stringMatching(/^BLOCKED: the user denied .*not on prod/) });
    const expired = await guard({ human: human({ decision: 'expired' }) }).check('kill -9 42', signal);
    expect(expired).toMatchObject({ allowed: false, message: expect.stringMatching(/^BLOCKED: .*waited 60 s .*Silence is not consent\./) });
    expect(await guard({}).check('kill -9 42', signal)).toMatchObject({ allowed: false, message: expect.stringContaining('no way to ask') });
  });

  it('unattended turns deny what needs a human, in every mode but off, without asking', async () => {
    const h = human({ decision: 'approved' });
    for (const mode of ['manual', 'smart'] as const) {
      const d = await guard({ unattended: true, human: h, reviewer: () => Promise.resolve('APPROVE'), settings: { mode, deny: [], allow: [], timeoutSeconds: 60 } }).check('rm -r build', signal);
      expect(d).toMatchObject({ allowed: false, message: expect.stringContaining('nobody watches this turn') });
    }
    expect(h.asked).toEqual([]);
    expect(await guard({ unattended: true }).check('ls', signal)).toMatchObject({ allowed: true });
  });
});

describe('smart mode', () => {
  const smart = { mode: 'smart' as const, deny: [], allow: [], timeoutSeconds: 60 };

  it('APPROVE runs, DENY blocks, ESCALATE and nonsense go to a human', async () => {
    expect(await guard({ settings: smart, reviewer: () => Promise.resolve('APPROVE\nbuild dir') }).check('rm -r build', signal)).toEqual({ allowed: true, via: 'smart approval' });
    expect(await guard({ settings: smart, reviewer: () => Promise.resolve('DENY\nwipes data') }).check('rm -r data', signal)).toMatchObject({ allowed: false, message: expect.stringContaining('security reviewer denied') });
    for (const answer of ['ESCALATE\nunsure', 'Sure, go ahead!', undefined]) {
      const h = human({ decision: 'approved' });
      expect(await guard({ settings: smart, human: h, reviewer: () => Promise.resolve(answer) }).check('rm -r x', signal)).toEqual({ allowed: true, via: 'approved by the user' });
      expect(h.asked).toEqual(['rm -r x']);
    }
    const h = human({ decision: 'denied' });
    await guard({ settings: smart, human: h, reviewer: () => Promise.reject(new Error('boom')) }).check('rm -r x', signal);
    expect(h.asked).toEqual(['rm -r x']);
  });

  it('3 denials in a row trip the breaker: the reviewer is not asked again, a human decides, an approval resets it', async () => {
    const breaker = new DenialBreaker();
    let calls = 0;
    const reviewer = () => { calls++; return Promise.resolve('DENY\nno'); };
    const h = human({ decision: 'approved' });
    const g = guard({ settings: smart, reviewer, breaker, human: h });
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await g.check(`rm -r x${i}`, signal));
    expect(answers[2]).toMatchObject({ message: expect.stringContaining('CIRCUIT BREAKER') });
    expect(answers[1]).not.toMatchObject({ message: expect.stringContaining('CIRCUIT BREAKER') });
    expect(await g.check('rm -r y', signal)).toEqual({ allowed: true, via: 'approved by the user' });
    expect(calls).toBe(3);
    expect(h.asked).toEqual(['rm -r y']);
    await g.check('rm -r z', signal); // the human's approval reset the breaker: the reviewer is asked again
    expect(calls).toBe(4);
    // Another session of the same worker is not affected.
    expect(breaker.tripped('s2')).toBe(false);
  });
});
