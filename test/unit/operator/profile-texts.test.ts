// Persona and context files from ConfigMaps: the resolution rules (optional, binaryData, size
// limits, messages that say what to run), the schema rules the CRD's CEL also enforces, and the
// `hermes dev` path that reads ConfigMap manifests beside the Profiles.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentSchema, compileAgent, CompileError, loadManifests, profileSchema, resolveProfileTexts, staticConfigMaps } from '../../../operator/index.js';

const examples = new URL('../../../examples/', import.meta.url).pathname;
const meta = { name: 'p', namespace: 'team' };
const profile = (spec: Record<string, unknown>) => profileSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'm' }, ...spec } });
const ref = (name: string, key: string, optional?: boolean) => ({ configMapKeyRef: { name, key, ...(optional === undefined ? {} : { optional }) } });
const maps = staticConfigMaps([
  { namespace: 'team', name: 'prompt', data: { 'persona.md': 'You are Ada.', 'AGENTS.md': 'Run the tests.' } },
  { namespace: 'other', name: 'prompt', data: { 'persona.md': 'Wrong namespace.' } },
]);

describe('resolveProfileTexts', () => {
  it('reads persona and context files from ConfigMap keys of the Profile\'s namespace, inline ones as written, in order', () => {
    const r = resolveProfileTexts(profile({
      personaFrom: ref('prompt', 'persona.md'),
      contextFiles: [{ name: 'CLAUDE.md', content: 'Prefer tables.' }, { name: 'AGENTS.md', contentFrom: ref('prompt', 'AGENTS.md') }],
    }), maps);
    expect(r).toEqual({ texts: { persona: 'You are Ada.', contextFiles: [{ name: 'CLAUDE.md', content: 'Prefer tables.' }, { name: 'AGENTS.md', content: 'Run the tests.' }] } });
    expect(resolveProfileTexts(profile({ persona: 'Inline.' }), maps)).toEqual({ texts: { persona: 'Inline.', contextFiles: [] } });
  });

  it('says which field, ConfigMap and key is missing, and the command that fixes it', () => {
    const noMap = resolveProfileTexts(profile({ personaFrom: ref('nope', 'persona.md') }), maps);
    expect(noMap).toEqual({ problem: { reason: 'ConfigMapNotFound', message: 'spec.personaFrom: ConfigMap "nope" not found in namespace team; create it: kubectl -n team create configmap nope --from-file=persona.md=<file>' } });
    const noKey = resolveProfileTexts(profile({ contextFiles: [{ name: 'A', content: 'a' }, { name: 'AGENTS.md', contentFrom: ref('prompt', 'agents.md') }] }), maps);
    expect(noKey).toEqual({ problem: { reason: 'ConfigMapKeyMissing', message: 'spec.contextFiles[1].contentFrom: ConfigMap "prompt" has no key "agents.md" in namespace team; add it or fix configMapKeyRef.key (keys: AGENTS.md, persona.md).' } });
  });

  it('leaves out an optional text whose ConfigMap or key is missing (persona falls back to empty, i.e. the default identity)', () => {
    const r = resolveProfileTexts(profile({
      personaFrom: ref('absent', 'persona.md', true),
      contextFiles: [{ name: 'CLAUDE.md', contentFrom: ref('prompt', 'CLAUDE.md', true) }, { name: 'AGENTS.md', contentFrom: ref('prompt', 'AGENTS.md', true) }],
    }), maps);
    expect(r).toEqual({ texts: { persona: '', contextFiles: [{ name: 'AGENTS.md', content: 'Run the tests.' }] } });
  });

  it('decodes binaryData as UTF-8 and refuses texts over the persona and context-file limits', () => {
    const big = staticConfigMaps([{ namespace: 'team', name: 'big', data: { persona: 'x'.repeat(20_001), ok: 'x'.repeat(20_000), file: 'y'.repeat(100_001) } }]);
    expect(resolveProfileTexts(profile({ personaFrom: ref('big', 'ok') }), big)).toMatchObject({ texts: { persona: 'x'.repeat(20_000) } });
    expect(resolveProfileTexts(profile({ personaFrom: ref('big', 'persona') }), big)).toEqual({ problem: { reason: 'ConfigMapValueTooLarge', message: 'spec.personaFrom: ConfigMap "big" key "persona" has 20001 characters; the persona may have at most 20000.' } });
    expect(resolveProfileTexts(profile({ contextFiles: [{ name: 'AGENTS.md', contentFrom: ref('big', 'file') }] }), big))
      .toMatchObject({ problem: { reason: 'ConfigMapValueTooLarge', message: expect.stringContaining('context file AGENTS.md may have at most 100000') } });
  });

  it('refuses a text holding NUL, which Postgres cannot store (every publish of the Agent failed with "unsupported Unicode escape sequence")', () => {
    const nul = staticConfigMaps([{ namespace: 'team', name: 'nul', data: { persona: 'You are\u0000 terse.' } }]);
    expect(resolveProfileTexts(profile({ personaFrom: ref('nul', 'persona') }), nul)).toEqual({ problem: { reason: 'ConfigMapValueHasNul',
      message: 'spec.personaFrom: ConfigMap "nul" key "persona" holds a NUL (U+0000) character at offset 7, which Postgres cannot store; the persona must be text without it.' } });
    expect(resolveProfileTexts(profile({ contextFiles: [{ name: 'AGENTS.md', contentFrom: ref('nul', 'persona') }] }), nul)).toMatchObject({ problem: { reason: 'ConfigMapValueHasNul' } });
  });
});

