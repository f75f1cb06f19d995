// The compiled configuration of one agent: what the operator (or `hermes dev`) writes to
// Postgres and what gateways and workers read. Secret *references* only, never values; API keys
// only as SHA-256 hashes.
import { z } from 'zod';

export const secretRefSchema = z.object({
  /** Secret name (Kubernetes) — in `hermes dev`, ignored: the key names an environment variable. */
  name: z.string(),
  key: z.string(),
});
export type SecretRef = z.infer<typeof secretRefSchema>;

export const compiledModelSchema = z.object({
  provider: z.enum(['openai', 'anthropic', 'openai-compatible']),
  model: z.string().min(1),
  baseURL: z.string().url().optional(),
  apiKeyRef: secretRefSchema.optional(),
  contextWindow: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
});
export type CompiledModel = z.infer<typeof compiledModelSchema>;

export const compiledAgentSchema = z.object({
  apiVersion: z.literal('hermes.dev/v1alpha1'),
  agent: z.object({ namespace: z.string(), name: z.string(), generation: z.number().int().optional() }),
  profile: z.object({ namespace: z.string(), name: z.string() }),
  model: compiledModelSchema,
  persona: z.string(),
  api: z.object({
    enabled: z.boolean(),
    /** SHA-256 (hex) of each accepted bearer key. */
    keySha256: z.array(z.string().regex(/^[0-9a-f]{64}$/)),
  }),
  busyPolicy: z.enum(['queue', 'steer', 'interrupt']),
});
export type CompiledAgent = z.infer<typeof compiledAgentSchema>;
