/**
 * For the demo and the tests that run one of the repository's TypeScript entry points in a child
 * process: the `node` arguments that run it. A process started from the build (`dist/`) loads in a
 * fraction of the CPU of one started through the tsx loader, and the test suite starts dozens, so the
 * build is used when it is at least as new as every source file it is built from (`npm test` builds
 * before it runs the suite); otherwise (a source edited since the last build, or no build) the source
 * runs through tsx, so nothing ever runs stale code.
 */
import { existsSync, readdirSync, statSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

/** The directories `tsconfig.build.json` compiles into `dist/`, and the files that shape the build. */
const built = ["core", "adapters", "runtimes", "entry", "examples/customer-backend"]
const buildInputs = ["tsconfig.json", "tsconfig.build.json"]

const newestSource = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return Math.max(newest, newestSource(path))
    return entry.name.endsWith(".ts") ? Math.max(newest, statSync(path).mtimeMs) : newest
  }, 0)

let buildIsFresh: boolean | undefined

/**
 * Whether `dist/` holds a build at least as new as every source it compiles (checked once per
 * process): no source, and neither tsconfig, changed after the last successful build began (the stamp
 * `scripts/finish-build.mjs` leaves in dist/).
 */
const distIsFresh = (): boolean => {
  if (buildIsFresh !== undefined) return buildIsFresh
  const stamp = join(root, "dist", ".build-started")
  if (!existsSync(stamp)) return (buildIsFresh = false)
  const startedAt = statSync(stamp).mtimeMs
  const newest = Math.max(
    ...built.map((dir) => newestSource(join(root, dir))),
    ...buildInputs.map((file) => statSync(join(root, file)).mtimeMs)
  )
  return (buildIsFresh = newest <= startedAt)
}

/**
 * `node` arguments that run `source` (absolute, or relative to the repository root, e.g.
 * `"runtimes/node/main.ts"`): `dist/<source>.js` when the build is fresh, else the source through tsx.
 * Modules outside the build (test helpers) always run through tsx. The paths are absolute, so the
 * child may run in any directory.
 */
export const nodeArgs = (source: string): ReadonlyArray<string> => {
  const path = relative(root, resolve(root, source))
  const inBuild = built.some((dir) => path.startsWith(`${dir}/`))
  return inBuild && distIsFresh()
    ? [join(root, "dist", path.replace(/\.ts$/, ".js"))]
    : ["--import", "tsx", join(root, path)]
}
