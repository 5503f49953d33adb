/**
 * CPU per unit of a benchmark's measured phases, by process and by where it went, from the
 * kernel's own CPU sampling: `npm run bench:perf -- bench:dispatch` (or `bench:ingest`, with their
 * usual variables: `BENCH_ONLY=accord npm run bench:perf -- bench:dispatch`).
 *
 * Why not `--cpu-prof`: V8's profiler takes its samples on wall time. On this 2-core machine the
 * benchmark's processes and PostgreSQL take turns on the cores, and a process that is descheduled
 * has the time it waits charged to the frame it stopped in (most often a `writev` that woke its
 * peer): docs/decisions.md, "Where the CPU goes". `perf record -e cpu-clock` samples only what runs.
 *
 * How: the script runs with every Node process under `--perf-prof` (a jitdump, so that JIT frames
 * keep their names after V8 moves code) while `perf record -k 1 -a -g -F 999` samples every CPU
 * with call graphs; `perf inject -j` adds the JIT symbols, and `perf script` is read back. The
 * benchmark writes its measured phases (`bench/phases.ts`: label, units, pids by role, start and
 * end on `CLOCK_MONOTONIC`, the clock of `-k 1`). Per phase and role it prints CPU µs per unit and,
 * for a Node process, how that splits by the leaf-most frame that names a category (so a V8
 * builtin counts where it was called from: `JSON.stringify` in Accord's code is "JSON", an inline
 * cache miss in Effect's fiber loop is "effect runtime"). With `PERF_TOP=N` it also lists, per role,
 * the N functions of the process's own code (Accord's compiled build, a reference's script) that the most
 * samples were in: the leaf-most own frame of each sample, with what it called (node's HTTP, the
 * kernel, …), and of that the samples in its own code.
 *
 * Needs Linux `perf` (Debian's `linux-perf`) and the right to sample every CPU (root, or
 * `kernel.perf_event_paranoid` ≤ 0). What the run leaves in the directory the processes ran in
 * (the jitdumps `jit-*.dump`, the objects `perf inject` makes from them, `jitted-*.so`, and V8's
 * `isolate-*-v8.log`) is removed afterwards, and nothing is filed in perf's build-id cache. A
 * role's processes are those of the bench's own figures (bench:dispatch counts every backend of its
 * database as PostgreSQL, so give it a database of its own).
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import type { Phase } from "./phases.ts"

const samplesPerSecond = 999
const microsPerSample = 1e6 / samplesPerSecond

/** The category of a process's own code: Accord's compiled build, a reference's script. */
const ownCodeCategory = "own code (Accord, or the reference's)"

