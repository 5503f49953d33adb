#!/usr/bin/env node
// The `accord` command of the installed package: loads the TypeScript entry through tsx's API,
// since the package ships its TypeScript sources (tsx must then be installed alongside).
import { register } from "tsx/esm/api"

register()
await import("../runtimes/cli/main.ts")
