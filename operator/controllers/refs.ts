// Which Secrets and ConfigMaps an object names, so their events re-queue exactly the objects that use them.
import type { RawObject } from './context.js';
import type { WatchedCache } from '../runtime/informer.js';

interface SourceLike { secretKeyRef?: { name?: string } }
interface TextSourceLike { configMapKeyRef?: { name?: string } }
interface AgentSpecLike { profileRef?: { name?: string }; api?: { keys?: SourceLike[] }; platforms?: { credentials?: { secretRef?: { name?: string } } }[] }

/** Names of every `secretKeyRef` anywhere in a Profile's spec (fields added by other issues included). */
export function profileSecretNames(p: RawObject | undefined): Set<string> {
  const names = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!v || typeof v !== 'object') return;
    const ref = (v as SourceLike).secretKeyRef;
    if (ref?.name) names.add(ref.name);
    Object.values(v).forEach(walk);
  };
  walk(p?.spec);
  return names;
}

/** Names of the ConfigMaps a Profile reads text from (personaFrom, contextFiles[].contentFrom). */
export function profileConfigMapNames(p: RawObject | undefined): Set<string> {
  const spec = (p?.spec ?? {}) as { personaFrom?: TextSourceLike; contextFiles?: { contentFrom?: TextSourceLike }[] };
  const names = new Set<string>();
  for (const s of [spec.personaFrom, ...(spec.contextFiles ?? []).map((f) => f.contentFrom)]) if (s?.configMapKeyRef?.name) names.add(s.configMapKeyRef.name);
  return names;
}

export function agentSecretNames(a: RawObject, profiles: WatchedCache<RawObject>): Set<string> {
  const spec = (a.spec ?? {}) as AgentSpecLike;
  const names = new Set(profileSecretNames(spec.profileRef?.name ? profiles.get(spec.profileRef.name, a.metadata.namespace) : undefined));
  for (const k of spec.api?.keys ?? []) if (k.secretKeyRef?.name) names.add(k.secretKeyRef.name);
  for (const p of spec.platforms ?? []) if (p.credentials?.secretRef?.name) names.add(p.credentials.secretRef.name);
  return names;
}
