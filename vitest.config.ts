import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Console output is shown only for failing tests (see the file).
    setupFiles: ["test/support/quietConsole.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
