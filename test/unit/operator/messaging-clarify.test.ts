// Agent spec.messaging and Profile spec.clarify (issue 14): validated by the schema (the same
// rules the CRD's CEL enforces), compiled for the worker, and a target on a platform the Agent is
// not connected to is refused at compile. The target grammar send_message resolves against them.
import { describe, expect, it } from 'vitest';
import { agentSchema, compileAgent, profileSchema, staticConfigMaps } from '../../../operator/index.js';
import { compiledAgentSchema, type CompiledAgent } from '../../../services/core/index.js';
import { parseTarget, replyTargetOf, resolveTarget, targetAllowed } from '../../../services/platforms/index.js';

const sources = { secrets: { value: async () => 'v' }, configMaps: staticConfigMaps([]) };
const profile = (spec: Record<string, unknown> = {}) => profileSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p', namespace: 'ns' }, spec: { model: { provider: 'openai', model: 'gpt-4o' }, ...spec } });
const agent = (spec: Record<string, unknown>) => agentSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: 'a', namespace: 'ns' }, spec: { profileRef: { name: 'p' }, ...spec } });
const slack = { type: 'slack', credentials: { secretRef: { name: 's' } } };

describe('spec.messaging and spec.clarify', () => {
  it('compiles home channels, allowed targets and the clarify timeout (default 3600 s)', async () => {
    const a = agent({ platforms: [slack], messaging: { homeChannels: [{ name: 'ops', target: 'slack:COPS' }], allowedTargets: ['slack:*'] } });
    if (!a.success) throw a.error;
    const compiled = compiledAgentSchema.parse(await compileAgent(a.data, profile({ clarify: {} }), sources));
    expect(compiled.messaging).toEqual({ homeChannels: [{ name: 'ops', target: 'slack:COPS' }], allowedTargets: ['slack:*'] });
    expect(compiled.clarify).toEqual({ timeoutSeconds: 3_600 });
    expect((await compileAgent(a.data, profile(), sources)).clarify).toBeUndefined();
  });

  it('refuses malformed targets with a clear message', () => {
    const bad = agent({ messaging: { allowedTargets: ['#general'] } });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues)).toContain('write it as PLATFORM:CHAT_ID or PLATFORM:CHAT_ID:THREAD_ID');
  });

  it('refuses at compile two home channels of one name', async () => {
    const dup = agent({ platforms: [slack], messaging: { homeChannels: [{ name: 'ops', target: 'slack:C1' }, { name: 'ops', target: 'slack:C2' }] } });
    if (!dup.success) throw dup.error;
    await expect(compileAgent(dup.data, profile(), sources)).rejects.toThrow('spec.messaging.homeChannels names "ops" twice: home channel names must be unique.');
  });

  it('refuses at compile a target on a platform the Agent is not connected to', async () => {
    const a = agent({ platforms: [slack], messaging: { allowedTargets: ['telegram:-100'] } });
    if (!a.success) throw a.error;
    await expect(compileAgent(a.data, profile(), sources)).rejects.toThrow(/spec.messaging names telegram:-100, but this Agent has no telegram platform/);
  });

  it('parses and allows targets as send_message does', () => {
    const messaging = { homeChannels: [{ name: 'ops', target: 'slack:COPS' }], allowedTargets: ['telegram:-1001:17', 'slack:CENG', 'discord:*'] };
    const allowed = (name: string) => {
      const r = resolveTarget(messaging, name);
      return 'error' in r ? r.error : targetAllowed(messaging, r.target, r.home);
    };
    expect([allowed('ops'), allowed('slack'), allowed('slack:CENG:1.2'), allowed('discord:99'), allowed('telegram:-1001:17')]).toEqual([true, true, true, true, true]);
    expect([allowed('slack:COTHER'), allowed('telegram:-1001'), allowed('telegram:-1001:18')]).toEqual([false, false, false]);
    expect(allowed('telegram')).toMatch(/neither a home channel/);
    expect(replyTargetOf(parseTarget('telegram:-1001:17')!)).toEqual({ target: { kind: 'telegram', chatId: -1001, threadId: 17 } });
    expect(replyTargetOf(parseTarget('slack:C1:1712.5')!)).toEqual({ target: { kind: 'slack', channel: 'C1', threadTs: '1712.5' } });
    expect(replyTargetOf(parseTarget('teams:19:abc')!)).toEqual({ error: 'send_message cannot send to teams (it sends to slack, telegram, discord)' });
  });

  it('never lets a chat-wide Discord grant reach another channel through a "thread" id, and allows a home channel written out', () => {
    // A Discord thread is addressed by its own id alone (replyTargetOf sends to it): nothing ties
    // discord:<chat>:<id> to <chat>, so discord:<chat> must not allow it (it was any channel).
    const messaging = { homeChannels: [{ name: 'ops', target: 'slack:COPS' }], allowedTargets: ['discord:111', 'discord:222:333'] };
    const allowed = (name: string) => {
      const r = resolveTarget(messaging, name);
      return 'error' in r ? r.error : targetAllowed(messaging, r.target, r.home);
    };
    expect(replyTargetOf(parseTarget('discord:111:999')!)).toEqual({ target: { kind: 'discord', channelId: '999' } });
    expect([allowed('discord:111:999'), allowed('discord:222:444'), allowed('discord:222')]).toEqual([false, false, false]);
    expect([allowed('discord:111'), allowed('discord:222:333')]).toEqual([true, true]);
    // The home channel "ops" is always allowed, by name and written out (and its threads, on Slack).
    expect([allowed('ops'), allowed('slack:COPS'), allowed('slack:COPS:1712.5')]).toEqual([true, true, true]);
  });
});

describe('unattended turns (clarify withheld)', () => {
  it('are cron, a webhook without a callback and API calls with their own conversation', async () => {
    const { unattendedTurn } = await import('../../../services/worker/reach-tools.js');
    const base = { platforms: [] } as unknown as CompiledAgent;
    const hooked = { platforms: [{ type: 'webhook', credentialsSecret: 'w', allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'all', callbackUrl: 'https://hooks.example/reply' }] } as unknown as CompiledAgent;
    expect(unattendedTurn(base, { platform: 'cron', callerHistory: null })).toBe(true);
    expect(unattendedTurn(base, { platform: 'webhook', callerHistory: null })).toBe(true);
    expect(unattendedTurn(hooked, { platform: 'webhook', callerHistory: null })).toBe(false);
    expect(unattendedTurn(base, { platform: 'api', callerHistory: [{ role: 'user', content: 'hi' }] })).toBe(true);
    expect(unattendedTurn(base, { platform: 'api', callerHistory: null })).toBe(false);
    // A chat completion without X-Hermes-Session-Id, even of one message: no next request reaches it.
    expect(unattendedTurn(base, { platform: 'api', callerHistory: null, replyTarget: { kind: 'api', replyOnly: true } })).toBe(true);
    expect(unattendedTurn(base, { platform: 'api', callerHistory: null, replyTarget: { kind: 'api' } })).toBe(false);
    expect(unattendedTurn(base, { platform: 'slack', callerHistory: null })).toBe(false);
  });
});
