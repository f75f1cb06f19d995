// Shared pieces of the hermes.dev/v1alpha1 API. These zod schemas are the single source of
// truth for the resources; the CRD generator (operator/crds/) renders them to crds/*.yaml.
// Cross-field rules are declared once with {@link withRules}: a CEL expression the apiserver
// enforces (`x-kubernetes-validations`) and the same check in TypeScript for `hermes dev`.
import { z } from 'zod';

export const apiVersion = 'hermes.dev/v1alpha1';
export const group = 'hermes.dev';
export const version = 'v1alpha1';

/** A cross-field rule: CEL for the apiserver, `check` for code paths without one. */
export interface Rule<T> {
  /** CEL expression over `self` (the annotated value). */
  rule: string;
  /** Shown by `kubectl apply` and by `hermes dev` when the rule fails. */
  message: string;
  check: (value: T) => boolean;
}

/**
 * Bounds of the CRDs' free strings and lists, shared by the apiserver (maxLength, maxItems,
 * maxProperties in the generated CRDs) and `hermes dev` (the same zod schemas). The CRD generator
 * refuses a spec string, list or map without one (operator/crds/convert.ts), so a 300 KB model
 * name is refused at `kubectl apply` instead of being stored.
 */
export const specLimits = {
  /** An object name in Kubernetes (DNS-1123 subdomain): Secret, ConfigMap, Agent, Profile. */
  objectName: 253,
  /** A key of a Secret or ConfigMap (Kubernetes allows 253). */
  dataKey: 253,
  /** An environment variable name. */
  envName: 256,
  /** A model id as the provider knows it (e.g. accounts/fireworks/models/llama-v3p1-405b-instruct). */
  modelId: 256,
  /** A URL (base URLs, webhooks, MCP servers). */
  url: 2_048,
  /** A platform or API user id, or PLATFORM:ID. */
  principal: 300,
  /** A toolset, tool, slash command or skill name. */
  token: 128,
  /** One line of text: a label, a version, a description of a setting. */
  line: 1_024,
  /** Text the agent is given as a prompt (a cron prompt is a message: HERMES_MAX_MESSAGE_CHARS' default). */
  prompt: 100_000,
  /** Entries of a label selector, env or headers map. */
  mapEntries: 64,
  /**
   * A model's context window in tokens (the largest models take 10 M); compression works from it,
   * and the token columns of the ledger are Postgres integers (2 147 483 647 at most).
   */
  contextWindowTokens: 10_000_000,
  /** Output tokens of one model call (max_completion_tokens / max_tokens; providers stop far below). */
  outputTokens: 1_000_000,
  /** Model calls of one turn. */
  iterations: 10_000,
  /**
   * USD per million tokens. A call's cost is stored as Postgres numeric(14, 6) (under 100 000 000
   * USD): a full 10 M-token context at this price is 100 000 USD, which fits.
   */
  usdPerMTok: 10_000,
  /** A spend cap in USD per day or month. */
  spendCapUsd: 1_000_000,
  /** A CronJob's startingDeadlineSeconds: the scheduler looks back 7 days for missed slots (services/core/cron/plan.ts). */
  cronDeadlineSeconds: 7 * 86_400,
} as const;

/** A string map (labels, env, headers) of at most `max` entries: maxProperties in the CRD, checked by zod too. */
export function boundedRecord<K extends z.ZodType<string>, V extends z.ZodType>(key: K, value: V, max: number = specLimits.mapEntries) {
  return z.record(key, value)
    .refine((r) => Object.keys(r).length <= max, `at most ${max} entries`)
    .meta({ maxProperties: max });
}

type Meta = Record<string, unknown>;
const metaOf = (s: z.ZodType): Meta => (z.globalRegistry.get(s) as Meta | undefined) ?? {};

/** Attaches `rules` to `schema`: zod refinements and `x-kubernetes-validations` in the CRD. */
export function withRules<S extends z.ZodType>(schema: S, rules: Rule<z.output<S>>[]): S {
  const refined = schema.superRefine((value, ctx) => {
    for (const r of rules) if (!r.check(value as z.output<S>)) ctx.addIssue({ code: 'custom', message: r.message });
  }) as S;
  const previous = metaOf(schema);
  const existing = (previous['x-kubernetes-validations'] as unknown[] | undefined) ?? [];
  return refined.meta({ ...previous, 'x-kubernetes-validations': [...existing, ...rules.map(({ rule, message }) => ({ rule, message }))] }) as S;
}

/** Why a spec string may not hold NUL: Postgres stores no U+0000 in text or jsonb (compiled revisions, skills, cron). */
export const nulMessage = 'must not contain NUL (U+0000) characters: Postgres cannot store them';
/** The OpenAPI pattern of a string without NUL (RE2 and JavaScript alike). */
export const noNulPattern = '^[^\\x00]*$';

