// Agent: one deployed agent. This slice: its Profile, the OpenAI-compatible API access
// and the busy policy; platforms, admins, delivery and runtime arrive with their issues.
import { z } from 'zod';
import { apiVersion, localObjectRefSchema, objectMetaSchema, secretValueSchema } from './common.js';

export const agentSpecSchema = z.object({
  profileRef: localObjectRefSchema.describe('The Profile (same namespace) this agent runs with.'),
  api: z.object({
    enabled: z.boolean().default(true).describe('Serve the message API and the OpenAI-compatible endpoint.'),
    keys: z.array(secretValueSchema).default([]).describe('Bearer keys accepted for this agent.'),
  }).default({ enabled: true, keys: [] }),
  busyPolicy: z.enum(['queue', 'steer', 'interrupt']).default('interrupt').describe('What a message does while a turn runs (Hermes default: interrupt).'),
});

export const agentSchema = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal('Agent'),
  metadata: objectMetaSchema,
  spec: agentSpecSchema,
});
export type Agent = z.infer<typeof agentSchema>;
