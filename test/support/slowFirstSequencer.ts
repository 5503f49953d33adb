/**
 * The order files start in. The suite's wall time is set by its longest files: one that starts last
 * runs alone at the end while the other workers idle. vitest orders files by their duration in its
 * cache (`node_modules/.vite`), which a clean clone (CI) does not have; it then falls back to file
 * size, which puts the short files that start servers and child processes (the longest ones) last.
 * Without a full cache this starts first the files that start child processes, then those on a real
 * database, each group in vitest's own order.
 */
import { readFileSync } from "node:fs"
import { relative } from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/** Higher starts earlier: child processes take seconds each, a real database's setup next. */
const weight = (file: string): number => {
  const source = readFileSync(file, "utf8")
  return (
    (source.includes("node:child_process") ? 2 : 0) +
    (/postgres|pglite|chromium/i.test(file + source.slice(0, 4000)) ? 1 : 0)
  )
}

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const cache = this.ctx.cache
    const known = files.every((spec) =>
      cache.getFileTestResults(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`)
    )
    if (known) return sorted
    const weights = new Map(sorted.map((spec) => [spec, weight(spec.moduleId)]))
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => weights.get(b.spec)! - weights.get(a.spec)! || a.index - b.index)
      .map(({ spec }) => spec)
  }
}
