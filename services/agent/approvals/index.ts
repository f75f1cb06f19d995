export * from './shell-words.js';
export * from './hardline.js';
export * from './dangerous.js';
export * from './globs.js';
export * from './smart.js';
export * from './guard.js';