describe('Profile schema rules (the same as the CRD\'s CEL)', () => {
  const parse = (spec: Record<string, unknown>) => profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'm' }, ...spec } });
  it('takes persona or personaFrom, not both; each context file exactly one of content or contentFrom', () => {
    expect(parse({ persona: 'a', personaFrom: ref('c', 'k') }).error?.issues[0]?.message).toBe('set persona or personaFrom, not both');
    expect(parse({ persona: '', personaFrom: ref('c', 'k') }).success).toBe(true);
    expect(parse({ contextFiles: [{ name: 'A', content: 'a', contentFrom: ref('c', 'k') }] }).error?.issues[0]?.message).toBe('each context file needs exactly one of content or contentFrom');
    expect(parse({ contextFiles: [{ name: 'A' }] }).error?.issues[0]?.message).toBe('each context file needs exactly one of content or contentFrom');
    expect(parse({ contextFiles: [{ name: 'A', contentFrom: { configMapKeyRef: { name: 'c' } } }] }).success).toBe(false);
  });
});

describe('hermes dev reads ConfigMap manifests beside the Profiles', () => {
  const sources = (configMaps: Parameters<typeof staticConfigMaps>[0]) => ({ secrets: { value: async () => 'v' }, configMaps: staticConfigMaps(configMaps) });

  it('compiles examples/slack-team with its persona and handbook from prompt.yaml', async () => {
    const set = await loadManifests(join(examples, 'slack-team'));
    expect(set.configMaps.map((c) => `${c.namespace}/${c.name}`)).toEqual(['default/team-assistant-prompt']);
    const compiled = await compileAgent(set.agents[0]!, set.profiles[0]!, sources(set.configMaps));
    expect(compiled.persona).toBe("You are the team's assistant in Slack. Be brief, use threads, and link sources.\n");
    expect(compiled.contextFiles).toEqual([{ name: 'AGENTS.md', content: expect.stringMatching(/^# Team handbook\n/) }]);
  });

  it('stops with the reason when a referenced ConfigMap is not in the folder', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hermes-texts-'));
    try {
      await writeFile(join(dir, 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: prompt}\nbinaryData:\n  persona.md: ' + Buffer.from('Héllo from binaryData').toString('base64') + '\n');
      const set = await loadManifests(dir);
      expect(set.configMaps).toEqual([{ namespace: 'default', name: 'prompt', data: { 'persona.md': 'Héllo from binaryData' } }]);
      const agent = agentSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: 'a' }, spec: { profileRef: { name: 'p' } } });
      const p = profileSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p' }, spec: { model: { provider: 'openai', model: 'm' }, personaFrom: ref('prompt', 'persona.md') } });
      expect((await compileAgent(agent, p, sources(set.configMaps))).persona).toBe('Héllo from binaryData');
      const err = await compileAgent(agent, { ...p, spec: { ...p.spec, personaFrom: ref('missing', 'persona.md') } }, sources(set.configMaps)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CompileError);
      expect(err).toMatchObject({ reason: 'ConfigMapNotFound', message: expect.stringContaining('ConfigMap "missing" not found in namespace default') });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
