import { Command } from 'commander';
import { startWorker, startWorkerProbes } from '../worker/index.js';
import { openRuntime, onShutdown } from './runtime.js';
import { clusterKubeConfig, openSecrets } from './secrets.js';
import { publishBundledSkillsAtStart } from '../../operator/skills/bundled.js';

export const workerCommand = new Command('worker')
  .description('Run a turn worker: consumes turn and delivery jobs, runs the agent loop, sweeps the outbox (what the worker Deployment runs). Probes and metrics on HERMES_WORKER_PORT (8081): /healthz, /readyz, /metrics. Model API keys come from Secrets in each Agent\'s namespace (HERMES_SECRETS_SOURCE, default kubernetes).')
  .action(async () => {
    const rt = await openRuntime('worker');
    // Profile Secrets are read in each Agent's own namespace (default: the Kubernetes API).
    const secrets = await openSecrets(rt.config, { defaultSource: 'kubernetes' }).catch(async (err: unknown) => { await rt.close(); throw err; });
    rt.log.info({ secrets: secrets.source }, 'Reading Profile secrets');
    await publishBundledSkillsAtStart(rt.db, rt.log);
    // Probes first: a port that is taken stops the process before it has claimed any turn (a turn
    // claimed by a process that then exits is settled unknown, never run again).
    const probes = await startWorkerProbes(rt);
    const worker = await startWorker({ ...rt, secrets, kubeConfig: clusterKubeConfig }).catch(async (err: unknown) => { await probes.close(); throw err; });
    rt.log.info({ url: probes.url }, 'Worker probes and metrics listening');
    onShutdown(rt.log, async () => {
      probes.draining();
      await worker.close();
      await probes.close();
      await rt.close();
    });
  });
