// The tools that act in the session's sandbox: toolset `terminal` (terminal, process) and toolset
// `file` (read_file, write_file, patch, search_files), and `code_execution` (execute_code). Each needs ToolContext.sandbox and says so
// when it is absent (an agent whose Profile has no sandbox should not enable these toolsets);
// `terminal` also needs ToolContext.guard. The background processes live in one ProcessRegistry
// per worker process: close it at shutdown.
import type { ToolRegistry, Tool } from './registry.js';
import { ProcessRegistry } from './process-registry.js';
import { terminalTool } from './terminal.js';
import { processTool } from './process.js';
import { readFileTool } from './read-file.js';
import { writeFileTool } from './write-file.js';
import { patchTool } from './patch.js';
import { searchFilesTool } from './search-files.js';
import { executeCodeTool } from './execute-code.js';

/** Toolsets whose tools need a sandbox (a Profile without spec.sandbox should not enable them). */
export const SANDBOX_TOOLSETS: readonly string[] = ['terminal', 'file', 'code_execution'];

/** The seven sandbox tools; `terminal` and `process` share `processes`. */
export function sandboxTools(processes: ProcessRegistry): Tool[] {
  return [terminalTool(processes), processTool(processes), readFileTool, writeFileTool, patchTool, searchFilesTool, executeCodeTool];
}

/** Registers the sandbox tools on `registry` (e.g. builtinRegistry()); returns the process registry to close at shutdown. */
export function registerSandboxTools(registry: ToolRegistry, processes = new ProcessRegistry()): ProcessRegistry {
  for (const tool of sandboxTools(processes)) registry.register(tool);
  return processes;
}

export { ProcessRegistry };
export { terminalTool, NO_GUARD } from './terminal.js';
export { processTool } from './process.js';
export { readFileTool, MAX_READ_CHARS, READ_MAX_LINES } from './read-file.js';
export { writeFileTool } from './write-file.js';
export { patchTool } from './patch.js';
export { searchFilesTool } from './search-files.js';
export { executeCodeTool, capBytes, NO_CHANNEL, MAX_CODE_CHARS } from './execute-code.js';
export { CODE_EXECUTION_DEFAULTS, SCRIPT_TOOLS, type CodeExecutionLimits } from './code/limits.js';
export { BOOTSTRAP_COMMAND, SECRET_ENV_NAME, hermesToolsModule } from './code/python.js';
export { NO_SANDBOX, DEGRADED_HINT } from './sandbox-result.js';
export { unifiedDiff } from './unified-diff.js';
