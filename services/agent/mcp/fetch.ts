// The fetch every MCP transport request goes through: the URL checked by the SSRF guard, the
// address checked again at connect (the guard's dispatcher, which also closes DNS rebinding), and
// redirects never followed here (the SDK follows same-origin ones through this fetch again).
import { fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { refusalIn, type UrlGuard } from '../web/ssrf.js';

export function guardedMcpFetch(guard: UrlGuard): FetchLike {
  return async (url, init) => {
    const checked = guard.checkUrl(String(url));
    try {
      const res = await undiciFetch(checked, { ...(init as UndiciRequestInit), redirect: 'manual', dispatcher: guard.dispatcher });
      return res as unknown as Response;
    } catch (err) {
      throw refusalIn(err, checked.toString()) ?? err;
    }
  };
}
