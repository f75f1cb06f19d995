// Profile `spec.codeExecution` (execute_code's limits): the bounds, and what compile emits — absent
// stays absent (the tool applies Hermes' 300 s, 50 000 bytes, 50 calls); the code_execution
// toolset needs the sandbox, so it gets the default sandbox block like terminal and file.
import { describe, expect, it } from 'vitest';
import { agentSchema, compileAgent, compileSandbox, profileSchema, staticConfigMaps } from '../../../operator/index.js';
import { compiledAgentSchema } from '../../../services/core/index.js';

const profile = (spec: Record<string, unknown>) => profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p', namespace: 'ns' }, spec: { model: { provider: 'openai', model: 'm' }, ...spec } });
const sources = { secrets: { value: async () => 'x' }, configMaps: staticConfigMaps([]) };
const agent = agentSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: 'a', namespace: 'ns' }, spec: { profileRef: { name: 'p' } } });

describe('Profile spec.codeExecution', () => {
  it.each([
    [{ timeoutSeconds: 401 }, 'timeoutSeconds'],
    [{ timeoutSeconds: 0 }, 'timeoutSeconds'],
    [{ maxOutputBytes: 999 }, 'maxOutputBytes'],
    [{ maxToolCalls: -1 }, 'maxToolCalls'],
  ])('refuses %j', (codeExecution, field) => {
    const r = profile({ codeExecution });
    expect(r.success).toBe(false);
    expect(r.error?.message).toContain(field);
  });

  it('compiles the limits as written, and nothing when unset', async () => {
    const set = profile({ toolsets: ['code_execution'], codeExecution: { timeoutSeconds: 120, maxOutputBytes: 20_000, maxToolCalls: 10 } });
    const compiled = compiledAgentSchema.parse(await compileAgent(agent, set.data!, sources));
    expect(compiled.codeExecution).toEqual({ timeoutSeconds: 120, maxOutputBytes: 20_000, maxToolCalls: 10 });
    const unset = compiledAgentSchema.parse(await compileAgent(agent, profile({}).data!, sources));
    expect(unset.codeExecution).toBeUndefined();
  });

  it('gives the code_execution toolset the default sandbox', () => {
    expect(compileSandbox(profile({ toolsets: ['code_execution'] }).data!.spec).sandbox).toMatchObject({ mode: 'call', timeoutSeconds: 180 });
  });
});
