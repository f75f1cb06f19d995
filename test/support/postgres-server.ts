// A private Postgres server for tests that stop, restart or take Postgres away (the shared test
// server must stay up): initdb into a temp folder, a free loopback port, trust auth, no fsync (commits still survive a server crash).
// As root it runs as the `postgres` system user (initdb and pg_ctl refuse root), in a folder that
// user owns. The server is killed when the test process exits, whatever state the test left.
//
//   const pg = await privatePostgres();   // initialised and started
//   await pg.stop('immediate');           // a crash; 'fast' is a clean shutdown
//   await pg.start();
//   await pg.restart();                   // stop('fast') + start()
//   await pg.cleanup();                   // stop and remove the folder
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const run = promisify(execFile);

export type StopMode = 'smart' | 'fast' | 'immediate';

export interface PrivatePostgres {
  /** `postgresql://postgres@127.0.0.1:<port>/postgres` (the maintenance database). */
  readonly url: string;
  readonly port: number;
  /** The URL of database `name` on this server. */
  urlFor(name: string): string;
  /** Starts the server (no-op when running) and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops it: 'fast' (default) disconnects clients cleanly; 'immediate' is a crash (recovery on next start). */
  stop(mode?: StopMode): Promise<void>;
  /** stop(mode) then start(). */
  restart(mode?: StopMode): Promise<void>;
  /** Stops the server and deletes its folder. */
  cleanup(): Promise<void>;
}

export interface PrivatePostgresOptions {
  /** @defaultValue 100 */
  maxConnections?: number;
}

/** The newest installed Postgres binaries (Debian: /usr/lib/postgresql/<version>/bin). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  let versions: string[] = [];
  try {
    versions = readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(a) - Number(b));
  } catch { /* not installed */ }
  const newest = versions.at(-1);
  if (!newest) throw new Error('privatePostgres: no Postgres under /usr/lib/postgresql (apt-get install postgresql; hack/services.sh does this)');
  return join(root, newest, 'bin');
}

const isRoot = () => process.getuid?.() === 0;

async function postgresUid(): Promise<{ uid: number; gid: number }> {
  const [{ stdout: uid }, { stdout: gid }] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

/** A temp folder the server's user owns and can reach (as root: owned by `postgres`, under a world-traversable parent). */
async function serverFolder(): Promise<string> {
  for (const parent of [...new Set([tmpdir(), '/tmp'])]) {
    const dir = await mkdtemp(join(parent, 'hermes-pg-'));
    if (!isRoot()) return dir;
    const { uid, gid } = await postgresUid();
    await chown(dir, uid, gid);
    const reachable = await run('runuser', ['-u', 'postgres', '--', 'test', '-w', dir]).then(() => true, () => false);
    if (reachable) return dir;
    await rm(dir, { recursive: true, force: true });
  }
  throw new Error(`privatePostgres: the postgres user cannot enter a folder under ${tmpdir()} or /tmp`);
}

/** Folders of every server started by this process, killed and removed on exit (a test that failed midway must not leave one behind). */
const running = new Set<string>();
let exitHook = false;
function killOnExit(dir: string): void {
  running.add(dir);
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const folder of running) {
      try {
        const pid = Number(readFileSync(join(folder, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
        if (pid > 0) process.kill(pid, 'SIGQUIT'); // immediate shutdown; its children follow the postmaster
      } catch { /* not running */ }
      rmSync(folder, { recursive: true, force: true });
    }
  });
}

export async function privatePostgres(opts: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const bin = binDir();
  const dir = await serverFolder();
  killOnExit(dir);
  const data = join(dir, 'data');
  const port = await freePort();
  const as = (cmd: string, args: string[]) => (isRoot() ? run('runuser', ['-u', 'postgres', '--', cmd, ...args], { cwd: dir }) : run(cmd, args, { cwd: dir }));
  const urlFor = (name: string) => `postgresql://postgres@127.0.0.1:${port}/${name}`;
  const serverOptions = [
    `-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1', `-c max_connections=${opts.maxConnections ?? 100}`,
    // fsync off only risks data on a machine crash; a server crash or immediate stop keeps every
    // commit (synchronous_commit stays on), which is what the ledger's tests rely on.
    '-c fsync=off', '-c full_page_writes=off',
  ].join(' ');
  const isRunning = () => as(join(bin, 'pg_ctl'), ['-D', data, 'status']).then(() => true, () => false);
  const fail = async (what: string, err: unknown): Promise<never> => {
    const log = await run('tail', ['-n', '20', join(dir, 'postgres.log')]).then((r) => r.stdout, () => '');
    throw new Error(`privatePostgres: ${what} failed: ${(err as Error).message}\n${log}`);
  };

  await as(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'])
    .catch((err: unknown) => fail('initdb', err));

  const stop = async (mode: StopMode = 'fast') => {
    if (!(await isRunning())) return;
    await as(join(bin, 'pg_ctl'), ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']).catch((err: unknown) => fail(`stop (${mode})`, err));
  };
  const start = async () => {
    if (await isRunning()) return;
    await as(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'postgres.log'), '-w', '-t', '60', '-o', serverOptions, 'start'])
      .catch((err: unknown) => fail(`start on port ${port}`, err));
  };
  await start();
  return {
    url: urlFor('postgres'),
    port,
    urlFor,
    start,
    stop,
    async restart(mode = 'fast') {
      await stop(mode);
      await start();
    },
    async cleanup() {
      await stop('immediate');
      running.delete(dir);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
