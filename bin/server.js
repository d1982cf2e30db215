#!/usr/bin/env node
// npm bin for the server: runs the TypeScript source through tsx.
import { register } from 'tsx/esm/api';
register();
await import('../src/main.ts');
