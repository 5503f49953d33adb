/**
 * The dispatcher's own cost, apart from intake: `BENCH_ACTIONS` actions (default 4,000) are taken
 * in first with no dispatcher running (64 at a time), then a dispatcher delivers them all to the
 * kit (PostgreSQL on both sides, as `bench:dispatch`) at `BENCH_CONCURRENCY` in flight (default
 * 128). Per round it prints intake's and the dispatcher's CPU per action in this process, and the
 * kit's. `BENCH_ROUNDS` measured rounds (default 3) follow one of 500 actions for warm-up.
 *
 * - `BENCH_PROFILE=file`: a CPU profile of the last round's dispatch phase only (inspector, 200 µs
 *   interval), with positions in the build that `bench/build.ts` keeps beside it (`file.build`).
 * - `BENCH_HEAP=file`: a sampling heap profile of that phase (4 KiB interval, objects collected by
 *   either GC included), with the round's action count as `actions`.
 * - `node --import ./bench/effect-instructions.mjs`: adds the effect instructions per action of
 *   each phase (slows the process; read CPU from a run without it).
 *
 * `npm run bench:dispatch-phase`; needs DATABASE_URL.
 */
import { randomUUID } from "node:crypto"
import { cpSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Scope from "effect/Scope"
import pg from "pg"
import { intake } from "../core/connector/Intake.ts"
import { runDispatcher } from "../core/connector/Dispatcher.ts"
import { imageNodeFlags, runBuilt } from "./build.ts"
import {
  connectService,
  inSchema,
  input,
  pool,
  processTicks,
  serviceLayer,
  startPeer,
  stopPeer,
  workspaceId
} from "./dispatch-support.ts"

const entry = runBuilt("bench/dispatch-phase.ts", ["bench/dispatch-kit.ts"])
const databaseUrl = process.env["DATABASE_URL"] || undefined
if (databaseUrl === undefined) {
  console.log("bench/dispatch-phase.ts needs DATABASE_URL; skipped")
  process.exit(0)
}
const concurrency = Number(process.env["BENCH_CONCURRENCY"] ?? 128)
const actions = Number(process.env["BENCH_ACTIONS"] ?? 4_000)
const rounds = Number(process.env["BENCH_ROUNDS"] ?? 3)
const profileFile = process.env["BENCH_PROFILE"] || undefined
const heapFile = process.env["BENCH_HEAP"] || undefined

/** The probe's running total (`bench/effect-instructions.mjs`), when it is loaded. */
const instructions = (): number | undefined => {
  const counts = (globalThis as { __effectInstructions?: Record<string, number> }).__effectInstructions
  return counts === undefined
    ? undefined
    : Object.entries(counts).reduce((sum, [name, n]) => (name === "runLoop" ? sum : sum + n), 0)
}
const perAction = (before: number | undefined, count: number) => {
  const now = instructions()
  return now === undefined || before === undefined ? "" : `, ${((now - before) / count).toFixed(1)} effect instructions`
}

/** A CPU profile and a heap profile of one phase, as asked for. */
const profiling = async (count: number) => {
  const cpu = profileFile === undefined ? undefined : new Session()
  const heap = heapFile === undefined ? undefined : new Session()
  if (cpu !== undefined) {
    cpu.connect()
    await cpu.post("Profiler.enable")
    await cpu.post("Profiler.setSamplingInterval", { interval: 200 })
    await cpu.post("Profiler.start")
  }
  if (heap !== undefined) {
    heap.connect()
    await heap.post("HeapProfiler.enable")
    await heap.post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true
    })
  }
  return async () => {
    if (heap !== undefined) {
      const { profile } = await heap.post("HeapProfiler.stopSampling")
      writeFileSync(heapFile!, JSON.stringify({ ...profile, actions: count }))
      heap.disconnect()
    }
    if (cpu !== undefined) {
      const { profile } = await cpu.post("Profiler.stop")
      writeFileSync(profileFile!, JSON.stringify(profile))
      cpu.disconnect()
      const buildDir = process.env["BENCH_BUILD_DIR"]
      if (buildDir !== undefined) cpSync(buildDir, `${profileFile}.build`, { recursive: true })
    }
  }
}

const admin = new pg.Client({ connectionString: databaseUrl })
await admin.connect()
const suffix = randomUUID().replaceAll("-", "").slice(0, 12)
const schemas = { service: `bench_phase_service_${suffix}`, kit: `bench_phase_kit_${suffix}` }
for (const schema of Object.values(schemas)) await admin.query(`CREATE SCHEMA ${schema}`)
const kit = await startPeer(entry("bench/dispatch-kit.ts"), { databaseUrl, schema: schemas.kit })
const runtime = ManagedRuntime.make(serviceLayer(inSchema(databaseUrl, schemas.service), concurrency))
try {
  await connectService(runtime, kit.port)
  console.log(
    `dispatch phase: ${actions} actions per round, ${concurrency} in flight, ${process.env["BENCH_BUILD_DIR"] === undefined ? "through tsx" : "built as in the image"}; node flags: ${imageNodeFlags().join(" ") || "none"}`
  )
  let offset = 0
  for (let round = 0; round <= rounds; round++) {
    const count = round === 0 ? 500 : actions
    const last = round === rounds
    const intakeInstructions = instructions()
    const intakeCpu = process.cpuUsage()
    await pool(count, 64, async (i) => {
      await runtime.runPromise(intake(workspaceId, input(offset + i)))
    })
    const intakeUsage = process.cpuUsage(intakeCpu)
    const intakeLine = `intake CPU ${((intakeUsage.user + intakeUsage.system) / count).toFixed(0)} µs/action${perAction(intakeInstructions, count)}`
    offset += count
    let accepted = 0
    let done!: () => void
    const finished = new Promise<void>((resolve) => {
      done = resolve
    })
    const stopProfiling = last ? await profiling(count) : undefined
    const dispatchInstructions = instructions()
    const kitTicks = processTicks(kit.child.pid!)
    const dispatchCpu = process.cpuUsage()
    const started = performance.now()
    const scope = await runtime.runPromise(
      Effect.flatMap(Scope.make(), (scope) =>
        Effect.as(
          Scope.extend(
            runDispatcher({
              owner: "bench",
              concurrency,
              idleMillis: 20,
              onDelivery: (_, result) =>
                Effect.sync(() => {
                  if (result._tag === "Acknowledged" && result.state === "accepted" && ++accepted === count) done()
                })
            }),
            scope
          ),
          scope
        )
      )
    )
    await finished
    const elapsed = performance.now() - started
    const usage = process.cpuUsage(dispatchCpu)
    const kitMicros = ((processTicks(kit.child.pid!) - kitTicks) * 10_000) / count
    const dispatchInstructionsLine = perAction(dispatchInstructions, count)
    await stopProfiling?.()
    await runtime.runPromise(Scope.close(scope, Exit.void))
    if (round === 0) continue
    console.log(
      `round ${round}: dispatch ${(count / (elapsed / 1000)).toFixed(0)} actions/s, sender CPU ${((usage.user + usage.system) / count).toFixed(0)} µs/action` +
        ` (user ${(usage.user / count).toFixed(0)}, system ${(usage.system / count).toFixed(0)})${dispatchInstructionsLine}, kit ${kitMicros.toFixed(0)} µs/action; ${intakeLine}`
    )
  }
} finally {
  await runtime.dispose()
  await stopPeer(kit.child)
  for (const schema of Object.values(schemas)) await admin.query(`DROP SCHEMA ${schema} CASCADE`)
  await admin.end()
}
