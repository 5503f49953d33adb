/**
 * The benchmarks run Accord as the container image ships it: bundled by the Dockerfile's own
 * esbuild command (its `RUN … esbuild …` line, the same flags and externals), not through `tsx`.
 * `tsx` compiles with `keepNames`, which wraps every named closure in a `__name` call at run time;
 * the bundle has none of that, and its CPU per event is the one a deployment pays.
 *
 * `BENCH_TSX=1` keeps the old way (every entry through `node --import tsx`), for a same-run
 * comparison.
 *
 * Every Node process a benchmark starts, Accord's and the references' alike, runs with the node
 * flags of the image's `CMD` (`imageNodeFlags`, added where each is spawned); `BENCH_IMAGE_FLAGS=0`
 * leaves them out.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"

const root = join(import.meta.dirname, "..")

/** The Dockerfile's esbuild command line, split into its words (entry points and `--outdir` left out). */
const dockerfileFlags = (): ReadonlyArray<string> => {
  const line = readFileSync(join(root, "Dockerfile"), "utf8")
    .split("\n")
    .find((l) => /^RUN\s+\S*esbuild\s/.test(l))
  if (line === undefined) throw new Error("Dockerfile: no RUN line runs esbuild")
  return line
    .replace(/^RUN\s+\S*esbuild\s+/, "")
    .split(/\s+/)
    .filter((word) => word.startsWith("--") && !word.startsWith("--outdir="))
}

/**
 * The node flags of the Dockerfile's exec-form `CMD` (between `node` and the entry); none with
 * `BENCH_IMAGE_FLAGS=0`.
 */
export const imageNodeFlags = (): ReadonlyArray<string> => (imageFlags ??= readImageNodeFlags())
let imageFlags: ReadonlyArray<string> | undefined
const readImageNodeFlags = (): ReadonlyArray<string> => {
  if (process.env["BENCH_IMAGE_FLAGS"] === "0") return []
  // A bundled bench runs from the bundle's directory: its parent passes the flags on.
  const passed = process.env["BENCH_IMAGE_NODE_FLAGS"]
  if (passed !== undefined) return JSON.parse(passed) as Array<string>
  const line = readFileSync(join(root, "Dockerfile"), "utf8")
    .split("\n")
    .find((l) => /^CMD\s+\[/.test(l))
  if (line === undefined) throw new Error("Dockerfile: no exec-form CMD")
  const argv = JSON.parse(line.replace(/^CMD\s+/, "")) as Array<string>
  return argv.slice(1, -1).filter((arg) => arg.startsWith("--"))
}

/** How to start one entry point: `node` arguments. */
export interface Entries {
  readonly args: (entry: string) => ReadonlyArray<string>
  /** The bundles' directory (undefined with `BENCH_TSX=1`). */
  readonly dir?: string | undefined
  readonly label: string
  readonly dispose: () => void
}

/**
 * Bundles `entries` (paths from the repository root, `.ts`) once into a temporary directory and
 * answers the `node` arguments that run each one.
 */
export const bundle = (entries: ReadonlyArray<string>): Entries => {
  if (process.env["BENCH_TSX"] === "1") {
    return { args: (entry) => ["--import", "tsx", entry], label: "tsx", dispose: () => {} }
  }
  // Inside the repository, so the bundles resolve their external packages from its node_modules.
  const outdir = mkdtempSync(join(root, ".bench-bundle-"))
  execFileSync(
    join(root, "node_modules/.bin/esbuild"),
    [...entries, ...dockerfileFlags(), "--outbase=.", `--outdir=${outdir}`, "--log-level=warning"],
    {
      cwd: root,
      stdio: ["ignore", "inherit", "inherit"]
    }
  )
  return {
    args: (entry) => {
      if (!entries.includes(entry)) throw new Error(`${entry} was not bundled`)
      return [join(outdir, entry.replace(/\.ts$/, ".js"))]
    },
    dir: outdir,
    label: "bundled as in the image",
    dispose: () => rmSync(outdir, { recursive: true, force: true })
  }
}

/**
 * For a benchmark that runs Accord in its own process (`bench:dispatch`): unless it already runs
 * bundled (`BENCH_BUNDLE_DIR` set) or `BENCH_TSX=1`, bundles `self` and `children`, runs the
 * bundled `self` in a child `node` with `BENCH_BUNDLE_DIR` set, and exits with its code. Returns
 * the `node` arguments for a child entry otherwise.
 */
export const runBundled = (
  self: string,
  children: ReadonlyArray<string>
): ((entry: string) => ReadonlyArray<string>) => {
  const dir = process.env["BENCH_BUNDLE_DIR"]
  if (dir !== undefined) return (entry) => [join(dir, entry.replace(/\.ts$/, ".js"))]
  // Bun and Deno run TypeScript themselves (no tsx, no `keepNames`): they run the sources.
  if ("Bun" in globalThis || "Deno" in globalThis) return (entry) => ["--import", "tsx", entry]
  const entries = bundle([self, ...children])
  if (entries.dir === undefined) return entries.args // BENCH_TSX=1
  // `BENCH_SELF_CPU_PROF=dir`: the bundled bench process itself runs under `--cpu-prof`.
  const profile = process.env["BENCH_SELF_CPU_PROF"]
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env["BENCH_SELF_CPU_PROF"]}`]
    : []
  // Node flags the bench was started with (`--expose-gc`), without the tsx loader: `node --import
  // tsx` passes `--import tsx`, the `tsx` command `--require …/tsx/dist/preflight.cjs --import
  // file:///…/tsx/dist/loader.mjs`. Left in, the bundled process would run tsx's module hooks (a
  // loader thread) and its source-map support, which the image does not.
  const isTsx = (arg: string | undefined) => arg !== undefined && (arg === "tsx" || /[\\/]tsx[\\/]dist[\\/]/.test(arg))
  const loaderFlag = (arg: string | undefined) => arg === "--import" || arg === "--require" || arg === "--loader"
  const joinedTsx = (arg: string) => /^--(import|require|loader)=/.test(arg) && isTsx(arg.slice(arg.indexOf("=") + 1))
  const flags = process.execArgv.filter(
    (arg, i, all) =>
      !(loaderFlag(arg) && isTsx(all[i + 1])) && !(isTsx(arg) && loaderFlag(all[i - 1])) && !joinedTsx(arg)
  )
  const run = spawnSync(process.execPath, [...flags, ...imageNodeFlags(), ...profile, ...entries.args(self)], {
    stdio: "inherit",
    env: { ...process.env, BENCH_BUNDLE_DIR: entries.dir, BENCH_IMAGE_NODE_FLAGS: JSON.stringify(imageNodeFlags()) }
  })
  // A profile's positions are in the bundle: keep a copy of it beside the profile.
  if (profile.length > 0) cpSync(entries.dir, join(process.env["BENCH_SELF_CPU_PROF"]!, "bundle"), { recursive: true })
  entries.dispose()
  process.exit(run.status ?? 1)
}
