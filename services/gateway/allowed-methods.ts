// The methods each path serves, for the not-found handler: a known path asked with another method
// is a 405 naming them in `Allow` (RFC 9110 §15.5.6), not "no such route"; OPTIONS on a known path
// answers 204 with `Allow`.
import type { FastifyInstance } from 'fastify';

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Records every route as it is added (call before registering routes); returns the lookup. */
export function recordAllowedMethods(app: FastifyInstance): (path: string) => string[] {
  const routes: { pattern: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    // Our routes use whole-segment parameters only (`/v1/runs/:id/stop`).
    const pattern = new RegExp(`^${route.url.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : escapeRegExp(part))).join('/')}$`);
    routes.push({ pattern, methods: [route.method].flat().map(String) });
  });
  return (path) => [...new Set(routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods))].sort();
}
