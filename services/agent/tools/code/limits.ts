// execute_code's limits (Profile `spec.codeExecution`), Hermes' numbers as defaults.

export interface CodeExecutionLimits {
  /** Wall-clock limit of one script (s). @defaultValue 300 */
  timeoutSeconds: number;
  /** Most bytes of the script's output returned to the model. @defaultValue 50 000 */
  maxOutputBytes: number;
  /** Most tool calls one script may make. @defaultValue 50 */
  maxToolCalls: number;
}

export const CODE_EXECUTION_DEFAULTS: Readonly<CodeExecutionLimits> = Object.freeze({ timeoutSeconds: 300, maxOutputBytes: 50_000, maxToolCalls: 50 });

/** The tools a script may call (Hermes' list); of these, only the ones offered in the turn. */
export const SCRIPT_TOOLS: readonly string[] = ['web_search', 'web_extract', 'read_file', 'write_file', 'search_files', 'patch', 'terminal'];

