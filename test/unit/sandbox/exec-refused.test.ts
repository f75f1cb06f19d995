// A `pods/exec` refused before it started (services/sandbox/agent-sandbox/pod-exec.ts,
// kubernetes/failures.ts). client-node's Exec rejects a refused WebSocket upgrade with the `ws`
// ErrorEvent "Unexpected server response: 409" — not an Error — which once became
// "[object Object]" and "unreachable". Here a local HTTP server stands in for the apiserver's
// answer to the upgrade only (what a kubelet says while a container is still starting cannot be
// timed on the test plane): the real client-node Exec meets it, the failures read its status and
// message, and the session backend's exec tries such a refusal again but nothing else.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { Exec, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiCode, apiFailure, apiMessage } from '../../../services/sandbox/kubernetes/failures.js';
import { EXEC_REFUSED_DELAYS_MS, openRefusedAgain, podExec } from '../../../services/sandbox/agent-sandbox/pod-exec.js';

/** Answers every WebSocket upgrade with the next status of `answers` (the last one repeats), as a Status body. */
class RefusingServer {
  answers: number[] = [409];
  upgrades = 0;
  private readonly server: Server = createServer((_req, res) => res.writeHead(404).end());

  async start(): Promise<void> {
    this.server.on('upgrade', (_req, socket: Socket) => {
      const code = this.answers[Math.min(this.upgrades, this.answers.length - 1)]!;
      this.upgrades++;
      const body = JSON.stringify({ kind: 'Status', status: 'Failure', code, message: code === 409 ? 'container main is still starting; try again' : 'refused' });
      socket.end(`HTTP/1.1 ${code} Refused\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  kubeConfig(port = (this.server.address() as AddressInfo).port): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x',
    });
    return kc;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** What client-node's Exec rejects with against `kc`. */
async function execRejection(kc: KubeConfig): Promise<unknown> {
  const stdin = new PassThrough();
  stdin.end();
  return new Exec(kc).exec('ns', 'pod', 'main', ['true'], null, null, stdin, false).then(
    () => { throw new Error('the exec was not refused'); },
    (err: unknown) => err,
  );
}

const execOptions = (kc: KubeConfig) => ({
  kc, namespace: 'ns', pod: 'pod', callId: 'c1', command: 'true', timeoutMs: 30_000, apiTimeoutMs: 5_000,
  signal: new AbortController().signal, onOutput: () => undefined,
});

describe('a pods/exec refused before it started', () => {
  const server = new RefusingServer();
  beforeAll(() => server.start());
  afterAll(() => server.stop());

  it('keeps the refusal\'s status and message, and is not called unreachable', async () => {
    server.answers = [409];
    const err = await execRejection(server.kubeConfig());
    expect(err).not.toBeInstanceOf(Error); // ws's ErrorEvent
    expect(apiMessage(err)).toBe('Unexpected server response: 409');
    expect(apiCode(err)).toBe(409);
    const reason = apiFailure(err, 'starting the command in session sandbox ns/pod').reason;
    expect(reason).toContain('refused starting the command in session sandbox ns/pod (409: it is still starting, or has exited): Unexpected server response: 409');
    expect(reason).toContain('The command did not run');
    expect(reason).not.toMatch(/unreachable|object Object/);
  });

  it('names the cause of an apiserver that cannot be reached', async () => {
    const probe = new RefusingServer();
    await probe.start();
    const kc = probe.kubeConfig();
    await probe.stop();
    const reason = apiFailure(await execRejection(kc), 'starting the command').reason;
    expect(reason).toMatch(/^The Kubernetes API is unreachable \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)/);
  });

  it('is tried again while the container is starting, and the first try that opens is used', async () => {
    server.answers = [409];
    const refusal = await execRejection(server.kubeConfig());
    let tries = 0;
    const opened = await openRefusedAgain(async () => {
      tries++;
      if (tries < 3) throw refusal;
      return 'socket';
    }, { deadline: Date.now() + 60_000, signal: new AbortController().signal });
    expect(opened).toBe('socket');
    expect(tries).toBe(3);
  });

  it('is never tried again when the command may have reached the Pod (no answer to the upgrade)', async () => {
    let tries = 0;
    const timedOut = new Error('no answer within 15s to opening pods/exec in the session sandbox');
    await expect(openRefusedAgain(() => { tries++; return Promise.reject(timedOut); }, { deadline: Date.now() + 60_000, signal: new AbortController().signal }))
      .rejects.toBe(timedOut);
    expect(tries).toBe(1);
  });

  it('gives up after its last pause, degraded with the kubelet\'s refusal', async () => {
    server.answers = [409];
    server.upgrades = 0;
    const r = await podExec(execOptions(server.kubeConfig()));
    expect(server.upgrades).toBe(EXEC_REFUSED_DELAYS_MS.length + 1);
    expect(r.status).toBe('degraded');
    expect(r.reason).toContain('(409: it is still starting, or has exited)');
  });

  it('stops at a refusal that will not pass (403), without trying again', async () => {
    server.answers = [409, 409, 403];
    server.upgrades = 0;
    const r = await podExec(execOptions(server.kubeConfig()));
    expect(server.upgrades).toBe(3);
    expect(r.status).toBe('degraded');
    expect(r.reason).toContain('(403): Unexpected server response: 403');
  });

  it('stops trying at the call\'s deadline', async () => {
    server.answers = [409];
    server.upgrades = 0;
    const r = await podExec({ ...execOptions(server.kubeConfig()), timeoutMs: 1 });
    expect(server.upgrades).toBe(1);
    expect(r.status).toBe('degraded');
  });
});
