#!/usr/bin/env node
// The `hermes` CLI. Sources are TypeScript run through tsx's loader, so there is no build step
// between a checkout and a running system (images may still precompile).
import { register } from 'tsx/esm/api';
register();
await import('../services/cli/main.ts');
