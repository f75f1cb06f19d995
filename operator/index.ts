export * from './api/common.js';
export * from './api/agent.js';
export * from './api/profile.js';
export * from './api/skill.js';
export * from './api/cronjob.js';
export * from './compile.js';
export * from './manifests.js';
export * from './texts.js';
