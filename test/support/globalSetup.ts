/**
 * vitest's global setup. Tests leave nothing in the temp directory: the run gets a directory of its
 * own under it, made the temp directory (`TMPDIR`) of every test worker and of every process a
 * test spawns (the workers inherit this process's environment), and removed with everything in it
 * when the run ends, whatever a test forgot to delete. It also holds the PGlite archives the test
 * databases start from (`pgliteArchive.ts`, loaded by `pgliteTemplate.ts`), built here once for
 * the run.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TestProject } from "vitest/node"
import { buildArchives } from "./pgliteArchive.ts"

const tempVariables = ["TMPDIR", "TMP", "TEMP"] as const

export default async function setup(project: TestProject): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), "accord-tests-"))
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
  }
}
