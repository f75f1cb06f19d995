// The compile step: Agent + Profile (+ resolved references) → an immutable CompiledAgent. The
// operator runs it on reconcile; `hermes dev` runs the very same code on manifest files, so a
// manifest that works locally works in a cluster.
import { sha256, type CompiledAgent } from '../services/core/index.js';
import type { Agent } from './api/agent.js';
import type { Profile } from './api/profile.js';

/** Looks up secret values during compile (a Secret in a cluster, the environment in dev). */
export interface SecretLookup {
  value(namespace: string, ref: { name: string; key: string }): Promise<string | undefined>;
}

export class CompileError extends Error {
  override name = 'CompileError';
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

export async function compileAgent(agent: Agent, profile: Profile, secrets: SecretLookup): Promise<CompiledAgent> {
  const ns = agent.metadata.namespace;
  if (profile.metadata.name !== agent.spec.profileRef.name || profile.metadata.namespace !== ns) {
    throw new CompileError('ProfileMismatch', `Agent ${ns}/${agent.metadata.name} references Profile "${agent.spec.profileRef.name}", got ${profile.metadata.namespace}/${profile.metadata.name}.`);
  }
  const keySha256: string[] = [];
  for (const k of agent.spec.api.keys) {
    const v = await secrets.value(ns, k.secretKeyRef);
    if (!v) throw new CompileError('CredentialsMissing', `API key secret "${k.secretKeyRef.name}" key "${k.secretKeyRef.key}" was not found in namespace ${ns}.`);
    keySha256.push(sha256(v));
  }
  const m = profile.spec.model;
  return {
    apiVersion: 'hermes.dev/v1alpha1',
    agent: { namespace: ns, name: agent.metadata.name, ...(agent.metadata.generation !== undefined ? { generation: agent.metadata.generation } : {}) },
    profile: { namespace: profile.metadata.namespace, name: profile.metadata.name },
    model: {
      provider: m.provider, model: m.model,
      ...(m.baseURL ? { baseURL: m.baseURL } : {}),
      ...(m.apiKey ? { apiKeyRef: m.apiKey.secretKeyRef } : {}),
      ...(m.contextWindow ? { contextWindow: m.contextWindow } : {}),
      ...(m.maxOutputTokens ? { maxOutputTokens: m.maxOutputTokens } : {}),
      ...(m.temperature !== undefined ? { temperature: m.temperature } : {}),
    },
    persona: profile.spec.persona,
    api: { enabled: agent.spec.api.enabled, keySha256 },
    busyPolicy: agent.spec.busyPolicy,
  };
}
