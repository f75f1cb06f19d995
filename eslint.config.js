// Lint keeps code small and dependencies pointing one way:
// cli → (operator, gateway, worker) → (agent, sandbox, platforms) → core. Nothing imports upward.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const layer = (files, forbidden) => ({
  files,
  rules: {
    'no-restricted-imports': ['error', {
      patterns: forbidden.map((f) => ({ group: [`**/${f}/**`, `**/${f}/index.js`], message: `Dependencies point down: this layer must not import ${f}.` })),
    }],
  },
});

export default tseslint.config(
  { ignores: ['node_modules/**', '.hermes/**', '.cache/**', 'dist/**', 'services/core/generated/**', 'hack/**/*.go'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      complexity: ['error', 15],
      'max-depth': ['error', 4],
      'max-params': ['error', 5],
    },
  },
  { files: ['**/*.js'], languageOptions: { globals: { process: 'readonly', console: 'readonly' } } },
  layer(['services/core/**/*.ts'], ['gateway', 'worker', 'agent', 'sandbox', 'cli', 'operator']),
  layer(['services/agent/**/*.ts', 'services/sandbox/**/*.ts'], ['gateway', 'worker', 'cli', 'operator']),
  layer(['services/platforms/**/*.ts'], ['gateway', 'worker', 'agent', 'sandbox', 'cli', 'operator']),
  layer(['services/gateway/**/*.ts', 'services/worker/**/*.ts', 'operator/**/*.ts'], ['cli']),
  { files: ['test/**/*.ts', 'bench/**/*.ts'], rules: { complexity: 'off', 'max-params': 'off' } },
);
