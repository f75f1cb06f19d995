// crds/ is generated from operator/api: a schema change without `make crds` fails here.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderCrds } from '../../../operator/crds/render.js';
import { kindSchema, unboundedPaths } from '../../../operator/crds/convert.js';
import { kinds } from '../../../operator/crds/definitions.js';
import { z } from 'zod';
import { agentSchema, cronJobSchema, profileSchema, skillSchema } from '../../../operator/index.js';
import { nulMessage } from '../../../operator/api/common.js';

const dir = new URL('../../../crds/', import.meta.url);

describe('crds/ is generated from the zod API', () => {
  it('matches `npm run crds` output exactly (run `make crds` when this fails)', () => {
    const expected = renderCrds();
    const committed = readdirSync(dir).filter((f) => f.startsWith('hermes.dev_')).sort();
    expect(committed).toEqual([...expected.keys()].sort());
    for (const [name, content] of expected) expect(readFileSync(new URL(name, dir), 'utf8'), `crds/${name} is stale: run make crds`).toBe(content);
  });

  it('bounds every free string, list and map of every spec, and refuses to render one without a bound', () => {
    for (const def of kinds) {
      const spec = (kindSchema(def.spec, def.status, def.description).properties as Record<string, Parameters<typeof unboundedPaths>[0]>).spec!;
      expect(unboundedPaths(spec), def.kind).toEqual([]);
    }
    const loose = z.object({ model: z.string(), tags: z.array(z.string().max(8)), labels: z.record(z.string(), z.string().max(8)), window: z.number().int().positive(), price: z.number().min(0) });
    expect(() => kindSchema(loose, z.object({}), 'x')).toThrow('CRD schema: unbounded fields (give each a .max() in operator/api): spec.model (string without maxLength), spec.tags (list without maxItems), spec.labels (map without maxProperties), spec.window (number without maximum), spec.price (number without maximum)');
    // hermes dev parses with the same zod schemas: the bounds hold there too.
    const meta = { name: 'x', namespace: 'ns' };
    const model = (name: string) => profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: name } } });
    expect(model('m'.repeat(256)).success).toBe(true);
    expect(model('m'.repeat(257)).error?.issues[0]?.path).toEqual(['spec', 'model', 'model']);
    const labels = (n: number) => agentSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: meta, spec: { profileRef: { name: 'p' }, skills: { matchLabels: Object.fromEntries(Array.from({ length: n }, (_, i) => [`l${i}`, 'v'])) } } });
    expect(labels(64).success).toBe(true);
    expect(labels(65).error?.issues[0]?.message).toBe('at most 64 entries');
    // Numbers too: any value up to int64 was accepted (a maxOutputTokens of 9e15 sent to the provider,
    // a price whose cost overflows the ledger's numeric(14, 6)); hermes dev refuses what the apiserver does.
    const numbers = (model: Record<string, unknown>, spec: Record<string, unknown> = {}) => profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'm', ...model }, ...spec } });
    expect(numbers({ contextWindow: 10_000_000, maxOutputTokens: 1_000_000, pricing: { inputPerMTok: 10_000, outputPerMTok: 10_000 } }, { maxIterations: 10_000, spendCaps: { user: { dailyUsd: 1_000_000 } } }).success).toBe(true);
    for (const [model, spec, path] of [
      [{ contextWindow: 10_000_001 }, {}, 'spec.model.contextWindow'],
      [{ maxOutputTokens: 9_000_000_000_000_000 }, {}, 'spec.model.maxOutputTokens'],
      [{ pricing: { inputPerMTok: 1, outputPerMTok: 1e15 } }, {}, 'spec.model.pricing.outputPerMTok'],
      [{}, { maxIterations: 3_000_000_000 }, 'spec.maxIterations'],
      [{}, { spendCaps: { agent: { monthlyUsd: 1e12 } } }, 'spec.spendCaps.agent.monthlyUsd'],
    ] as const) expect(numbers(model, spec).error?.issues.map((i) => i.path.join('.')), path).toEqual([path]);
    const deadline = (s: number) => cronJobSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'CronJob', metadata: meta, spec: { agentRef: { name: 'a' }, schedule: '@daily', prompt: 'p', startingDeadlineSeconds: s } });
    expect(deadline(604_800).success).toBe(true);
    expect(deadline(604_801).error?.issues[0]?.path).toEqual(['spec', 'startingDeadlineSeconds']);
    // NUL, which Postgres cannot store, is refused in every spec string, naming the field.
    const persona = profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'm' }, persona: 'a\u0000b', toolsets: ['clock', 'w\u0000'] } });
    expect(persona.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['spec.persona', nulMessage], ['spec.toolsets.1', nulMessage]]);
    expect(renderCrds().get('hermes.dev_profiles.yaml')).toContain('pattern: ^[^\\x00]*$');
  });

  it('keeps a Skill\'s files inside its folder: no ., .. or empty path segments (the same pattern in the CRD)', () => {
    const skill = (path: string) => skillSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Skill', metadata: { name: 's', namespace: 'ns' }, spec: { name: 's', description: 'Does a thing.', body: '# Do it', files: [{ path, content: 'x' }] } });
    for (const good of ['references/format.md', 'scripts/sub/run.sh', 'assets/.hidden', 'templates/a..b', 'references/...']) expect(skill(good).success, good).toBe(true);
    for (const bad of ['references/../../../etc/cron.d/evil', 'references/./x', 'references/..', 'references//x', 'references/x/', 'references', '/references/x', 'notes/x.md']) {
      expect(skill(bad).error?.issues[0]?.message, bad).toMatch(/^must be under references\/, templates\/, scripts\/ or assets\//);
    }
    expect(renderCrds().get('hermes.dev_skills.yaml')).toContain(String.raw`pattern: ^(references|templates|scripts|assets)(\/(?:[A-Za-z0-9_-]`);
  });

  it('applies the same cross-field rules in TypeScript (hermes dev) as CEL does in the apiserver', () => {
    const meta = { name: 'x', namespace: 'ns' };
    const agent = (key: unknown) => agentSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: meta, spec: { profileRef: { name: 'p' }, api: { keys: [key] } } });
    expect(agent({ secretKeyRef: { name: 's', key: 'k' } }).success).toBe(true);
    expect(agent({ env: 'KEY' }).success).toBe(true);
    expect(agent({}).error?.issues[0]?.message).toMatch(/exactly one source/);
    expect(agent({ env: 'KEY', secretKeyRef: { name: 's', key: 'k' } }).success).toBe(false);
    const profile = (fallback: unknown) => profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'm' }, fallbackModels: [fallback] } });
    expect(profile({ provider: 'openai', model: 'm2' }).success).toBe(true);
    expect(profile({ model: 'm2' }).error?.issues[0]?.message).toMatch(/needs provider and model/);
    // A key from the environment goes only where the install points, never to a Profile's baseURL.
    const envKeyTo = (baseURL?: string) => profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'm', apiKey: { env: 'OPENAI_API_KEY' }, ...(baseURL ? { baseURL } : {}) } } });
    expect(envKeyTo().success).toBe(true);
    expect(envKeyTo('https://models.example/v1').error?.issues[0]?.message).toMatch(/API key from env is only sent to the provider's default endpoint/);
    expect(profile({ provider: 'openai', model: 'm2', baseURL: 'https://models.example/v1', extraApiKeys: [{ env: 'K' }] }).error?.issues[0]?.message).toMatch(/API key from env is only sent/);
    expect(profile({ provider: 'openai', model: 'm2', baseURL: 'https://models.example/v1', apiKey: { secretKeyRef: { name: 's', key: 'k' } } }).success).toBe(true);
    // The web search key likewise: env only to the provider's public API, never to a Profile url.
    const search = (s: unknown) => profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'm' }, web: { search: s } } });
    expect(search({ provider: 'tavily', apiKey: { env: 'TAVILY_API_KEY' } }).success).toBe(true);
    expect(search({ provider: 'tavily', url: 'https://search.example', apiKey: { env: 'TAVILY_API_KEY' } }).error?.issues[0]?.message).toMatch(/API key from env is only sent to the search provider's public API/);
    expect(search({ provider: 'tavily', url: 'https://search.example', apiKey: { secretKeyRef: { name: 's', key: 'k' } } }).success).toBe(true);
    expect(search({ provider: 'searxng', url: 'https://searx.example' }).success).toBe(true);
    const skill = (name: string, description: string) => skillSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Skill', metadata: meta, spec: { name, description, body: 'b' } });
    expect(skill('ok', 'Does a thing.').success).toBe(true);
    expect(skill('a'.repeat(65), 'd').error?.issues[0]?.message).toMatch(/name must be at most 64/);
    expect(skill('ok', 'd'.repeat(1025)).error?.issues[0]?.message).toMatch(/description must be at most 1024/);
    // Characters as the apiserver's CEL size() and Hermes count them (code points): 600 emoji are 600, not 1 200.
    expect(skill('ok', `${'🔥'.repeat(600)}.`).success).toBe(true);
    const cron = (schedule: string) => cronJobSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'CronJob', metadata: meta, spec: { agentRef: { name: 'a' }, schedule, prompt: 'p' } }).success;
    expect(['0 9 * * 1-5', '*/15 * * * *', '@daily', '@every 30m', '0 0 1 JAN *']).toEqual(['0 9 * * 1-5', '*/15 * * * *', '@daily', '@every 30m', '0 0 1 JAN *'].filter(cron));
    expect(['', 'tomorrow', '* * * *', '* * * * * *', '@every', '@sometimes'].filter(cron)).toEqual([]);
    // The scheduler prunes history reading the limits as a Postgres integer: 3000000000 failed every tick's pruning.
    const history = (limit: number) => cronJobSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'CronJob', metadata: meta, spec: { agentRef: { name: 'a' }, schedule: '@daily', prompt: 'p', successfulRunsHistoryLimit: limit } });
    expect(history(1_000).success).toBe(true);
    expect(history(3_000_000_000).error?.issues[0]?.path).toEqual(['spec', 'successfulRunsHistoryLimit']);
  });
});
