// The fetch every MCP transport request goes through: the URL checked by the SSRF guard, the
// address checked again at connect (the guard's dispatcher, which also closes DNS rebinding), and
// redirects never followed here (the SDK follows same-origin ones through this fetch again).
// Answers are read up to a byte limit: the SDK buffers a JSON answer whole, and an SSE event until
// its blank line, before the 50 000-character result cap applies, so a server streaming hundreds
// of megabytes would otherwise take the worker's memory. A JSON answer is cut off past the limit,
// an event stream at an event longer than it; the request then fails with that reason.
import { fetch as undiciFetch, Response as UndiciResponse, type RequestInit as UndiciRequestInit } from 'undici';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { refusalIn, type UrlGuard } from '../web/ssrf.js';

/** Most bytes of one MCP answer (a JSON body, or one event of an event stream). */
export const MCP_MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/** The text of a too-large answer's error, found again in what the SDK reports of an event stream it lost. */
const TOO_LARGE = /the MCP server's answer is larger than [\d,]+ bytes( \(one event\))?; answers are read up to that size/;

/** The too-large reason in an error the transport reported, or undefined. */
export function answerTooLarge(message: string): string | undefined {
  return TOO_LARGE.exec(message)?.[0];
}

const LF = 10;
const CR = 13;

/** Counts the bytes of a body (of each event, for an event stream) and fails it past `maxBytes`. */
function capped(maxBytes: number, eventStream: boolean): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  let prev = -1;
  let atLineStart = true;
  const tooLarge = () => new Error(`the MCP server's answer is larger than ${maxBytes.toLocaleString('en-US')} bytes${eventStream ? ' (one event)' : ''}; answers are read up to that size`);
  return new TransformStream({
    transform(chunk, controller) {
      if (!eventStream) {
        size += chunk.byteLength;
        if (size > maxBytes) return controller.error(tooLarge());
        return controller.enqueue(chunk);
      }
      for (const b of chunk) {
        size++;
        if (b === CR || (b === LF && prev !== CR)) {
          // A line ends (CRLF counts once); an empty line ends the event.
          if (atLineStart) size = 0;
          atLineStart = true;
        } else if (b !== LF) atLineStart = false;
        prev = b;
        if (size > maxBytes) return controller.error(tooLarge());
      }
      controller.enqueue(chunk);
    },
  });
}

export function guardedMcpFetch(guard: UrlGuard, maxBytes = MCP_MAX_ANSWER_BYTES): FetchLike {
  return async (url, init) => {
    const checked = guard.checkUrl(String(url));
    let res: UndiciResponse;
    try {
      res = await undiciFetch(checked, { ...(init as UndiciRequestInit), redirect: 'manual', dispatcher: guard.dispatcher });
    } catch (err) {
      throw refusalIn(err, checked.toString()) ?? err;
    }
    if (!res.body || res.status === 204 || res.status === 205 || res.status === 304) return res as unknown as Response;
    const eventStream = /^\s*text\/event-stream/i.test(res.headers.get('content-type') ?? '');
    const body = res.body.pipeThrough(capped(maxBytes, eventStream));
    return new UndiciResponse(body, { status: res.status, statusText: res.statusText, headers: res.headers }) as unknown as Response;
  };
}
