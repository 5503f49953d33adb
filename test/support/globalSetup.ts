/**
 * vitest's global setup: builds the migrated PGlite archive (`pgliteArchive.ts`, loaded by `pgliteTemplate.ts`) once for the run
 * and removes it when the run ends, so tests leave nothing in the temp directory.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TestProject } from "vitest/node"
import { buildTemplate } from "./pgliteArchive.ts"

export default async function setup(project: TestProject): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), "accord-pglite-template-"))
  const path = join(dir, "migrated.tar")
  writeFileSync(path, await buildTemplate())
  project.provide("pgliteTemplate", path)
  return () => rmSync(dir, { recursive: true, force: true })
}
