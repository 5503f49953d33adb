// Run as `finish-build.mjs --begin` before `tsc -p tsconfig.build.json` and plainly after it.
//
// The stamp: `--begin` writes `dist/.build-started.pending`; the run after a successful `tsc` renames
// it to `dist/.build-started` (a rename keeps its time), so its time is when the build that produced
// dist/ began, and a failed build leaves no stamp. Tests that start entry points from dist/ use the
// build only when no source is newer than that (scripts/entrypoint.ts).
//
// After `tsc`: tsc rewrites the `.ts` extension of relative imports in the
// emitted JavaScript (`rewriteRelativeImportExtensions`) but not in the declaration files, so a
// consumer's TypeScript would look for `.ts` files the package does not ship. This rewrites every
// relative `.ts` specifier in dist/**/*.d.ts to `.js`, whose declarations sit beside it.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? walk(path) : path.endsWith(".d.ts") ? [path] : []
  })

const dist = join(process.cwd(), "dist")
const stamp = join(dist, ".build-started")

if (process.argv.includes("--begin")) {
  mkdirSync(dist, { recursive: true })
  rmSync(stamp, { force: true })
  writeFileSync(`${stamp}.pending`, "")
  process.exit(0)
}

let rewritten = 0
for (const file of walk(join(process.cwd(), "dist"))) {
  const source = readFileSync(file, "utf8")
  const next = source.replace(/(["'])(\.{1,2}\/[^"']*?)\.ts\1/g, (_, quote, path) => `${quote}${path}.js${quote}`)
  if (next !== source) {
    writeFileSync(file, next)
    rewritten++
  }
}
renameSync(`${stamp}.pending`, stamp)
console.log(`build: relative .ts specifiers rewritten to .js in ${rewritten} declaration files`)
