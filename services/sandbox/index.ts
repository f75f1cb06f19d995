// Sandbox backends: where terminal and file tools run (ARCHITECTURE §6).
export * from './types.js';
export * from './output.js';
