export * from './breaker.js';
export * from './connection.js';
export * from './fetch.js';
export * from './names.js';
export * from './pool.js';
export * from './redact.js';
export * from './result.js';
export * from './tools.js';
