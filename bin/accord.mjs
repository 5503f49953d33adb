#!/usr/bin/env node
// The `accord` command of the installed package: the compiled CLI (`npm run build` writes dist/),
// so plain node runs it with no TypeScript loader.
await import("../dist/runtimes/cli/main.js")
