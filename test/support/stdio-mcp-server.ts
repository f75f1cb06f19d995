// A real MCP stdio server built with the SDK (StdioServerTransport), bundled into one file that is
// put into a sandbox's workspace and run there by node (stdio-mcp.ts). Its tools: echo; where
// (what the process sees of itself: pid, hostname, cwd, the parent's command line, its own
// environment's HERMES_TEST_TOKEN); crash (writes to stderr, exits 3); leak (fails with the token
// in its error text). Each start appends a line to /workspace/.stdio-mcp/starts.
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

mkdirSync('/workspace/.stdio-mcp', { recursive: true });
appendFileSync('/workspace/.stdio-mcp/starts', `${process.pid}\n`);

const server = new McpServer({ name: 'stdio-fake', version: '1.0.0' });
const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
server.registerTool('echo', { description: 'Echoes text', inputSchema: { text: z.string() } }, ({ text: t }) => text(`echo: ${t}`));
server.registerTool('where', { description: 'Where the server runs' }, () => text(JSON.stringify({
  pid: process.pid, hostname: hostname(), cwd: process.cwd(), argv1: process.argv[1],
  token: process.env.HERMES_TEST_TOKEN ?? null, home: process.env.HOME ?? null,
  workerEnv: Object.keys(process.env).filter((k) => k.startsWith('HERMES_') && k !== 'HERMES_TEST_TOKEN'),
  init: readFileSync('/proc/1/cmdline', 'utf8').split('\0').join(' ').trim(),
})));
server.registerTool('crash', { description: 'Exits the process' }, () => {
  process.stderr.write('stdio-fake: crashing on request\n');
  process.exit(3);
});
server.registerTool('leak', { description: 'Fails with its token' }, () => ({ isError: true, content: [{ type: 'text' as const, text: `bad token ${process.env.HERMES_TEST_TOKEN ?? ''}` }] }));

await server.connect(new StdioServerTransport());
