import { Command } from 'commander';
import { startWorker } from '../worker/index.js';
import { openRuntime, onShutdown } from './runtime.js';
import { envSecrets } from './secrets.js';

export const workerCommand = new Command('worker')
  .description('Run a turn worker: consumes turn and delivery jobs, runs the agent loop, sweeps the outbox (what the worker Deployment runs).')
  .action(async () => {
    const rt = await openRuntime('worker');
    const worker = await startWorker({ ...rt, secrets: envSecrets() });
    onShutdown(rt.log, async () => {
      await worker.close();
      await rt.close();
    });
  });
