export * from './messages.js';
export * from './secrets.js';
export * from './provider-factory.js';
export * from './turn.js';
export { OpenAIChatProvider } from './providers/openai.js';
