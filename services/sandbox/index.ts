// Sandbox backends: where terminal and file tools run (ARCHITECTURE §6).
export * from './types.js';
export * from './output.js';
export { bubblewrapSandbox, bubblewrapSandboxFromConfig, type BubblewrapOptions, type BubblewrapAllowlist } from './bubblewrap.js';
export type { SandboxLimits } from './bubblewrap-args.js';
export { workspaceDir, ensureWorkspaceDir } from './workspace-dir.js';
