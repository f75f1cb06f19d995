// The `hermes` CLI: one binary, one command per deployable (gateway, worker), plus migrate and
// dev. Every command has --help; settings come from the environment (see `hermes --help`).
import { Command } from 'commander';
import { ConfigError, describeSettings } from '../core/index.js';
import { migrateCommand } from './migrate.js';
import { workerCommand } from './worker.js';
import { gatewayCommand } from './gateway.js';
import { devCommand } from './dev.js';
import { operatorCommand } from './operator.js';
import { skillsCommand } from './skills.js';
import { memoryCommand, reviewCommand } from './learning.js';
import { agentsCommand } from './agents.js';
import { pairingCommand } from './pairing.js';
import { kanbanCommand } from './kanban.js';
import { cronCommand } from './cron.js';

const program = new Command('hermes')
  .description('Hermes Operator: the Hermes agent runtime on Kubernetes.')
  .addHelpText('after', `\nSettings (environment variables):\n${describeSettings()}`)
  .showHelpAfterError()
  .addCommand(gatewayCommand)
  .addCommand(workerCommand)
  .addCommand(migrateCommand)
  .addCommand(devCommand)
  .addCommand(operatorCommand)
  .addCommand(skillsCommand)
  .addCommand(memoryCommand)
  .addCommand(reviewCommand)
  .addCommand(pairingCommand)
  .addCommand(kanbanCommand)
  .addCommand(agentsCommand)
  .addCommand(cronCommand);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  throw err;
}
