import { fileURLToPath } from "node:url"
import { configDefaults, defineConfig } from "vitest/config"
import SlowFirstSequencer from "./test/support/slowFirstSequencer.ts"

/** The long soak and stress runs: `npm run test:soak` (vitest.soak.config.ts), not `npm test`. */
export const soakFiles = "test/**/*.soak.test.ts"

export default defineConfig({
  // The package's own entry points (`accord/memory`, `accord/testing`, …) from source, as tsconfig's
  // `paths` maps them; the packed build is tested by test/package/Embedding.test.ts.
  resolve: {
    alias: [{ find: /^accord\/(.+)$/, replacement: fileURLToPath(new URL("./entry/$1.ts", import.meta.url)) }]
  },
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, soakFiles],
    // One line per passing file; failures in full.
    reporters: ["./test/support/quietReporter.ts"],
    // Console output is shown only for failing tests (see the file).
    setupFiles: ["test/support/quietConsole.ts", "test/support/resetEffectVitest.ts"],
    // Builds the migrated PGlite archive every PGlite test store starts from, once per run.
    globalSetup: ["test/support/globalSetup.ts"],
    // Files run in parallel, the tests of a file one after another. Most slow files wait on I/O
    // (loopback HTTP, PostgreSQL, child processes), so 3 workers keep 2 cores busy; vitest's default
    // (cores - 1) runs one file at a time here, and 4 starved the CPU-bound PGlite files.
    pool: "forks",
    maxWorkers: 3,
    // The same number of workers for the whole run: tinypool ends a worker that falls idle above
    // minWorkers and can end it twice, and the second end rejects a teardown nobody awaits, which
    // fails the run after every test passed.
    minWorkers: 3,
    // A worker runs many files, one after another, in one module graph: each file starts with fresh
    // testers (test/support/resetEffectVitest.ts), and a file restores any process state it changes.
    // Isolating each file in a new process costs its imports again: test/core took 426 s of CPU
    // isolated and 52 s shared, for its 74 files.
    isolate: false,
    sequence: { sequencer: SlowFirstSequencer },
    // A test's own bound is its assertion; this only ends a hung one. PGlite files under a loaded
    // machine (other test workers, PostgreSQL) took 30–40 s for tests that take 4–5 s alone.
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
