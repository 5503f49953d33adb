/**
 * Database faults end to end, on PostgreSQL (`DATABASE_URL`; skipped with one line without it):
 * the real server on a schema of its own, faults made from a second session on the same database.
 *
 * - A connection killed mid-transaction (`pg_terminate_backend`): the statement holding it open is
 *   a deferred constraint trigger installed on the tables each route writes, which waits at
 *   `COMMIT` for an advisory lock the test holds; the test terminates whichever server backend
 *   waits for it. Intake, completion and ingest answer 503 `storage_unavailable` with
 *   `Retry-After`, never 500, and the same request succeeds afterwards (the broken connection was
 *   not reused).
 * - A table locked past the storage bound: ingest answers 503 with `Retry-After` within the bound,
 *   and `/readyz` answers within its timeout while the migrations table is locked.
 * - A frozen database (the server reaches PostgreSQL through `FreezingProxy`, which stops
 *   forwarding, as a database stopped with SIGSTOP): ingest, intake and a read answer 503 with
 *   `Retry-After` within the storage bound, `/readyz` within its timeout; after the thaw the same
 *   requests succeed and every event and action acknowledged before is stored.
 * - Every fault is counted by cause in `/metrics`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import { intakeInput, secrets, signedCompletion, startPeer } from "../core/connector/dispatch/support.ts"
import { formatTimestamp } from "../../core/protocol/Timestamp.ts"
import { type Reply, request } from "../support/http.ts"
import * as FreezingProxy from "../support/freezingProxy.ts"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../support/postgres.ts"
import { actionStatus, admin, bootService, connect, type Service, waitFor } from "./support.ts"

warnIfSkipped("database faults end to end")

/** The storage bound the server runs with here. */
const boundMillis = 1_000

/** A second session on the server's schema: the test's hand on the database. */
const controller = (url: Redacted.Redacted<string>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: Redacted.value(url), application_name: "accord-fault-test" })
      client.on("error", () => undefined)
      await client.connect()
      return client
    }),
    (client) => Effect.promise(() => client.end().catch(() => undefined))
  )

const query = (client: pg.Client, text: string, values: Array<unknown> = []) =>
  Effect.promise(() => client.query(text, values))

/** The tables intake, completion and ingest write, each made to wait at COMMIT for `gate`. */
const installGate = (client: pg.Client, gate: number) =>
  Effect.gen(function* () {
    yield* query(
      client,
      `CREATE FUNCTION fault_gate() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_advisory_xact_lock_shared(${gate}); RETURN NULL; END $$`
    )
    for (const table of ["accord_actions", "accord_completions", "accord_events"]) {
      yield* query(
        client,
        `CREATE CONSTRAINT TRIGGER fault_gate AFTER INSERT OR UPDATE ON ${table}
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fault_gate()`
      )
    }
  })

/**
 * Sends `send` while the gate is closed and terminates every server backend that waits at it
 * until the answer arrives; then opens the gate. Returns the answer and how many were killed.
 */
