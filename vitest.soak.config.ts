import { defineConfig } from "vitest/config"
import base, { soakFiles } from "./vitest.config.ts"

/**
 * `npm run test:soak`: the long soak and stress runs (`*.soak.test.ts`: many actions through
 * SIGKILLed processes), kept out of `npm test` and run by CI after it, with the same setup.
 */
export default defineConfig({ ...base, test: { ...base.test, include: [soakFiles], exclude: [] } })
