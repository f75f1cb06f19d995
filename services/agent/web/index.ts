export * from './access.js';
export * from './convert.js';
export * from './extract.js';
export * from './fetch.js';
export * from './search.js';
export * from './ssrf.js';
