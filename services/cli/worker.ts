import { Command } from 'commander';
import { startWorker, startWorkerProbes } from '../worker/index.js';
import { openRuntime, onShutdown } from './runtime.js';
import { envSecrets } from './secrets.js';

export const workerCommand = new Command('worker')
  .description('Run a turn worker: consumes turn and delivery jobs, runs the agent loop, sweeps the outbox (what the worker Deployment runs). Probes and metrics on HERMES_WORKER_PORT (8081): /healthz, /readyz, /metrics.')
  .action(async () => {
    const rt = await openRuntime('worker');
    const worker = await startWorker({ ...rt, secrets: envSecrets() });
    const probes = await startWorkerProbes(rt);
    rt.log.info({ url: probes.url }, 'Worker probes and metrics listening');
    onShutdown(rt.log, async () => {
      probes.draining();
      await worker.close();
      await probes.close();
      await rt.close();
    });
  });
