// What a client gets when Node's HTTP parser refuses its request before any route sees it (headers
// over Node's 16 KiB, a malformed request line, a request that never finished arriving): our JSON
// error, not fastify's own `{"error": "Request Header Fields Too Large", "statusCode": 431}`,
// which no client of this API expects. The answer closes the connection, as Node's does.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { HermesError, type ErrorCode } from '../core/index.js';
import { hermesErrorBody } from './errors.js';

const codeOf = (err: { code?: string }): ErrorCode =>
  err.code === 'HPE_HEADER_OVERFLOW' ? 'HERMES_HEADERS_TOO_LARGE' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'HERMES_REQUEST_TIMEOUT' : 'HERMES_BAD_HTTP';

export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const e = new HermesError(codeOf(err));
    const body = JSON.stringify(hermesErrorBody({ status: e.status, code: e.code, message: e.message, extra: {} }));
    socket.write(`HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}