/** Categories of a Node process's samples, by frame; the first frame from the leaf that matches one decides. */
const nodeCategories: ReadonlyArray<readonly [string, RegExp]> = [
  [
    "garbage collection",
    /Scavenge|Heap::|GCTracer|MinorGC|MarkCompact|Sweeper|ConcurrentMarking|IncrementalMarking|v8::internal::Mark/
  ],
  ["kernel", /\[kernel\.kallsyms\]/],
  ["JSON", /JsonStringif|JsonParse/],
  ["crypto", /sha256|hmac|libcrypto|node::crypto|node:internal\/crypto/i],
  [
    "effect runtime",
    /effect\/dist\/esm\/internal\/(fiberRuntime|runtime|core|core-effect|fiberRefs|context|effect\/circular)\.js|effect\/dist\/esm\/Scheduler\.js/
  ],
  ["effect (Schema)", /effect\/dist\/esm\/(Schema|ParseResult|SchemaAST)\.js/],
  ["effect (other)", /effect\/dist\//],
  ["@effect packages", /@effect\//],
  ["pg driver", /node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-\w+)\//],
  ["undici", /node_modules\/undici\//],
  ["node http", /llhttp|node:_http|node::\(anonymous namespace\)::Parser/],
  [
    "node streams, net, events",
    /node:internal\/streams|node:internal\/stream_base|node:net|node:events|LibuvStreamWrap|StreamBase/
  ],
  ["autocannon", /node_modules\/autocannon\//],
  // A wasm frame counts where it was called from (PGlite's Postgres, undici's llhttp).
  ["PGlite (the embedded database)", /@electric-sql\/pglite/],
  ["other packages", /node_modules\//],
  // Accord's compiled build (the bench's own harness is compiled with it), a reference's script, tsx-run sources.
  [ownCodeCategory, /\.bench-build-|file:\/\/\/\S+\.(m?js|ts):\d/],
  ["node (other JS)", /JS:.*node:/]
]

interface Sample {
  readonly pid: number
  readonly time: number
  /** Where the sample went (`nodeCategories`); reported for Node processes only. */
  readonly category: string
  /** The leaf-most frame of the process's own code (`isOwnCode`), callees included; with `PERF_TOP` only. */
  readonly own: string | undefined
}

/** `PERF_TOP=N`: also list, per role, the N functions of its own code that the most samples were in (callees included). */
const top = Math.max(0, Math.floor(Number(process.env["PERF_TOP"] ?? 0)) || 0)
const ownCodePattern = nodeCategories.find(([name]) => name === ownCodeCategory)![1]
/** A frame of the process's own code; a package's frame is not, though a tsx-run process loads packages by `file://` URL too. */
const isOwnCode = (frame: string): boolean => ownCodePattern.test(frame) && !frame.includes("/node_modules/")

/** A frame of `perf script` (`sym (dso)`) as the function's name and where it is, without the JIT tier marks. */
const functionName = (frame: string): string =>
  frame
    .replace(/\s+\([^()]*\)$/, "")
    .replace(/^JS:[*~^+]?/, "")
    .replace(/file:\/\/\/\S*\//, "")

const categoryOf = (frames: ReadonlyArray<string>): string => {
  for (const frame of frames) {
    for (const [name, pattern] of nodeCategories) if (pattern.test(frame)) return name
  }
  return "V8 and native (not attributed)"
}

const isNodeProcess = (frames: ReadonlyArray<string>) =>
  frames.some((frame) => /\/node\)|node::|Builtins_|JS:/.test(frame))

/** The samples read back, and which of their processes run Node (their split by category is printed). */
interface Samples {
  readonly samples: ReadonlyArray<Sample>
  readonly nodePids: ReadonlySet<number>
}

const run = async () => {
  const script = process.argv[2]
  if (script === undefined) {
    console.error("usage: npm run bench:perf -- <bench script> [arguments], e.g. npm run bench:perf -- bench:dispatch")
    process.exit(2)
  }
  if (spawnSync("perf", ["--version"]).status !== 0) {
    console.error("bench:perf needs Linux perf (Debian: apt-get install linux-perf)")
    process.exit(2)
  }
  const dir = mkdtempSync(join(tmpdir(), "accord-perf-"))
  const phasesFile = join(dir, "phases.jsonl")
  const startedAt = Date.now()
  // Nothing goes to perf's build-id cache (~/.debug): `perf record -N`, and `perf inject -j`, which
  // would file a copy of every JIT object there, runs with HOME in the temporary directory.
  const perfEnv = { ...process.env, HOME: dir }
  const recorder = spawn(
    "perf",
    [
      "record",
      "-N",
      "-k",
      "1",
      "-a",
      "-g",
      "-e",
      "cpu-clock",
      "-F",
      String(samplesPerSecond),
      "-o",
      join(dir, "perf.data")
    ],
    {
      stdio: ["ignore", "ignore", "inherit"]
    }
  )
  let recorderExit: number | null | undefined
  const recorded = new Promise<void>((resolve) =>
    recorder.once("exit", (code, signal) => {
      recorderExit = code ?? (signal === "SIGINT" ? 0 : 1)
      resolve()
    })
  )
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  try {
    if (recorderExit !== undefined)
      throw new Error(
        `perf record stopped before the benchmark started (exit ${recorderExit}); sampling every CPU needs root or kernel.perf_event_paranoid <= 0`
      )
    const bench = spawnSync("npm", ["run", "-s", script, "--", ...process.argv.slice(3)], {
      stdio: "inherit",
      env: {
        ...process.env,
        BENCH_PHASES: phasesFile,
        NODE_OPTIONS: [process.env["NODE_OPTIONS"], "--perf-prof", "--interpreted-frames-native-stack"]
          .filter(Boolean)
          .join(" ")
      }
    })
    if (recorderExit !== undefined) throw new Error(`perf record stopped during the benchmark (exit ${recorderExit})`)
    recorder.kill("SIGINT")
    await recorded
    if (bench.status !== 0) throw new Error(`${script} exited with ${bench.status}`)
    const phases: ReadonlyArray<Phase> = readFileSync(phasesFile, "utf8")
      .trim()
      .split("\n")
      .map((line) => {
        const parsed = JSON.parse(line) as Omit<Phase, "start" | "end"> & { start: string; end: string }
        return { ...parsed, start: BigInt(parsed.start), end: BigInt(parsed.end) }
      })
    const injected = spawnSync(
      "perf",
      ["inject", "-j", "-i", join(dir, "perf.data"), "-o", join(dir, "perf.jit.data")],
      {
        stdio: ["ignore", "ignore", "inherit"],
        env: perfEnv
      }
    )
    if (injected.status !== 0) throw new Error("perf inject failed")
    report(phases, await readSamples(join(dir, "perf.jit.data"), phases, perfEnv))
  } finally {
    if (recorderExit === undefined) {
      recorder.kill("SIGINT")
      await recorded
    }
    rmSync(dir, { recursive: true, force: true })
    // The jitdumps (`jit-<pid>.dump`) and V8's logs (`isolate-…-v8.log`) land in each process's
    // working directory, the shared objects `perf inject` makes from the dumps beside them.
    for (const name of readdirSync(process.cwd())) {
      if (!/^(jit(ted)?-\d+.*\.(dump|so)|isolate-0x[0-9a-f]+-\d+-v8\.log)$/.test(name)) continue
      const path = join(process.cwd(), name)
      if (statSync(path).mtimeMs >= startedAt - 1_000) rmSync(path, { force: true })
    }
  }
}

/** The samples of the phases' processes within their windows (seconds on `CLOCK_MONOTONIC`). */
const readSamples = async (data: string, phases: ReadonlyArray<Phase>, env: NodeJS.ProcessEnv): Promise<Samples> => {
  const wanted = new Set(phases.flatMap((phase) => Object.values(phase.processes).flat()))
  const from = Math.min(...phases.map((phase) => Number(phase.start) / 1e9))
  const to = Math.max(...phases.map((phase) => Number(phase.end) / 1e9))
  const reader = spawn("perf", ["script", "-i", data, "-F", "pid,tid,time,ip,sym,dso"], {
    stdio: ["ignore", "pipe", "ignore"],
    env
  })
  const exited = new Promise<number | null>((resolve) => reader.once("exit", (code) => resolve(code)))
  const samples: Array<Sample> = []
  const nodePids = new Set<number>()
  let current: { pid: number; time: number; frames: Array<string> } | undefined
  const flush = () => {
    if (current !== undefined && wanted.has(current.pid) && current.time >= from && current.time <= to) {
      if (isNodeProcess(current.frames)) nodePids.add(current.pid)
      const own = top > 0 ? current.frames.find(isOwnCode) : undefined
      samples.push({
        pid: current.pid,
        time: current.time,
        category: categoryOf(current.frames),
        own: own === undefined ? undefined : functionName(own)
      })
    }
    current = undefined
  }
  for await (const line of createInterface({ input: reader.stdout })) {
    const header = /^\s*(\d+)\/\d+\s+([\d.]+):/.exec(line)
    if (header !== null) {
      flush()
      current = { pid: Number(header[1]), time: Number(header[2]), frames: [] }
    } else if (line.trim() !== "" && current !== undefined) {
      current.frames.push(line.trim().replace(/^[0-9a-f]+ /, ""))
    }
  }
  flush()
  const code = await exited
  if (code !== 0) throw new Error(`perf script exited with ${code}`)
  return { samples, nodePids }
}

const report = (phases: ReadonlyArray<Phase>, { nodePids, samples }: Samples) => {
  console.log(
    `\nbench:perf — CPU µs per unit from perf's cpu-clock samples (${samplesPerSecond} per second per CPU), measured phases only`
  )
  for (const phase of phases) {
    const start = Number(phase.start) / 1e9
    const end = Number(phase.end) / 1e9
    const inWindow = samples.filter((sample) => sample.time >= start && sample.time <= end)
    console.log(
      `\n${phase.label}: ${phase.units} units in ${(end - start).toFixed(1)} s (CLOCK_MONOTONIC ${start.toFixed(3)}–${end.toFixed(3)} s)`
    )
    for (const [role, pids] of Object.entries(phase.processes)) {
      const ofRole = inWindow.filter((sample) => pids.includes(sample.pid))
      const perUnit = (count: number) => (count * microsPerSample) / phase.units
      console.log(`  ${role}: ${perUnit(ofRole.length).toFixed(0)} µs/unit`)
      if (!pids.some((pid) => nodePids.has(pid))) continue
      const byCategory = new Map<string, number>()
      for (const { category } of ofRole) byCategory.set(category, (byCategory.get(category) ?? 0) + 1)
      for (const [category, count] of [...byCategory].sort((a, b) => b[1] - a[1])) {
        console.log(`    ${perUnit(count).toFixed(1).padStart(7)}  ${category}`)
      }
      if (top === 0) continue
      // Per function: the samples it was the leaf-most own frame of, and of those the ones in its own code.
      const byFunction = new Map<string, { all: number; self: number }>()
      for (const { category, own: name } of ofRole) {
        if (name === undefined) continue
        const counts = byFunction.get(name) ?? { all: 0, self: 0 }
        counts.all++
        if (category === ownCodeCategory) counts.self++
        byFunction.set(name, counts)
      }
      console.log(`    its own code's top ${top} functions: µs/unit with callees, and in its own code only`)
      for (const [name, { all, self }] of [...byFunction].sort((a, b) => b[1].all - a[1].all).slice(0, top)) {
        console.log(`    ${perUnit(all).toFixed(1).padStart(7)} ${perUnit(self).toFixed(1).padStart(7)}  ${name}`)
      }
    }
  }
}

run().catch((error) => {
  console.error(error)
  process.exit(1)
})
