// Mixture of Agents (Profile spec.moa): named presets of reference models that answer in parallel
// (at most 8, as Hermes) and one aggregator model that writes the answer with their answers as
// advice. A preset is used as the model (`model: {provider: moa, model: <preset>}`) or for one
// prompt with `/moa <prompt>` (the default preset).
import { z } from 'zod';
import { withRules, type Rule } from './common.js';
import { endpointModelSchema, envKeyRule } from './model.js';
import { MOA_MAX_REFERENCES } from '../../services/core/index.js';


const memberSchema = withRules(endpointModelSchema, [envKeyRule]);

export const moaPresetSchema = z.object({
  name: z.string().regex(/^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/, 'must be lower case letters, digits, "-", "_" or "."').max(63).describe('The preset\'s name: the model name with provider moa.'),
  referenceModels: z.array(memberSchema).min(1).max(MOA_MAX_REFERENCES).describe('Models asked in parallel for their answer to the conversation\'s latest request (no tools); each call is recorded with task moa_reference.'),
  aggregator: memberSchema.describe('The model that writes the answer (with tools), given the reference answers as advice.'),
  referenceTemperature: z.number().min(0).max(2).default(0.6).describe('Sampling temperature of the reference calls.'),
  aggregatorTemperature: z.number().min(0).max(2).default(0.4).describe('Sampling temperature of the aggregator calls.'),
  maxTokens: z.number().int().positive().max(128_000).default(4096).describe('Output tokens of each reference answer at most.'),
  fanout: z.enum(['user_turn', 'per_iteration']).default('user_turn').describe('When the references are asked: once per user turn (their answers reused across the turn\'s tool iterations), or before every aggregator call.'),
});

export const moaSpecSchema = withRules(z.object({
  defaultPreset: z.string().min(1).max(63).optional().describe('The preset /moa uses (default: the first preset).'),
  presets: z.array(moaPresetSchema).min(1).max(16).describe('Named presets.'),
}), [{
  rule: 'self.presets.all(p, self.presets.exists_one(q, q.name == p.name))',
  message: 'moa preset names must be unique',
  check: (m) => new Set(m.presets.map((p) => p.name)).size === m.presets.length,
}, {
  rule: '!has(self.defaultPreset) || self.presets.exists(p, p.name == self.defaultPreset)',
  message: 'moa.defaultPreset must name one of moa.presets',
  check: (m) => m.defaultPreset === undefined || m.presets.some((p) => p.name === m.defaultPreset),
}]);
export type MoaSpec = z.infer<typeof moaSpecSchema>;

/** `provider: moa` names a preset of spec.moa. */
export const moaModelRule: Rule<{ model: { provider: string; model: string }; moa?: { presets: { name: string }[] } | undefined }> = {
  rule: 'self.model.provider != \'moa\' || (has(self.moa) && self.moa.presets.exists(p, p.name == self.model.model))',
  message: 'model.provider moa needs model to name a preset of spec.moa.presets',
  check: (s) => s.model.provider !== 'moa' || (s.moa?.presets.some((p) => p.name === s.model.model) ?? false),
};
