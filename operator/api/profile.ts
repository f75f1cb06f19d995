// Profile: how an agent thinks and what it may do. This slice: the model and persona;
// the agent-loop, tools, sandbox and memory issues add their fields here.
import { z } from 'zod';
import { apiVersion, objectMetaSchema, secretValueSchema } from './common.js';

export const modelSpecSchema = z.object({
  provider: z.enum(['openai', 'anthropic', 'openai-compatible']).describe('API flavour of the model endpoint.'),
  model: z.string().min(1).describe('Model name as the provider knows it.'),
  baseURL: z.string().url().optional().describe('Endpoint base URL (required for openai-compatible; for openai defaults to OPENAI_BASE_URL or api.openai.com).'),
  apiKey: secretValueSchema.optional().describe('API key of the model endpoint.'),
  contextWindow: z.number().int().positive().optional().describe('Context window in tokens (default: detected per model).'),
  maxOutputTokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
});

export const profileSpecSchema = z.object({
  model: modelSpecSchema,
  persona: z.string().max(20_000).default('').describe('Identity and voice of the agent (the first prompt layer).'),
});

export const profileSchema = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal('Profile'),
  metadata: objectMetaSchema,
  spec: profileSpecSchema,
});
export type Profile = z.infer<typeof profileSchema>;
