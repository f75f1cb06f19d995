// The kubelet's WebSocket streaming protocol for exec, as k8s.io/streaming's wsstream and the
// apiserver's stream translator speak it (k8s.io/apimachinery/pkg/util/remotecommand):
// every message starts with a channel byte — 0 stdin, 1 stdout, 2 stderr, 3 error (a JSON
// metav1.Status when the command ends), 4 resize. v5 adds 255 <channel>: the client closed that
// stream (e.g. [255, 0] = stdin EOF). The base64 variant sends text frames, '0'+channel then base64.
import type { RawData, WebSocket } from 'ws';

/** Sub-protocols the test kubelet accepts, in no particular order (the client's order wins). */
export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v4.base64.channel.k8s.io'] as const;

export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;
export const ERROR = 3;
const CLOSE = 255;

/** The first protocol the client offers that we speak (as wsstream's handshake picks it). */
export function pickProtocol(offered: Iterable<string>): string | false {
  for (const protocol of offered) if ((EXEC_PROTOCOLS as readonly string[]).includes(protocol)) return protocol;
  return false;
}

/** A received message as one Buffer: ws hands a Buffer (its default binaryType), but types it as any of its forms. */
export function bytesOf(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

/** What the client sent: data for a channel, or (v5) the close of one. */
export type Incoming = { channel: number; data: Buffer } | { closed: number };

/** One exec session's framing over a WebSocket, for the negotiated protocol. */
export class ChannelStream {
  private readonly base64: boolean;

  constructor(private readonly ws: WebSocket) {
    this.base64 = ws.protocol.includes('base64');
  }

  get supportsClose(): boolean {
    return this.ws.protocol === 'v5.channel.k8s.io';
  }

  send(channel: number, data: Buffer): void {
    if (this.base64) this.ws.send(`${String.fromCharCode(48 + channel)}${data.toString('base64')}`);
    else this.ws.send(Buffer.concat([Buffer.from([channel]), data]));
  }

  decode(data: RawData): Incoming | undefined {
    const message = bytesOf(data);
    if (message.length === 0) return undefined;
    if (this.supportsClose && message[0] === CLOSE) return message.length === 2 ? { closed: message[1] ?? -1 } : undefined;
    if (this.base64) return { channel: (message[0] ?? 0) - 48, data: Buffer.from(message.subarray(1).toString(), 'base64') };
    return { channel: message[0] ?? -1, data: message.subarray(1) };
  }

  /** Writes the final metav1.Status on the error channel, as the kubelet does when the command ends. */
  sendExit(exitCode: number): void {
    const status = exitCode === 0
      ? { metadata: {}, status: 'Success' }
      : {
        metadata: {}, status: 'Failure', reason: 'NonZeroExitCode',
        message: `command terminated with non-zero exit code: command terminated with exit code ${exitCode}`,
        details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
      };
    this.send(ERROR, Buffer.from(JSON.stringify(status)));
  }

  /** A failure that is not the command's exit code (e.g. it could not start): a Status with a message. */
  sendFailure(message: string): void {
    this.send(ERROR, Buffer.from(JSON.stringify({ metadata: {}, status: 'Failure', reason: 'InternalError', message, code: 500 })));
  }
}