function nulPaths(value: unknown, path: (string | number)[], out: (string | number)[][]): void {
  if (typeof value === 'string') { if (value.includes('\u0000')) out.push(path); return; }
  if (Array.isArray(value)) value.forEach((v, i) => nulPaths(v, [...path, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) nulPaths(v, [...path, k], out);
}

/**
 * Refuses NUL in every string of a spec, naming each: a persona with one was accepted and then
 * every publish of the Agent failed in Postgres. The CRD generator adds {@link noNulPattern} to the
 * spec's strings for the apiserver (operator/crds/convert.ts).
 */
export function withoutNul<S extends z.ZodType>(schema: S): S {
  const refined = schema.superRefine((value, ctx) => {
    const out: (string | number)[][] = [];
    nulPaths(value, [], out);
    for (const path of out) ctx.addIssue({ code: 'custom', path, message: nulMessage });
  }) as S;
  return refined.meta(metaOf(schema)) as S;
}

/** Sets a description without dropping other metadata (zod's `.describe` replaces it). */
export function doc<S extends z.ZodType>(schema: S, description: string): S {
  return schema.meta({ ...metaOf(schema), description }) as S;
}

/**
 * Object names of the four kinds are DNS-1123 labels: they name Deployments, Services, sandbox
 * pools and label values. The apiserver would store `my.agent` (a subdomain) and the controllers
 * could only report it; the CRDs refuse it at `kubectl apply` with this rule (operator/crds/convert.ts).
 */
export const objectNameRule = {
  rule: `self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 63`,
  message: 'metadata.name must be a DNS-1123 label: at most 63 lower-case letters, digits and "-", starting and ending with a letter or digit (it names Deployments, Services and labels)',
} as const;

export const objectMetaSchema = z.object({
  name: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS-1123 label').max(63),
  namespace: z.string().default('default'),
  generation: z.number().int().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
}).passthrough();

export const secretKeySelectorSchema = z.object({
  name: z.string().min(1).max(specLimits.objectName).describe('Name of a Secret in the resource\'s namespace.'),
  key: z.string().min(1).max(specLimits.dataKey).describe('Key within the Secret.'),
});

/** A Secret reference with an empty name means "the allow-listed environment variable `key`" (see {@link secretValueSchema}). */
export const envVarName = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const secretValueSchema = doc(withRules(z.object({
  secretKeyRef: secretKeySelectorSchema.optional().describe('A key of a Secret in the resource\'s namespace (the usual source in a cluster).'),
  env: z.string().max(specLimits.envName).regex(envVarName).optional().describe('An environment variable of the Hermes processes, only if the install allow-lists it (HERMES_SECRETS_ENV_ALLOW; in `hermes dev` the provider keys by default). Such a key is never sent to a baseURL the Profile sets: use secretKeyRef for those.'),
}), [{
  rule: 'has(self.secretKeyRef) != has(self.env)',
  message: 'set exactly one source of the secret value: secretKeyRef or env',
  check: (v) => (v.secretKeyRef !== undefined) !== (v.env !== undefined),
}]), 'Where a secret value comes from: exactly one of secretKeyRef or env. Values are never copied into status or compiled config.');
export type SecretValue = z.infer<typeof secretValueSchema>;

/** The compiled form of a secret source: a Secret reference, or `{ name: '', key: ENV }`. */
export function secretRefOf(v: SecretValue): { name: string; key: string } {
  return v.secretKeyRef ? { name: v.secretKeyRef.name, key: v.secretKeyRef.key } : { name: '', key: v.env ?? '' };
}

/** A key of a ConfigMap in the resource's namespace (Kubernetes' `configMapKeyRef` shape). */
export const configMapKeySelectorSchema = z.object({
  name: z.string().min(1).max(specLimits.objectName).describe('Name of a ConfigMap in the resource\'s namespace.'),
  key: z.string().min(1).max(specLimits.dataKey).describe('Key within the ConfigMap (data or binaryData).'),
  optional: z.boolean().optional().describe('When true, a missing ConfigMap or key leaves the text out instead of blocking the Agent.'),
});
export type ConfigMapKeySelector = z.infer<typeof configMapKeySelectorSchema>;

/** Text kept outside the manifest: today a ConfigMap key (e.g. `kubectl create configmap persona --from-file=persona.md`). */
export const textSourceSchema = z.object({
  configMapKeyRef: configMapKeySelectorSchema.describe('Read the text from this ConfigMap key; edits to the ConfigMap recompile the Agents that use it.'),
});

export const localObjectRefSchema = z.object({ name: z.string().min(1).max(specLimits.objectName).describe('Name of an object in the same namespace.') });

export const conditionSchema = z.object({
  type: z.string().describe('Condition type, e.g. Ready.'),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().describe('CamelCase reason for the last transition.'),
  message: z.string().describe('Human-readable details: what is wrong and what to do.'),
  lastTransitionTime: z.string().describe('When status last changed (RFC 3339).'),
  observedGeneration: z.number().int().optional().describe('metadata.generation this condition was computed from.'),
});
export type Condition = z.infer<typeof conditionSchema>;

export const baseStatusShape = {
  observedGeneration: z.number().int().optional().describe('The metadata.generation the controller last applied.'),
  conditions: z.array(conditionSchema).optional()
    .meta({ description: 'Kubernetes-style conditions (Ready and kind-specific ones).', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
};
