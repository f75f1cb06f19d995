// Profile fields of the agent loop reach the compiled config (and stay absent when unset).
import { describe, expect, it } from 'vitest';
import { agentSchema, compileAgent, profileSchema, staticConfigMaps } from '../../operator/index.js';
import { compiledAgentSchema } from '../../services/core/index.js';

const meta = { name: 'p', namespace: 'ns' };
const agent = agentSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: 'a', namespace: 'ns' }, spec: { profileRef: { name: 'p' } } });
const sources = { secrets: { value: async () => 'v' }, configMaps: staticConfigMaps([]) };

describe('Profile → compiled agent-loop fields', () => {
  it('maps toolsets, budget, context files, spend caps, extra keys and pricing', async () => {
    const profile = profileSchema.parse({
      apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta,
      spec: {
        model: { provider: 'openai', model: 'gpt-4o', extraApiKeys: [{ env: 'OPENAI_KEY_2' }], pricing: { inputPerMTok: 1, outputPerMTok: 2 } },
        toolsets: ['clock'], maxIterations: 12, contextFiles: [{ name: 'AGENTS.md', content: 'Be terse.' }], spendCaps: { user: { dailyUsd: 1 } },
      },
    });
    const compiled = compiledAgentSchema.parse(await compileAgent(agent, profile, sources));
    expect(compiled).toMatchObject({
      toolsets: ['clock'], maxIterations: 12, contextFiles: [{ name: 'AGENTS.md', content: 'Be terse.' }], spendCaps: { user: { dailyUsd: 1 } },
      model: { extraApiKeyRefs: [{ key: 'OPENAI_KEY_2' }], pricing: { inputPerMTok: 1, outputPerMTok: 2 } },
    });
  });

  it('compiles spec.web: the search provider with its key as a reference (never a value) and the page limits', async () => {
    const web = (spec: unknown) => compileAgent(agent, profileSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'gpt-4o' }, toolsets: ['web'], web: spec } }), sources);
    const compiled = compiledAgentSchema.parse(await web({ search: { provider: 'brave', apiKey: { secretKeyRef: { name: 'keys', key: 'brave' } } }, extract: { maxChars: 30_000, summariseAboveChars: 8_000 } }));
    expect(compiled.web).toEqual({ search: { provider: 'brave', apiKeyRef: { name: 'keys', key: 'brave' } }, maxChars: 30_000, summariseAboveChars: 8_000 });
    expect((await web({ search: { provider: 'tavily', apiKey: { env: 'TAVILY_API_KEY' } } })).web).toEqual({ search: { provider: 'tavily', apiKeyRef: { name: '', key: 'TAVILY_API_KEY' } } });
    expect((await web({ search: { provider: 'searxng', url: 'https://searx.example' } })).web).toEqual({ search: { provider: 'searxng', url: 'https://searx.example' } });
    expect(JSON.stringify(compiled)).not.toContain('"v"');
  });

  it('leaves them out when the Profile does not set them', async () => {
    const profile = profileSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'gpt-4o' } } });
    const compiled = await compileAgent(agent, profile, sources);
    for (const k of ['toolsets', 'maxIterations', 'contextFiles', 'spendCaps', 'web'] as const) expect(compiled[k]).toBeUndefined();
    expect(compiled.model.extraApiKeyRefs).toBeUndefined();
  });
});
