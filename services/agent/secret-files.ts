// Secrets from files laid out as Kubernetes mounts them: <dir>/<namespace>/<secret name>/<key>
// (HERMES_SECRETS_SOURCE=files). Read at every use, so a rotated Secret (the kubelet swaps the
// mounted files atomically) is picked up without a restart.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SecretAccessError, validSecretPath, type SecretStore } from './secrets.js';

export class FileSecretStore implements SecretStore {
  readonly source: string;
  constructor(private readonly dir: string) {
    this.source = `files under ${dir}/<namespace>/<name>/<key>`;
  }

  async read(namespace: string, name: string, key: string): Promise<string | undefined> {
    if (!validSecretPath(namespace, name, key)) return undefined;
    try {
      // A file written by hand usually ends with a newline; no API key does.
      return (await readFile(join(this.dir, namespace, name, key), 'utf8')).replace(/\r?\n$/, '');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      throw new SecretAccessError(`Reading Secret "${name}" key "${key}" of namespace ${namespace} from ${this.dir} failed: ${code ?? (err as Error).message}`);
    }
  }
}
