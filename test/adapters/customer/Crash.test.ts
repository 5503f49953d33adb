/**
 * A kit killed with SIGKILL after the claim committed and before the acknowledgement was written:
 * the service's retry (same key, fresh nonce) against the restarted kit on the same database gets
 * `accepted`, the claim from before the crash is the one that stands, and the executor runs once.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as SqlClient from "@effect/sql/SqlClient"
import pg from "pg"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as Database from "../../../adapters/sql/Database.ts"
import * as SqlStorage from "../../../adapters/sql/Storage.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { Acknowledgement } from "../../../core/protocol/messages/Acknowledgement.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import { importSigningKeys } from "../../../core/protocol/Signing.ts"
import { verifyAndDecode } from "../../../core/protocol/Verification.ts"
import { databaseUrl, inSchema, warnIfSkipped } from "../../support/postgres.ts"
import { cipherLayer } from "../../support/storage.ts"
import { executionBody, executionDelivery, secrets, spawnKit, startService } from "../../support/customer.ts"

const client = Layer.merge(NodeCrypto.layer, MemoryNonceStore.layer)

const crashThenRetry = (args: ReadonlyArray<string>, storage: () => Layer.Layer<ActionLedger, unknown>) =>
  Effect.gen(function* () {
    const service = yield* Effect.acquireRelease(
      Effect.promise(() => startService()),
      (s) => Effect.promise(s.close)
    )
    const keys = yield* importSigningKeys(secrets)
    const body = yield* executionBody(globalThis.crypto.randomUUID())
    const kitArgs = [...args, service.url]

    // 1. The kit claims the execution, then dies before answering.
    const first = spawnKit(kitArgs, true)
    const firstPort = yield* Effect.promise(() => first.port)
    const firstDelivery = yield* executionDelivery(keys, body)
    const firstAnswer = yield* Effect.promise(() =>
      fetch(`http://127.0.0.1:${firstPort}/connector`, {
        method: "POST",
        headers: firstDelivery.headers,
        body: firstDelivery.body
      }).then(
        (r) => `status ${r.status}`,
        () => "no answer"
      )
    )
    assert.strictEqual(firstAnswer, "no answer")
    assert.strictEqual(yield* Effect.promise(() => first.exited), "SIGKILL")
    const retriedAt = Date.now()

    // 2. The service retries with the same key and a fresh nonce against the restarted kit.
    const second = spawnKit(kitArgs, false)
    yield* Effect.addFinalizer(() => Effect.sync(() => second.child.kill("SIGKILL")))
    const secondPort = yield* Effect.promise(() => second.port)
    const retry = yield* executionDelivery(keys, body)
    assert.notStrictEqual(retry.nonce, firstDelivery.nonce)
    const response = yield* Effect.promise(async () => {
      const r = await fetch(`http://127.0.0.1:${secondPort}/connector`, {
        method: "POST",
        headers: retry.headers,
        body: retry.body
      })
      return { status: r.status, headers: Object.fromEntries(r.headers), body: new Uint8Array(await r.arrayBuffer()) }
    })
    assert.strictEqual(response.status, 202)
    const ack = yield* verifyAndDecode(Acknowledgement, {
      purpose: "dispatch_response",
      keys,
      ...response,
      nonceScope: "service"
    })
    assert.strictEqual(ack.body.state, "accepted")
    assert.strictEqual(ack.body.requestNonce, retry.nonce)

    // 3. One execution and one completion, across both processes.
    // Waits up to 60 s: on a loaded machine the restarted kit may take a while to lease and run the item.
    for (let i = 0; i < 2400 && service.received.length === 0; i++) yield* Effect.sleep("25 millis")
    yield* Effect.sleep("600 millis")
    const executions = [...first.lines, ...second.lines].filter((l) => l.startsWith("execute "))
    assert.deepStrictEqual(executions, [`execute ${body.actionRequestId}`])
    assert.strictEqual(service.received.length, 1)
    second.child.kill("SIGKILL")
    yield* Effect.promise(() => second.exited)

    // The claim that stands is the one committed before the crash.
    const record = yield* Effect.flatMap(ActionLedger, (ledger) => ledger.get(body.actionRequestId)).pipe(
      Effect.provide(storage())
    )
    assert.isTrue(Option.isSome(record))
    assert.isBelow(Option.getOrThrow(record).createdAt, retriedAt)
  }).pipe(Effect.provide(client), Effect.scoped)

const sqlStorage = (sqlClient: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  SqlStorage.layer.pipe(Layer.provide(Layer.merge(sqlClient, cipherLayer)))

describe("customer kit killed after the claim, before the acknowledgement", () => {
  it.live(
    "PGlite on disk",
    () =>
      Effect.gen(function* () {
        const dir = mkdtempSync(join(tmpdir(), "accord-kit-crash-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        yield* crashThenRetry(["pglite", dir], () => sqlStorage(Database.layerPglite(dir)))
      }).pipe(Effect.scoped),
    180_000
  )

  warnIfSkipped("customer kit crash")
  it.live.skipIf(databaseUrl === undefined)(
    "PostgreSQL",
    () =>
      Effect.gen(function* () {
        const schema = `accord_kit_crash_${Date.now()}`
        const admin = new pg.Client({ connectionString: databaseUrl })
        yield* Effect.acquireRelease(
          Effect.promise(async () => {
            await admin.connect()
            await admin.query(`CREATE SCHEMA ${schema}`)
          }),
          () =>
            Effect.promise(async () => {
              await admin.query(`DROP SCHEMA ${schema} CASCADE`)
              await admin.end()
            })
        )
        const url = inSchema(databaseUrl!, schema)
        yield* crashThenRetry(["postgres", Redacted.value(url)], () => sqlStorage(Database.layerPg(url)))
      }).pipe(Effect.scoped),
    180_000
  )
})
