import { defineConfig } from 'vitest/config';

// Integration tests talk to real Postgres, Redis and (later) a real kube-apiserver; each test
// isolates itself (fresh schema / queue prefix / namespace), so files may run in parallel.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
