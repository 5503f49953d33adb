/**
 * vitest's global setup. Tests leave nothing in the temp directory: the run gets a directory of its
 * own under it, made the temp directory (`TMPDIR`) of every test worker and of every process a
 * test spawns (the workers inherit this process's environment), and removed with everything in it
 * when the run ends, whatever a test forgot to delete. It also holds the PGlite archives the test
 * databases start from (`pgliteArchive.ts`, loaded by `pgliteTemplate.ts`), built here once for
 * the run. A process that ignores `TMPDIR` (a spawn with an environment of its own, a hard-coded
 * path) would still write to the system temp directory: the run fails when an entry named as the
 * tests name theirs (an `accord-…-` prefix written in test/, see `testPrefixes`) appeared there
 * while it ran, naming them. Other names are left alone: on a shared machine other work writes
 * there too, and `accord-tests-` directories are runs of their own.
 * Without `DATABASE_URL` it says once for the run that the PostgreSQL suites are skipped.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { TestProject } from "vitest/node"
import { buildArchives } from "./pgliteArchive.ts"
import { dropRunSchemas, noticeForRun, noticeSaidVariable, runVariable } from "./postgres.ts"

const tempVariables = ["TMPDIR", "TMP", "TEMP"] as const
const setVariables = [...tempVariables, noticeSaidVariable] as const

const testsDir = fileURLToPath(new URL("..", import.meta.url))

/** The temp-name prefixes written in the test sources (`"accord-cli-"`, …), the run's own aside. */
export const testPrefixes = (dir: string = testsDir): ReadonlySet<string> => {
  const prefixes = new Set<string>()
  for (const entry of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    if (!entry.endsWith(".ts")) continue
    for (const match of readFileSync(join(dir, entry), "utf8").matchAll(/["'`](accord-[A-Za-z0-9_-]*-)/g))
      if (match[1] !== "accord-tests-") prefixes.add(match[1]!)
  }
  return prefixes
}

/** The entries of `dir` whose names start with one of `prefixes`. */
export const entriesNamed = (dir: string, prefixes: ReadonlySet<string>): ReadonlySet<string> =>
  new Set(readdirSync(dir).filter((name) => [...prefixes].some((prefix) => name.startsWith(prefix))))

/** Entries of `dir` named with `prefixes` that are not in `before` and changed since `since`. */
export const leftovers = (
  dir: string,
  prefixes: ReadonlySet<string>,
  before: ReadonlySet<string>,
  since: number
): ReadonlyArray<string> =>
  [...entriesNamed(dir, prefixes)].filter((name) => {
    if (before.has(name)) return false
    try {
      return statSync(join(dir, name)).mtimeMs >= since
    } catch {
      return false
    }
  })

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const systemTemp = tmpdir()
  const started = Date.now() - 1000
  const prefixes = testPrefixes()
  const before = entriesNamed(systemTemp, prefixes)
  const dir = mkdtempSync(join(systemTemp, "accord-tests-"))
  const saved = setVariables.map((name) => [name, process.env[name]] as const)
  for (const name of tempVariables) process.env[name] = dir
  noticeForRun()
  process.env[runVariable] = randomUUID().replaceAll("-", "").slice(0, 8)
  const archives = await buildArchives()
  const paths = { empty: join(dir, "pglite-empty.tar"), migrated: join(dir, "pglite-migrated.tar") }
  writeFileSync(paths.empty, archives.empty)
  writeFileSync(paths.migrated, archives.migrated)
  project.provide("pgliteArchives", paths)
  return async () => {
    await dropRunSchemas()
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
    rmSync(dir, { recursive: true, force: true })
    const left = leftovers(systemTemp, prefixes, before, started)
    if (left.length > 0)
      throw new Error(
        `tests left ${left.length} entries in the system temp directory ${systemTemp} (write under os.tmpdir() and pass TMPDIR on): ${left.join(", ")}`
      )
  }
}
