// Environment-backed secrets for `hermes dev` and single-machine installs: a reference's key
// names an environment variable. The CLI is the one place that hands env values down.
import { EnvSecretResolver } from '../agent/index.js';
import type { SecretLookup } from '../../operator/index.js';

export function envSecrets(env: NodeJS.ProcessEnv = process.env): EnvSecretResolver & SecretLookup {
  const values: Record<string, string | undefined> = { ...env };
  const resolver = new EnvSecretResolver(values);
  return Object.assign(resolver, { value: async (_ns: string, ref: { key: string }) => values[ref.key] });
}
