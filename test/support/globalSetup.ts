/**
 * vitest's global setup. Tests leave nothing in the temp directory: the run gets a directory of its
 * own under it, made the temp directory (`TMPDIR`) of every test worker and of every process a
 * test spawns (the workers inherit this process's environment), and removed with everything in it
 * when the run ends, whatever a test forgot to delete. It also holds the PGlite archives the test
 * databases start from (`pgliteArchive.ts`, loaded by `pgliteTemplate.ts`), built here once for
 * the run. A process that ignores `TMPDIR` (a spawn with an environment of its own, a hard-coded
 * path) would still write to the system temp directory: the run fails when an `accord-` entry
 * appeared there while it ran (`accord-tests-` directories are runs of their own), naming them.
 */
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TestProject } from "vitest/node"
import { buildArchives } from "./pgliteArchive.ts"

const tempVariables = ["TMPDIR", "TMP", "TEMP"] as const

/** The `accord-` entries of `dir` (a run's own `accord-tests-` directory aside), by name. */
export const accordEntries = (dir: string): ReadonlySet<string> =>
  new Set(readdirSync(dir).filter((name) => name.startsWith("accord-") && !name.startsWith("accord-tests-")))

/** Entries of `dir` named as tests name theirs that are not in `before` and changed since `since`. */
export const leftovers = (dir: string, before: ReadonlySet<string>, since: number): ReadonlyArray<string> =>
  [...accordEntries(dir)].filter((name) => {
    if (before.has(name)) return false
    try {
      return statSync(join(dir, name)).mtimeMs >= since
    } catch {
      return false
    }
  })

export default async function setup(project: TestProject): Promise<() => void> {
  const systemTemp = tmpdir()
  const started = Date.now() - 1000
  const before = accordEntries(systemTemp)
  const dir = mkdtempSync(join(systemTemp, "accord-tests-"))
  const saved = tempVariables.map((name) => [name, process.env[name]] as const)
  for (const name of tempVariables) process.env[name] = dir
  const archives = await buildArchives()
  const paths = { empty: join(dir, "pglite-empty.tar"), migrated: join(dir, "pglite-migrated.tar") }
  writeFileSync(paths.empty, archives.empty)
  writeFileSync(paths.migrated, archives.migrated)
  project.provide("pgliteArchives", paths)
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
    rmSync(dir, { recursive: true, force: true })
    const left = leftovers(systemTemp, before, started)
    if (left.length > 0)
      throw new Error(
        `tests left ${left.length} entries in the system temp directory ${systemTemp} (write under os.tmpdir() and pass TMPDIR on): ${left.join(", ")}`
      )
  }
}
