/**
 * The benchmarks run Accord as the container image ships it: compiled by the package's own build
 * configuration (`tsc` with `tsconfig.build.json`, which `npm run build` and the Dockerfile run), the
 * bench's harness compiled with it, not through `tsx`. `tsx` compiles with `keepNames`, which wraps
 * every named closure in a `__name` call at run time; tsc's output has none of that, and its CPU per
 * event is the one a deployment pays.
 *
 * `BENCH_TSX=1` keeps the old way (every entry through `node --import tsx`), for a same-run
 * comparison.
 *
 * Every Node process a benchmark starts, Accord's and the references' alike, runs with the node
 * flags of the image's `CMD` (`imageNodeFlags`, added where each is spawned); `BENCH_IMAGE_FLAGS=0`
 * leaves them out.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const root = join(import.meta.dirname, "..")

/**
 * The node flags of the Dockerfile's exec-form `CMD` (between `node` and the entry); none with
 * `BENCH_IMAGE_FLAGS=0`.
 */
export const imageNodeFlags = (): ReadonlyArray<string> => (imageFlags ??= readImageNodeFlags())
let imageFlags: ReadonlyArray<string> | undefined
const readImageNodeFlags = (): ReadonlyArray<string> => {
  if (process.env["BENCH_IMAGE_FLAGS"] === "0") return []
  // A compiled bench runs from its build directory: its parent passes the flags on.
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
  /** The build directory (undefined with `BENCH_TSX=1`). */
  readonly dir?: string | undefined
  readonly label: string
  readonly dispose: () => void
}

/**
 * Compiles `entries` (paths from the repository root, `.ts`) and what they import once into a
 * temporary directory, with `tsconfig.build.json`'s options, and answers the `node` arguments that
 * run each one.
 */
export const build = (entries: ReadonlyArray<string>): Entries => {
  if (process.env["BENCH_TSX"] === "1") {
    return { args: (entry) => ["--import", "tsx", entry], label: "tsx", dispose: () => {} }
  }
  // Inside the repository, so the output resolves its packages from its node_modules. The build's
  // options, these entries only (tsc follows their imports); no declarations.
  const outdir = mkdtempSync(join(root, ".bench-build-"))
  const config = join(outdir, "tsconfig.json")
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(root, "tsconfig.build.json"),
      compilerOptions: { rootDir: root, outDir: outdir, declaration: false },
      include: [],
      files: entries.map((entry) => join(root, entry))
    })
  )
  execFileSync(join(root, "node_modules/.bin/tsc"), ["-p", config], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"]
  })
  return {
    args: (entry) => {
      if (!entries.includes(entry)) throw new Error(`${entry} was not compiled`)
      return [join(outdir, entry.replace(/\.ts$/, ".js"))]
    },
    dir: outdir,
    label: "built as in the image",
    dispose: () => rmSync(outdir, { recursive: true, force: true })
  }
}

/**
 * For a benchmark that runs Accord in its own process (`bench:dispatch`): unless it already runs
 * compiled (`BENCH_BUILD_DIR` set) or `BENCH_TSX=1`, compiles `self` and `children`, runs the
 * compiled `self` in a child `node` with `BENCH_BUILD_DIR` set, and exits with its code. Returns
 * the `node` arguments for a child entry otherwise.
 */
export const runBuilt = (self: string, children: ReadonlyArray<string>): ((entry: string) => ReadonlyArray<string>) => {
  const dir = process.env["BENCH_BUILD_DIR"]
  if (dir !== undefined) return (entry) => [join(dir, entry.replace(/\.ts$/, ".js"))]
  // Bun and Deno run TypeScript themselves (no tsx, no `keepNames`): they run the sources.
  if ("Bun" in globalThis || "Deno" in globalThis) return (entry) => ["--import", "tsx", entry]
  const entries = build([self, ...children])
  if (entries.dir === undefined) return entries.args // BENCH_TSX=1
  // `BENCH_SELF_CPU_PROF=dir`: the compiled bench process itself runs under `--cpu-prof`.
  const profile = process.env["BENCH_SELF_CPU_PROF"]
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env["BENCH_SELF_CPU_PROF"]}`]
    : []
  // Node flags the bench was started with (`--expose-gc`), without the tsx loader: `node --import
  // tsx` passes `--import tsx`, the `tsx` command `--require …/tsx/dist/preflight.cjs --import
  // file:///…/tsx/dist/loader.mjs`. Left in, the compiled process would run tsx's module hooks (a
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
    env: { ...process.env, BENCH_BUILD_DIR: entries.dir, BENCH_IMAGE_NODE_FLAGS: JSON.stringify(imageNodeFlags()) }
  })
  // A profile's positions are in the build: keep a copy of it beside the profile.
  if (profile.length > 0) cpSync(entries.dir, join(process.env["BENCH_SELF_CPU_PROF"]!, "build"), { recursive: true })
  entries.dispose()
  process.exit(run.status ?? 1)
}
