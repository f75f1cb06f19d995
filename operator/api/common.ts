// Shared pieces of the hermes.dev/v1alpha1 API. These zod schemas are the single source of
// truth for the resources; the CRD generator (operator issue) renders them to crds/*.yaml.
import { z } from 'zod';

export const apiVersion = 'hermes.dev/v1alpha1';

export const objectMetaSchema = z.object({
  name: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS-1123 label').max(63),
  namespace: z.string().default('default'),
  generation: z.number().int().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
}).passthrough();

export const secretKeySelectorSchema = z.object({
  name: z.string().min(1).describe('Name of a Secret in the resource\'s namespace.'),
  key: z.string().min(1).describe('Key within the Secret.'),
});

export const secretValueSchema = z.object({
  secretKeyRef: secretKeySelectorSchema,
}).describe('Where a secret value comes from. Values are never copied into status or compiled config.');

export const localObjectRefSchema = z.object({ name: z.string().min(1) });
