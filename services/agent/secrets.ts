// Resolving secret references at the moment of use. Compiled config carries references only;
// a reference is a {Secret name, key} pair read in the Agent's own namespace, or — with an empty
// name — an `env:` source, which resolves only from the variables the install allow-listed
// (HERMES_SECRETS_ENV_ALLOW). Nothing here ever looks at the process environment as a whole.
// See docs/adr/0001-secrets-by-reference.md.
import type { SecretRef } from '../core/index.js';

export interface ResolveOptions {
  /** Skip any cache (auth refused the value: it may have been rotated). */
  fresh?: boolean;
}

export interface SecretResolver {
  /**
   * The value of key `ref.key` of Secret `ref.name` in `namespace` (an `env:` source when the
   * name is empty), or undefined when it does not resolve. Throws {@link SecretAccessError} when
   * the source could not be read at all (forbidden, unreachable).
   */
  resolve(namespace: string, ref: SecretRef, opts?: ResolveOptions): Promise<string | undefined>;
  /** Where values come from, for operator-facing messages ("Kubernetes Secrets", "files under …"). */
  readonly source: string;
}

/** The source of secret values could not be read (not: the value does not exist). */
export class SecretAccessError extends Error {
  override name = 'SecretAccessError';
}

/** An `env:` source: the compiled form has no Secret name. */
export const isEnvRef = (ref: SecretRef): boolean => ref.name === '';

/** Where Secrets ({namespace, name, key}) are read from. */
export interface SecretStore {
  read(namespace: string, name: string, key: string, opts?: ResolveOptions): Promise<string | undefined>;
  readonly source: string;
}

/** Kubernetes object-name rules, checked before a name reaches a path or an API call. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SECRET_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

/** True when namespace, name and key are valid Kubernetes names (so never `..` or a slash). */
export function validSecretPath(namespace: string, name: string, key: string): boolean {
  return NAMESPACE.test(namespace) && namespace.length <= 63 && SECRET_NAME.test(name) && name.length <= 253
    && SECRET_KEY.test(key) && key !== '.' && key !== '..' && key.length <= 253;
}

export interface ResolverOptions {
  /** Allow-listed variables and their values: the only ones `env:` sources resolve to. */
  env?: Readonly<Record<string, string>>;
  /**
   * `hermes dev` / `local`: a secretKeyRef whose Secret does not hold the key resolves to the
   * allow-listed variable named by the key (`{name: openai, key: OPENAI_API_KEY}` → $OPENAI_API_KEY).
   * @defaultValue false
   */
  envFallback?: boolean;
}

/** A resolver over one store plus the allow-listed variables. */
export function secretResolver(store: SecretStore, opts: ResolverOptions = {}): SecretResolver {
  const env = opts.env ?? {};
  const fromEnv = (key: string) => (Object.hasOwn(env, key) ? env[key] : undefined);
  return {
    source: `${store.source}${Object.keys(env).length ? `, allow-listed variables ${Object.keys(env).sort().join(', ')}` : ''}`,
    async resolve(namespace, ref, ro) {
      if (isEnvRef(ref)) return fromEnv(ref.key);
      const value = validSecretPath(namespace, ref.name, ref.key) ? await store.read(namespace, ref.name, ref.key, ro) : undefined;
      return value ?? (opts.envFallback ? fromEnv(ref.key) : undefined);
    },
  };
}

/** One Secret's data, decoded. */
export interface SecretData {
  namespace: string;
  name: string;
  data: Readonly<Record<string, string>>;
}

/** Secrets held in memory: Secret manifests of `hermes dev` and HERMES_SECRETS_FILE, tests. */
export class MemorySecretStore implements SecretStore {
  private readonly byName = new Map<string, Readonly<Record<string, string>>>();
  constructor(secrets: readonly SecretData[], readonly source = 'Secret manifests') {
    for (const s of secrets) this.byName.set(`${s.namespace}/${s.name}`, { ...this.byName.get(`${s.namespace}/${s.name}`), ...s.data });
  }
  async read(namespace: string, name: string, key: string): Promise<string | undefined> {
    const data = this.byName.get(`${namespace}/${name}`);
    return data && Object.hasOwn(data, key) ? data[key] : undefined;
  }
}

/** In-memory Secrets, no variables: tests and embedders. */
export function staticSecrets(secrets: readonly SecretData[], opts: ResolverOptions = {}): SecretResolver {
  return secretResolver(new MemorySecretStore(secrets), opts);
}