const killedMidTransaction = (client: pg.Client, gate: number, send: Effect.Effect<Reply>) =>
  Effect.gen(function* () {
    yield* query(client, "SELECT pg_advisory_lock($1)", [gate])
    const answer = yield* Effect.fork(send)
    let killed = 0
    for (let i = 0; i < 200 && (yield* Fiber.poll(answer))._tag === "None"; i++) {
      const rows = yield* query(
        client,
        `SELECT pg_terminate_backend(pid) AS done FROM pg_locks
         WHERE locktype = 'advisory' AND NOT granted AND objid = $1 AND classid = 0
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        [gate]
      )
      killed += rows.rows.filter((row) => row.done === true).length
      yield* Effect.sleep("25 millis")
    }
    yield* query(client, "SELECT pg_advisory_unlock($1)", [gate])
    return { reply: yield* Fiber.join(answer), killed }
  })

const assertRetryable503 = (reply: Reply, what: string) => {
  assert.strictEqual(reply.status, 503, `${what}: ${reply.status} ${reply.text}`)
  assert.strictEqual(reply.json.code, "storage_unavailable")
  assert.strictEqual(reply.headers.get("retry-after"), "1")
  assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
}

const ingestKey = (service: Service) =>
  Effect.map(
    request(`${service.ws}/api-keys`, { method: "POST", headers: admin, body: JSON.stringify({ scope: "ingest" }) }),
    (created) => created.json.secret as string
  )

/** When every event here happened: a retried event is the same event (an event_id names one payload). */
const occurredAt = new Date(Date.now() - 60_000).toISOString()

const ingest = (service: Service, key: string, eventId: string) =>
  request(`${service.base}/api/events/ingest`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      event_name: "feature_used",
      account_id: "acct_faults",
      timestamp: occurredAt,
      event_id: eventId,
      semantic_type: "usage",
      event_kind: "product_action",
      value: 1,
      properties: { feature_key: "reports" }
    })
  })

const faultCount = (service: Service, cause: string) =>
  Effect.map(request(`${service.base}/metrics`), (reply) => {
    const line = reply.text.split("\n").find((l) => l.startsWith(`accord_storage_faults_total{cause="${cause}"}`))
    return line === undefined ? -1 : Number(line.split(" ").at(-1))
  })

describe.skipIf(databaseUrl === undefined)("database faults end to end (postgres)", () => {
  it.live(
    "a connection killed mid-transaction is a 503 with Retry-After on intake, completion and ingest, never a 500",
    () =>
      Effect.gen(function* () {
        const url = yield* freshSchemaUrl(databaseUrl!)
        const peer = yield* Effect.acquireRelease(
          Effect.promise(() => startPeer()),
          (peer) => Effect.promise(() => peer.close())
        )
        const service = yield* bootService({
          env: { DATABASE_URL: Redacted.value(url), ACCORD_STORAGE_TIMEOUT: `${boundMillis / 1000}s` }
        })
        yield* connect(service, peer.url, secrets)
        const hand = yield* controller(url)
        const gate = 1 + Math.floor(Math.random() * 1_000_000_000)
        yield* installGate(hand, gate)
        const connectionFaults = yield* faultCount(service, "connection")
        assert.strictEqual(connectionFaults, 0)

        // Intake: the action's row is written in a transaction whose COMMIT dies.
        const body = JSON.stringify(intakeInput("acct_faults"))
        const intake = () =>
          request(`${service.ws}/action-requests`, {
            method: "POST",
            headers: { ...admin, "idempotency-key": "faults-intake-1" },
            body
          })
        const refused = yield* killedMidTransaction(hand, gate, intake())
        assert.isAtLeast(refused.killed, 1)
        assertRetryable503(refused.reply, "intake")
        const created = yield* intake()
        assert.strictEqual(created.status, 202, created.text)
        const id = created.json.actionRequestId as string
        const accepted = yield* waitFor(actionStatus(service, id), (s) => s.state === "accepted", "acceptance")

        // Completion: the transition's transaction dies at COMMIT.
        const completion = {
          type: "service.customer_action.completion",
          protocolVersion: 1,
          workspaceId: accepted.workspaceId ?? undefined,
          actionRequestId: id,
          providerIdempotencyKey: accepted.providerIdempotencyKey,
          providerReference: "ref_faults",
          completionId: `cmp_${id}`,
          completedAt: formatTimestamp(Date.now()),
          outcome: "succeeded",
          evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "authenticated_completion" }
        }
        const complete = () =>
          Effect.flatMap(signedCompletion({ ...completion, workspaceId: service.ws.split("/").at(-1) }), (signed) =>
            request(`${service.base}/api/funnels/v1/runtime/actions/customer-complete`, { method: "POST", ...signed })
          )
        const refusedCompletion = yield* killedMidTransaction(hand, gate, complete())
        assert.isAtLeast(refusedCompletion.killed, 1)
        assertRetryable503(refusedCompletion.reply, "completion")
        const recorded = yield* complete()
        assert.strictEqual(recorded.status, 200, recorded.text)
        assert.strictEqual(recorded.json.state, "verified")

        // Ingest: the batch runs once more on a lost connection; killed both times, it is a 503.
        const key = yield* ingestKey(service)
        const refusedEvent = yield* killedMidTransaction(hand, gate, ingest(service, key, "faults:1"))
        assert.isAtLeast(refusedEvent.killed, 2)
        assertRetryable503(refusedEvent.reply, "ingest")
        const stored = yield* ingest(service, key, "faults:1")
        assert.strictEqual(stored.status, 202, stored.text)

        assert.isAtLeast(yield* faultCount(service, "connection"), connectionFaults + 4)
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a locked table costs one storage bound per request: 503 with Retry-After in time, and /readyz answers in time",
    () =>
      Effect.gen(function* () {
        const url = yield* freshSchemaUrl(databaseUrl!)
        const service = yield* bootService({
          env: { DATABASE_URL: Redacted.value(url), ACCORD_STORAGE_TIMEOUT: `${boundMillis / 1000}s` }
        })
        const key = yield* ingestKey(service)
        const hand = yield* controller(url)
        const timeouts = yield* faultCount(service, "timeout")

        yield* query(hand, "BEGIN")
        yield* query(hand, "LOCK TABLE accord_events, accord_migrations IN ACCESS EXCLUSIVE MODE")
        const started = Date.now()
        const replies = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => ingest(service, key, `locked:${i}`)),
          { concurrency: "unbounded" }
        )
        const answeredAfter = Date.now() - started
        const readyStarted = Date.now()
        const ready = yield* request(`${service.base}/readyz`)
        const readyAfter = Date.now() - readyStarted
        yield* query(hand, "ROLLBACK")

        for (const reply of replies) assertRetryable503(reply, "ingest under a lock")
        // One bound for the batch (8 events together), not one per event, with slack for the machine.
        assert.isBelow(answeredAfter, boundMillis * 3)
        assert.strictEqual(ready.status, 503)
        assert.strictEqual(ready.headers.get("retry-after"), "1")
        assert.isBelow(readyAfter, 2_000 + 1_000)
        assert.isAbove(yield* faultCount(service, "timeout"), timeouts)

        // After the release the same events are stored.
        for (let i = 0; i < 8; i++) assert.strictEqual((yield* ingest(service, key, `locked:${i}`)).status, 202)
        assert.strictEqual((yield* request(`${service.base}/readyz`)).status, 200)
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a frozen database costs each request at most the storage bound: 503 with Retry-After, /readyz in time; after the thaw nothing acknowledged is lost",
    () =>
      Effect.gen(function* () {
        const url = yield* freshSchemaUrl(databaseUrl!)
        const direct = new URL(Redacted.value(url))
        const proxy = yield* Effect.acquireRelease(
          Effect.promise(() =>
            FreezingProxy.start({ host: direct.hostname || "127.0.0.1", port: Number(direct.port || 5432) })
          ),
          (proxy) => Effect.promise(proxy.close)
        )
        const throughProxy = new URL(direct)
        throughProxy.hostname = "127.0.0.1"
        throughProxy.port = String(proxy.port)
        const peer = yield* Effect.acquireRelease(
          Effect.promise(() => startPeer()),
          (peer) => Effect.promise(() => peer.close())
        )
        const service = yield* bootService({
          env: { DATABASE_URL: throughProxy.toString(), ACCORD_STORAGE_TIMEOUT: `${boundMillis / 1000}s` }
        })
        yield* connect(service, peer.url, secrets)
        const key = yield* ingestKey(service)
        const body = JSON.stringify(intakeInput("acct_frozen"))
        const intake = (n: number) =>
          request(`${service.ws}/action-requests`, {
            method: "POST",
            headers: { ...admin, "idempotency-key": `faults-frozen-${n}` },
            body
          })
        const before = yield* Effect.all(
          Array.from({ length: 4 }, (_, i) => ingest(service, key, `frozen:before:${i}`)),
          { concurrency: "unbounded" }
        )
        for (const reply of before) assert.strictEqual(reply.status, 202, reply.text)
        const taken = yield* intake(1)
        assert.strictEqual(taken.status, 202, taken.text)
        const id = taken.json.actionRequestId as string

        proxy.freeze()
        const timed = (send: Effect.Effect<Reply>) =>
          Effect.map(Effect.timed(send), ([took, reply]) => ({ millis: Duration.toMillis(took), reply }))
        const during = yield* Effect.all(
          [
            ...Array.from({ length: 6 }, (_, i) => timed(ingest(service, key, `frozen:during:${i}`))),
            timed(intake(2)),
            timed(request(`${service.ws}/action-requests/${id}`, { headers: admin }))
          ],
          { concurrency: "unbounded" }
        )
        const ready = yield* timed(request(`${service.base}/readyz`))
        proxy.thaw()

        for (const { millis, reply } of during) {
          assertRetryable503(reply, "a request to a frozen database")
          // One storage bound, with slack for a loaded machine; without the client's deadline
          // these waited for as long as the database stayed frozen.
          assert.isBelow(millis, boundMillis * 3)
        }
        assert.strictEqual(ready.reply.status, 503)
        assert.strictEqual(ready.reply.headers.get("retry-after"), "1")
        assert.isBelow(ready.millis, 2_000 + 1_000)

        // After the thaw: ready again, the refused requests succeed, nothing acknowledged is lost.
        yield* waitFor(request(`${service.base}/readyz`), (reply) => reply.status === 200, "readiness after the thaw")
        for (let i = 0; i < 6; i++) {
          // 200 `duplicate` when the frozen database ran the held statement at the thaw: the
          // event was stored although its request was answered 503 (as after a SIGCONT).
          const stored = yield* ingest(service, key, `frozen:during:${i}`)
          assert.include([200, 202], stored.status, stored.text)
        }
        const second = yield* intake(2)
        assert.strictEqual(second.status, 202, second.text)
        const first = yield* request(`${service.ws}/action-requests/${id}`, { headers: admin })
        assert.strictEqual(first.status, 200, first.text)
        const hand = yield* controller(url)
        const events = yield* query(hand, "SELECT event_id FROM accord_events WHERE event_id LIKE 'frozen:%'")
        assert.deepStrictEqual(
          events.rows.map((row) => row.event_id as string).sort(),
          [
            ...Array.from({ length: 4 }, (_, i) => `frozen:before:${i}`),
            ...Array.from({ length: 6 }, (_, i) => `frozen:during:${i}`)
          ].sort()
        )
      }).pipe(Effect.scoped),
    60_000
  )
})
