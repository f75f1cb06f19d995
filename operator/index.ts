export * from './api/common.js';
export * from './api/agent.js';
export * from './api/profile.js';
export * from './compile.js';
export * from './manifests.js';
