/**
 * The measured phases of a benchmark, for `bench/perf-cpu.ts`: with `BENCH_PHASES=file` set, each
 * measured phase is appended to `file` as one JSON line: its label, the units it counted (actions,
 * events), its start and end on `CLOCK_MONOTONIC` in nanoseconds (`process.hrtime.bigint()`, the
 * clock `perf record -k 1` stamps its samples with), and the pids of its processes by role. Without
 * `BENCH_PHASES` nothing is written.
 */
import { appendFileSync } from "node:fs"

export interface Phase {
  readonly label: string
  readonly units: number
  readonly start: bigint
  readonly end: bigint
  /** Role (`sender`, `kit`, `server`, `PostgreSQL`, …) → the pids that play it. */
  readonly processes: Readonly<Record<string, ReadonlyArray<number>>>
}

const file = process.env["BENCH_PHASES"] || undefined

/** Now on `CLOCK_MONOTONIC`, in nanoseconds. */
export const monotonic = (): bigint => process.hrtime.bigint()

/** Appends `phase` to `BENCH_PHASES` (nothing when it is not set). */
export const recordPhase = (phase: Phase): void => {
  if (file === undefined) return
  appendFileSync(file, JSON.stringify({ ...phase, start: String(phase.start), end: String(phase.end) }) + "\n")
}
