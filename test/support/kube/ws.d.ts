// The part of `ws` (8.x, hoisted into node_modules by @kubernetes/client-node) the test kubelet
// uses; @types/ws is not installed.
declare module 'ws' {
  import type { IncomingMessage } from 'node:http';
  import type { Duplex } from 'node:stream';
  import { EventEmitter } from 'node:events';

  export class WebSocket extends EventEmitter {
    constructor(address: string, protocols?: string[], options?: object);
    readonly protocol: string;
    readonly readyState: number;
    send(data: Buffer | string, cb?: (err?: Error) => void): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    on(event: 'message', listener: (data: Buffer, isBinary: boolean) => void): this;
    on(event: 'close', listener: (code: number, reason: Buffer) => void): this;
    on(event: 'error', listener: (err: Error) => void): this;
  }

  export interface ServerOptions {
    noServer?: boolean;
    handleProtocols?: (protocols: Set<string>, req: IncomingMessage) => string | false;
  }

  export class WebSocketServer extends EventEmitter {
    constructor(options: ServerOptions);
    readonly clients: Set<WebSocket>;
    handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, cb: (ws: WebSocket, req: IncomingMessage) => void): void;
    close(cb?: () => void): void;
  }
}
