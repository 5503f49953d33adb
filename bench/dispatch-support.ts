/**
 * What `bench:dispatch` and `bench/dispatch-phase.ts` share: the fixture connection and its
 * secrets, the action taken per index, the peer process (the kit or the baseline peer), the
 * service's layer on its own schema and its connection to the kit, and CPU readings from /proc.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import type pg from "pg"
import * as NodeCrypto from "../adapters/crypto/NodeCrypto.ts"
import * as Database from "../adapters/sql/Database.ts"
import * as SqlStorage from "../adapters/sql/Storage.ts"
import { layerOverStorage } from "../runtimes/Services.ts"
import * as HttpTransport from "../adapters/transport/HttpTransport.ts"
import * as Transport from "../adapters/transport/Transport.ts"
import type { ActionIntake } from "../core/connector/Action.ts"
import { ConnectionStore } from "../core/ports/ConnectionStore.ts"
import * as MemoryDispatchSignal from "../adapters/memory/DispatchSignal.ts"
import { connectorSecretRef, SecretVault } from "../core/ports/SecretVault.ts"
import { layerAesGcm } from "../core/protocol/Cipher.ts"
import { publishCatalog } from "../test/support/catalog.ts"
import { intakeInput } from "../test/support/deliveries.ts"
import { imageNodeFlags } from "./build.ts"

export const workspaceId = "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20"
export const connectionId = "6a2e9c14-8b3d-4f5a-a1c7-2d4e6f8a0b13"
export const actionSigning = "as_bench_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c"
export const completion = "cs_bench_8e6c4a2f0d1b3e5c7a9f1d3b5e7c9a1f3d5b"

/** The tests' example action, one trial per action. */
export const input = (i: number): ActionIntake => {
  const base = intakeInput(`acct_${i}`)
  const operation = {
    ...base.action.operation,
    trialRef: { entityKey: `sub_${i}`, entityKind: "subscription", version: 3 }
  }
  return { ...base, action: { ...base.action, operation } }
}

/** Runs `count` tasks with at most `limit` in flight. */
export const pool = async (count: number, limit: number, task: (i: number) => Promise<void>) => {
  let next = 0
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < count) await task(next++)
    })
  )
}

/** `databaseUrl` with its `search_path` set to `schema`. */
export const inSchema = (databaseUrl: string, schema: string) => {
  const url = new URL(databaseUrl)
  url.searchParams.set("options", `-csearch_path=${schema}`)
  return url.toString()
}

/**
 * The CPU ticks so far (`processTicks`) of each backend of `client`'s database other than its own
 * session: PostgreSQL's CPU for what a bench measures.
 */
export const backendTicks = async (client: pg.Client): Promise<Map<number, number>> => {
  const rows = (
    await client.query(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
  ).rows
  return new Map(rows.map((row: { pid: number }) => [Number(row.pid), processTicks(Number(row.pid))]))
}

/**
 * User + system CPU ticks (10 ms) of a process so far, from /proc; 0 once it is gone. With
 * `mainThread`, those of its main thread only (a Node process's JavaScript), without its other
 * threads (V8's garbage collection helpers, libuv's pool).
 */
export const processTicks = (pid: number, mainThread = false): number => {
  try {
    const fields = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, "utf8")
      .split(") ")[1]!
      .split(" ")
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}

/** A peer process (`node` arguments in `script`) on its own schema; resolves once it prints `ready <port>`. */
export const startPeer = (
  script: ReadonlyArray<string>,
  options: { readonly databaseUrl: string; readonly schema: string; readonly nodeFlags?: ReadonlyArray<string> }
): Promise<{ child: ChildProcess; port: number }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...imageNodeFlags(), ...(options.nodeFlags ?? []), ...script], {
      env: {
        ...process.env,
        DATABASE_URL: options.databaseUrl,
        KIT_SCHEMA: options.schema,
        ACCORD_WORKSPACE_ID: workspaceId,
        ACCORD_ACTION_SIGNING_SECRET: actionSigning,
        ACCORD_COMPLETION_SECRET: completion
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    child.stdout!.on("data", (chunk: Buffer) => {
      const match = /ready (\d+)/.exec(chunk.toString())
      if (match) resolve({ child, port: Number(match[1]) })
    })
    child.once("exit", (code) => reject(new Error(`peer exited with ${code}`)))
  })

/** Stops a peer with SIGTERM and waits for it to exit. */
export const stopPeer = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    child.removeAllListeners("exit")
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

/** The sending side's services: SQL storage on `url`, node:crypto, the node:http transport, the in-memory dispatch signal. */
export const serviceLayer = (url: string, maxSockets: number) => {
  const cipher = layerAesGcm(Redacted.make(new Uint8Array(32).fill(3)))
  return Layer.mergeAll(
    layerOverStorage.pipe(
      Layer.provideMerge(SqlStorage.layer),
      Layer.provide(Layer.merge(Database.layerPg(Redacted.make(url)), cipher))
    ),
    cipher,
    NodeCrypto.layer,
    // The server's transport (undici on Node); `BENCH_TRANSPORT=node:http` the node:http one, to compare.
    process.env["BENCH_TRANSPORT"] === "node:http"
      ? HttpTransport.layer({ allowInsecure: true }, { maxSockets })
      : Transport.layer({ allowInsecure: true }, { connections: maxSockets }),
    MemoryDispatchSignal.layerMemory
  )
}

/** Registers and activates the fixture connection to the kit at `port` with its secrets, and publishes the fixture catalog. */
export const connectService = (
  runtime: ManagedRuntime.ManagedRuntime<Layer.Layer.Success<ReturnType<typeof serviceLayer>>, unknown>,
  port: number
): Promise<void> =>
  runtime.runPromise(
    Effect.gen(function* () {
      const store = yield* ConnectionStore
      const vault = yield* SecretVault
      const now = Date.now()
      const { revision } = yield* store.registerRevision({
        workspaceId,
        connectionId,
        endpoint: `http://127.0.0.1:${port}/connector`,
        now
      })
      yield* vault.put(connectorSecretRef(connectionId, revision, "actionSigning"), Redacted.make(actionSigning), now)
      yield* vault.put(connectorSecretRef(connectionId, revision, "completion"), Redacted.make(completion), now)
      yield* store.activate({ connectionId, revision, now })
      // Every intake binds to the fixture catalog (no intake before a published catalog).
      yield* publishCatalog(workspaceId)
    })
  )
