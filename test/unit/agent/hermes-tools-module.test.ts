// The generated hermes_tools module for every tool a script may call: valid Python whose
// functions take the tools' own argument names (required first, the rest optional), terminal
// without `background`, and the bootstrap command as the sandbox's /bin/sh runs it.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BOOTSTRAP_COMMAND, hermesToolsModule, ProcessRegistry, SCRIPT_TOOLS, sandboxTools, webExtractTool, webSearchTool, type Tool } from '../../../services/agent/index.js';

const processes = new ProcessRegistry();
const all = new Map<string, Tool>([...sandboxTools(processes), webSearchTool, webExtractTool].map((t) => [t.name, t]));
processes.close();

/** The module's functions and their parameters, as Python's inspect sees them. */
function signatures(module: string): Record<string, string> {
  const probe = [
    'import importlib.util, inspect, json, sys',
    'spec = importlib.util.spec_from_loader("hermes_tools", loader=None)',
    'm = importlib.util.module_from_spec(spec)',
    'exec(sys.stdin.read(), m.__dict__)',
    'print(json.dumps({n: str(inspect.signature(getattr(m, n))) for n in m.__all__ if n != "ToolError"}))',
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', probe], { input: module, encoding: 'utf8' })) as Record<string, string>;
}

describe('hermes_tools', () => {
  it('has one function per whitelisted tool, with the tools\' argument names', () => {
    const tools = SCRIPT_TOOLS.map((n) => all.get(n)!);
    expect(tools.every(Boolean)).toBe(true);
    const sigs = signatures(hermesToolsModule(tools));
    expect(Object.keys(sigs).sort()).toEqual([...SCRIPT_TOOLS].sort());
    expect(sigs.terminal).toBe('(command, timeout=None, workdir=None, **extra)');
    expect(sigs.read_file).toBe('(path, offset=None, limit=None, **extra)');
    expect(sigs.write_file).toBe('(path, content, **extra)');
    expect(sigs.web_search).toMatch(/^\(query/);
  });

  it('the bootstrap command survives /bin/sh quoting intact', () => {
    // Print the program python would get instead of running it.
    const shown = execFileSync('/bin/sh', ['-c', BOOTSTRAP_COMMAND.replace(/^exec python3 -u -c /, 'printf %s ')], { encoding: 'utf8' });
    expect(shown).toContain("_first = json.loads(_rf.readline())");
    expect(() => execFileSync('python3', ['-c', `import ast, sys; ast.parse(sys.stdin.read())`], { input: shown })).not.toThrow();
  });
});
