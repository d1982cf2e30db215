#!/usr/bin/env node
// npm bin for the models tool: runs the TypeScript source through tsx.
import { register } from 'tsx/esm/api';
register();
process.argv[1] = new URL('../src/cli/models.ts', import.meta.url).pathname;
await import('../src/cli/models.ts');
