// The Kanban board (issue 15, docs/kanban.md): ledger functions, the dispatcher and its loop.
export * from './types.js';
export * from './boards.js';
export * from './tasks.js';
export * from './lifecycle.js';
export * from './prompt.js';
export * from './dispatcher.js';
export * from './dispatcher-loop.js';
