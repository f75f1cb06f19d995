import { defineConfig } from 'vitest/config';

// Integration tests talk to real Postgres, Redis and a real kube-apiserver; each test isolates
// itself (fresh schema / queue prefix / namespace), so files may run in parallel. The global
// setup builds the kube test plane when selected files need it and reaps its processes (see
// docs/harness.md).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/globalSetup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
