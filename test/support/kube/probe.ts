import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import type { Pki } from './pki.js';

/** GETs `url` as the admin (client cert, trusting the test CA); resolves the status, or 0 if unreachable. */
export function httpsStatus(url: string, pki: Pki): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, {
      ca: readFileSync(pki.ca.cert), cert: readFileSync(pki.admin.cert), key: readFileSync(pki.admin.key), timeout: 2_000,
    }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}
