// The `hermes` CLI: one binary, one command per deployable (gateway, worker), plus migrate and
// dev. Every command has --help; settings come from the environment (see `hermes --help`).
// A command's module is loaded only when that command runs: the Postgres-only ones (cron,
// agents, pairing, kanban, migrate, memory, skills, review) then start without loading the model
// SDKs, the Kubernetes client or the HTTP server, in about a third of the time; `hermes --help`
// and `hermes help` load them all.
import { Command } from 'commander';
import { ConfigError, describePostgresFailure, describeSettings, type SettingsCommand } from '../core/index.js';

/** Each top-level command, in the order `hermes --help` lists them, with the module that defines it. */
const commands: Record<string, () => Promise<Command>> = {
  gateway: async () => (await import('./gateway.js')).gatewayCommand,
  worker: async () => (await import('./worker.js')).workerCommand,
  migrate: async () => (await import('./migrate.js')).migrateCommand,
  dev: async () => (await import('./dev.js')).devCommand,
  operator: async () => (await import('./operator.js')).operatorCommand,
  skills: async () => (await import('./skills.js')).skillsCommand,
  memory: async () => (await import('./learning.js')).memoryCommand,
  review: async () => (await import('./learning.js')).reviewCommand,
  pairing: async () => (await import('./pairing.js')).pairingCommand,
  kanban: async () => (await import('./kanban.js')).kanbanCommand,
  agents: async () => (await import('./agents.js')).agentsCommand,
  cron: async () => (await import('./cron.js')).cronCommand,
};

/** The commands this invocation can reach: the one it names, or all of them (help, an unknown name, an option first). */
function commandsFor(argv: readonly string[]): string[] {
  const named = argv[2];
  return named !== undefined && Object.hasOwn(commands, named) ? [named] : Object.keys(commands);
}

/** A port the process cannot listen on (taken, not allowed): which address, why, and the settings that choose it. */
function describeListenFailure(err: unknown): string | undefined {
  const e = err as { syscall?: unknown; code?: unknown; address?: unknown; port?: unknown } | undefined;
  if (e?.syscall !== 'listen' || typeof e.code !== 'string') return undefined;
  const why = { EADDRINUSE: 'the port is taken by another process', EACCES: 'not allowed (a port below 1024 needs privileges)', EADDRNOTAVAIL: 'no interface of this machine has that address' }[e.code] ?? e.code;
  return `Cannot listen on ${String(e.address)}:${String(e.port)}: ${why}. Choose another with HERMES_HOST and HERMES_PORT (gateway), HERMES_WORKER_PORT (worker) or HERMES_METRICS_PORT, or the command's --port.`;
}

const program = new Command('hermes')
  .description('Hermes Operator: the Hermes agent runtime on Kubernetes.')
  .addHelpText('after', `\nSettings (environment variables):\n${describeSettings()}`)
  .showHelpAfterError();
/** The long-running commands: each one's --help lists the settings it reads, from the one schema. */
const settingsCommands: readonly string[] = ['gateway', 'worker', 'dev', 'operator'] satisfies SettingsCommand[];
for (const command of await Promise.all(commandsFor(process.argv).map((name) => commands[name]!()))) {
  if (settingsCommands.includes(command.name())) {
    command.addHelpText('after', `\nSettings (environment variables) that hermes ${command.name()} reads:\n${describeSettings(command.name() as SettingsCommand)}`);
  }
  program.addCommand(command);
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  // A setting that is wrong, or a Postgres the command cannot use (down, refusing the login):
  // one line and exit 2, as the database commands say it (cli-db.ts), never a stack trace.
  const said = err instanceof ConfigError ? err.message : describePostgresFailure(err, process.env.DATABASE_URL) ?? describeListenFailure(err);
  if (said !== undefined) {
    console.error(said);
    process.exit(2);
  }
  throw err;
}
