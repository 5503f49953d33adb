import { defineConfig } from "vitest/config"
import base, { soakFiles } from "./vitest.config.ts"

/**
 * `npm run test:soak`: the long soak and stress runs (`*.soak.test.ts`: many actions through
 * SIGKILLed processes), kept out of `npm test` and run by CI after it, with the same setup. Each runs
 * in a process of its own: there are few of them and each kills and restarts processes for minutes.
 */
export default defineConfig({
  ...base,
  test: { ...base.test, include: [soakFiles], exclude: [], isolate: true, minWorkers: 1 }
})
