// Keeps this process's worker_instances row alive; others treat a silent instance as dead.
import { heartbeat, type Db, type Logger } from '../core/index.js';

export function startHeartbeat(db: Db, instanceId: string, everySeconds: number, log: Logger): { stop(): void } {
  const timer = setInterval(() => {
    heartbeat(db.pool, instanceId)
      .then((alive) => { if (!alive) log.error({ instance: instanceId }, 'Instance row is gone or stopped; owned work will be recovered by others'); })
      .catch((err: unknown) => log.warn({ err }, 'Heartbeat failed'));
  }, everySeconds * 1_000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
