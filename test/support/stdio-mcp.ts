// The stdio MCP server of stdio-mcp-server.ts as one JavaScript file (bundled with esbuild, which
// the repo's tsx brings; minified, so that it fits the kubernetes sandbox's 1 MB stdin), to be
// written into a sandbox workspace: it exists only there, so a process running it can only be the
// sandbox's.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

let bundled: Promise<string> | undefined;

/** The server's source as a single ES module for node (no imports outside node's own). */
export function stdioMcpServerSource(): Promise<string> {
  bundled ??= build({
    entryPoints: [fileURLToPath(new URL('./stdio-mcp-server.ts', import.meta.url))],
    bundle: true, minify: true, platform: 'node', format: 'esm', target: 'node20', write: false, logLevel: 'silent',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  }).then((r) => r.outputFiles[0]!.text);
  return bundled;
}

/** Where tests put it in the workspace, and the command that runs it there. */
export const STDIO_SERVER_PATH = '/workspace/.stdio-mcp/server.mjs';
export const STDIO_SERVER_REL = '.stdio-mcp/server.mjs';
