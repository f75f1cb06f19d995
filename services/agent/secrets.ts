// Resolving secret references at the moment of use. Compiled config carries references only.
import type { SecretRef } from '../core/index.js';

export interface SecretResolver {
  /** The value, or undefined when the reference does not resolve. */
  resolve(ref: SecretRef): Promise<string | undefined>;
}

/**
 * `hermes dev` and single-machine installs: a reference resolves to the environment variable
 * named by its key (`{name: openai, key: OPENAI_API_KEY}` → $OPENAI_API_KEY). The map is passed
 * in by the CLI from validated config, never read from process.env here.
 */
export class EnvSecretResolver implements SecretResolver {
  constructor(private readonly values: Readonly<Record<string, string | undefined>>) {}
  async resolve(ref: SecretRef): Promise<string | undefined> {
    return this.values[ref.key];
  }
}
