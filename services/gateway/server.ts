// Listening: the app on HERMES_HOST:HERMES_PORT (port 0 picks a free one).
import { listeningUrl } from '../core/index.js';
import { buildGatewayApp } from './app.js';
import type { GatewayDeps } from './deps.js';

export interface RunningGateway {
  /** e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** Stops accepting, ends SSE streams and waits, unsubscribes. Leaves `deps` open. */
  close(): Promise<void>;
}

export async function startGateway(deps: GatewayDeps): Promise<RunningGateway> {
  const app = buildGatewayApp(deps);
  await app.listen({ host: deps.config.HERMES_HOST, port: deps.config.HERMES_PORT });
  return { url: listeningUrl(app.server, deps.config.HERMES_HOST, deps.config.HERMES_PORT), close: () => app.close() };
}
