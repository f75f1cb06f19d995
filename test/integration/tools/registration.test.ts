// The sandbox tools as the model sees them: registered beside the built-ins, in toolsets
// `terminal`, `file` and `code_execution`, with Hermes' names and argument names.
import { describe, expect, it } from 'vitest';
import { builtinRegistry, registerSandboxTools, SANDBOX_TOOLSETS, toolSpec } from '../../../services/agent/index.js';

const props = (name: string, registry: ReturnType<typeof builtinRegistry>) => Object.keys((toolSpec(registry.get(name)!).parameters as { properties: object }).properties).sort();

describe('registerSandboxTools', () => {
  it('adds terminal and process (toolset terminal) and the four file tools (toolset file)', () => {
    const registry = builtinRegistry();
    const processes = registerSandboxTools(registry);
    try {
      expect(registry.select(['terminal']).map((t) => t.name)).toEqual(['process', 'terminal']);
      expect(registry.select(['file']).map((t) => t.name)).toEqual(['patch', 'read_file', 'search_files', 'write_file']);
      expect(registry.select(['code_execution']).map((t) => t.name)).toEqual(['execute_code']);
      expect(registry.select(['clock']).map((t) => t.name)).toEqual(['get_time']);
      expect(SANDBOX_TOOLSETS).toEqual(['terminal', 'file', 'code_execution']);
    } finally {
      processes.close();
    }
  });

  it("uses Hermes' argument names", () => {
    const registry = builtinRegistry();
    registerSandboxTools(registry).close();
    expect(props('terminal', registry)).toEqual(['background', 'command', 'timeout', 'workdir']);
    expect(props('process', registry)).toEqual(['action', 'limit', 'offset', 'session_id', 'timeout']);
    expect(props('read_file', registry)).toEqual(['limit', 'offset', 'path']);
    expect(props('write_file', registry)).toEqual(['content', 'path']);
    expect(props('patch', registry)).toEqual(['mode', 'new_string', 'old_string', 'patch', 'path', 'replace_all']);
    expect(props('search_files', registry)).toEqual(['context', 'file_glob', 'limit', 'offset', 'output_mode', 'path', 'pattern', 'target']);
    expect(props('todo', registry)).toEqual(['merge', 'todos']);
    expect(props('execute_code', registry)).toEqual(['code']);
  });
});
