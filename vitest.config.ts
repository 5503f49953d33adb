import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Console output is shown only for failing tests (see the file).
    setupFiles: ["test/support/quietConsole.ts"],
    // Files run in parallel, the tests of a file one after another. Most slow files wait on I/O
    // (loopback HTTP, PostgreSQL, child processes), so 3 workers keep 2 cores busy; vitest's default
    // (cores - 1) runs one file at a time here, and 4 starved the CPU-bound PGlite files.
    pool: "forks",
    maxWorkers: 3,
    minWorkers: 1,
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
