/**
 * The SDK's action-intake client against the real server on loopback (`Server.start`, memory
 * storage, the fixture catalog published, an active connection set on the store), through a tiny
 * loopback proxy that records what the client sent and can drop a reply after the server answered;
 * and against a scripted loopback server for 429 and 5xx.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import {
  type ActionRefused,
  type ActionUnavailable,
  make,
  makeActionClient
} from "../../../adapters/sdk/ActionClient.ts"
import { intakeInput } from "../../support/deliveries.ts"
import { cipherLayer, withServices } from "../../support/storage.ts"
import { type Service, startService } from "../../core/connector/connection/support.ts"
import { connect } from "../../core/connector/dispatch/support.ts"

/** A served workspace with an active connection revision (set on the store: no handshake needed). */
const activeService = Effect.gen(function* () {
  const service = yield* startService()
  yield* connect("https://customer.example/accord", {
    workspaceId: service.workspaceId,
    connectionId: globalThis.crypto.randomUUID(),
    secrets: { actionSigning: Redacted.make("as_" + "5".repeat(40)), completion: Redacted.make("cs_" + "6".repeat(40)) }
  })
  return service
})

interface Seen {
  readonly method: string
  readonly idempotencyKey: string | undefined
  readonly body: string
  /** What the server answered (also when the proxy then dropped it). */
  readonly answer: { readonly status: number; readonly body: string }
}

const readAll = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString()))
    req.on("error", reject)
  })

const listen = (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const server = createServer(handler)
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
    }),
    ({ server }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections()
            server.close(() => resolve())
          })
      )
  )

/**
 * A loopback proxy to `target` that records every request; with `dropFirst`, it forwards the first
 * request, waits for the server's answer, and then closes the client's socket without replying.
 */
const proxy = (target: string, options: { readonly dropFirst?: boolean } = {}) =>
  Effect.gen(function* () {
    const seen: Array<Seen> = []
    const { url } = yield* listen((req, res) => {
      void readAll(req).then(async (body) => {
        const headers: Record<string, string> = {}
        for (const [name, value] of Object.entries(req.headers)) {
          if (typeof value === "string" && name !== "host" && name !== "connection" && name !== "content-length")
            headers[name] = value
        }
        const reply = await fetch(`${target}${req.url ?? "/"}`, {
          method: req.method ?? "GET",
          headers,
          ...(req.method === "GET" ? {} : { body })
        })
        const answer = { status: reply.status, body: await reply.text() }
        seen.push({ method: req.method ?? "GET", idempotencyKey: headers["idempotency-key"], body, answer })
        if (options.dropFirst === true && seen.length === 1) return void req.socket.destroy()
        const out: Record<string, string> = {}
        reply.headers.forEach((value, name) => {
          if (name !== "content-length" && name !== "transfer-encoding" && name !== "connection") out[name] = value
        })
        res.writeHead(answer.status, out).end(answer.body)
      })
    })
    return { url, seen }
  })

const fast = { baseDelayMillis: 1, maxDelayMillis: 50 }

const clientFor = (service: Service, url = service.url) =>
  make({ serviceUrl: url, adminKey: service.adminKey, workspaceId: service.workspaceId, ...fast })

describe("ActionClient against the Accord server", () => {
  layer(withServices(MemoryStorage.layer).pipe(Layer.provideMerge(cipherLayer)), { excludeTestServices: true })(
    (it) => {
      it.scoped(
        "always sends an Idempotency-Key: a fresh UUID per submit; the caller's key replays the same action",
        () =>
          Effect.gen(function* () {
            const service = yield* activeService
            const front = yield* proxy(service.url)
            const client = clientFor(service, front.url)
            const a = yield* client.submit(intakeInput())
            const b = yield* client.submit(intakeInput())
            assert.include(["queued", "dispatching"], a.state)
            assert.isFalse(a.replayed)
            assert.notStrictEqual(a.actionRequestId, b.actionRequestId)
            assert.match(
              front.seen[0]!.idempotencyKey ?? "",
              /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
            )
            assert.strictEqual(front.seen[0]!.idempotencyKey, a.idempotencyKey)
            assert.notStrictEqual(front.seen[1]!.idempotencyKey, front.seen[0]!.idempotencyKey)
            const first = yield* client.submit(intakeInput(), { idempotencyKey: "order-8123-extend-trial" })
            const again = yield* client.submit(intakeInput(), { idempotencyKey: "order-8123-extend-trial" })
            assert.deepStrictEqual(
              [again.actionRequestId, again.idempotencyKey, first.replayed, again.replayed],
              [first.actionRequestId, "order-8123-extend-trial", false, true]
            )
            assert.deepStrictEqual(front.seen.map((s) => s.idempotencyKey).slice(2), [
              "order-8123-extend-trial",
              "order-8123-extend-trial"
            ])
            const shown = yield* client.status(first.actionRequestId)
            assert.strictEqual(shown.actionRequestId, first.actionRequestId)
            assert.isString(shown.state)
            assert.isAbove(shown.history.length, 0)
          })
      )

      it.scoped("a reply lost after the action was taken: the retry under the same key answers that one action", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const front = yield* proxy(service.url, { dropFirst: true })
          const submitted = yield* clientFor(service, front.url).submit(intakeInput("acct_lost_reply"))
          assert.strictEqual(front.seen.length, 2)
          // The server took the first request (202) and the client never saw it.
          assert.strictEqual(front.seen[0]!.answer.status, 202)
          const taken = JSON.parse(front.seen[0]!.answer.body).actionRequestId as string
          assert.strictEqual(front.seen[1]!.idempotencyKey, front.seen[0]!.idempotencyKey)
          assert.strictEqual(front.seen[1]!.body, front.seen[0]!.body)
          assert.deepStrictEqual([submitted.actionRequestId, submitted.replayed], [taken, true])
        })
      )

      it.scoped("a refusal is never retried and carries the problem code: idempotency_key_reused", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const front = yield* proxy(service.url)
          const client = clientFor(service, front.url)
          yield* client.submit(intakeInput(), { idempotencyKey: "order-reused" })
          const refused = yield* Effect.flip(
            client.submit(intakeInput("acct_other"), { idempotencyKey: "order-reused" })
          )
          assert.strictEqual(refused._tag, "ActionRefused")
          assert.deepStrictEqual(
            [(refused as ActionRefused).status, (refused as ActionRefused).code],
            [409, "idempotency_key_reused"]
          )
          assert.strictEqual(front.seen.length, 2)
        })
      )

      it.scoped("a refusal is never retried: connector_not_active (no connection yet)", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const front = yield* proxy(service.url)
          const refused = yield* Effect.flip(clientFor(service, front.url).submit(intakeInput()))
          assert.deepStrictEqual(
            [(refused as ActionRefused).status, (refused as ActionRefused).code],
            [409, "connector_not_active"]
          )
          assert.strictEqual(front.seen.length, 1)
          assert.isDefined(front.seen[0]!.idempotencyKey)
        })
      )

      it.scoped("a refusal is never retried: a malformed intake is 400 with field errors", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const front = yield* proxy(service.url)
          const { actor: _, ...withoutActor } = intakeInput()
          const refused = yield* Effect.flip(clientFor(service, front.url).submit(withoutActor as never))
          assert.strictEqual((refused as ActionRefused).status, 400)
          assert.isAbove((refused as ActionRefused).errors.length, 0)
          assert.strictEqual(front.seen.length, 1)
        })
      )

      it.scoped("an unknown action request: status is refused 404 not_found", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const refused = yield* Effect.flip(clientFor(service).status(globalThis.crypto.randomUUID()))
          assert.deepStrictEqual(
            [(refused as ActionRefused).status, (refused as ActionRefused).code],
            [404, "not_found"]
          )
        })
      )

      it.scoped("a wrong key: 401 refused, and the key is in no error", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const wrongKey = "acc_admin_wrong-key-0123456789abcdefghijklmnop"
          const client = make({
            serviceUrl: service.url,
            adminKey: wrongKey,
            workspaceId: service.workspaceId,
            ...fast
          })
          const refused = yield* Effect.flip(client.submit(intakeInput()))
          assert.strictEqual((refused as ActionRefused).status, 401)
          assert.notInclude(JSON.stringify(refused) + String(refused), wrongKey)
          // The Promise form rejects with the same typed error.
          const rejected = yield* Effect.promise(() =>
            makeActionClient({ serviceUrl: service.url, adminKey: wrongKey, workspaceId: service.workspaceId })
              .submit(intakeInput())
              .then(
                () => undefined,
                (error: unknown) => error
              )
          )
          assert.strictEqual((rejected as ActionRefused)._tag, "ActionRefused")
        })
      )
    }
  )
})

describe("ActionClient retries", () => {
  type Step = (res: ServerResponse) => void
  const scripted = (steps: ReadonlyArray<Step>) =>
    Effect.gen(function* () {
      const keys: Array<string | undefined> = []
      const bodies: Array<string> = []
      const { url } = yield* listen((req, res) => {
        void readAll(req).then((body) => {
          const header = req.headers["idempotency-key"]
          keys.push(typeof header === "string" ? header : undefined)
          bodies.push(body)
          steps[Math.min(keys.length - 1, steps.length - 1)]!(res)
        })
      })
      return { url, keys, bodies }
    })
  const answer =
    (status: number, headers: Record<string, string> = {}, body: unknown = {}): Step =>
    (res) =>
      void res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))
  const accepted = answer(202, {}, { actionRequestId: "5d7f9b1c-3e5a-4c7e-9a1b-3c5d7e9f1a2b", state: "dispatching" })
  const options = (url: string) => ({ serviceUrl: url, adminKey: "k".repeat(40), workspaceId: "w", ...fast })

  it.scoped("429 (after its Retry-After) and 5xx are retried under the same key and body", () =>
    Effect.gen(function* () {
      const server = yield* scripted([answer(503), answer(429, { "retry-after": "0" }), answer(500), accepted])
      const submitted = yield* make(options(server.url)).submit(intakeInput())
      assert.strictEqual(submitted.actionRequestId, "5d7f9b1c-3e5a-4c7e-9a1b-3c5d7e9f1a2b")
      assert.strictEqual(server.keys.length, 4)
      assert.strictEqual(new Set(server.keys).size, 1)
      assert.strictEqual(server.keys[0], submitted.idempotencyKey)
      assert.strictEqual(new Set(server.bodies).size, 1)
    })
  )

  it.scoped("Retry-After is honoured: the retry waits for it", () =>
    Effect.gen(function* () {
      const server = yield* scripted([answer(429, { "retry-after": "1" }), accepted])
      const started = Date.now()
      yield* make({ ...options(server.url), maxDelayMillis: 5_000 }).submit(intakeInput())
      assert.isAtLeast(Date.now() - started, 950)
      assert.strictEqual(server.keys.length, 2)
    })
  )

  it.scoped("out of attempts: ActionUnavailable with the last reason and the key to submit again with", () =>
    Effect.gen(function* () {
      const server = yield* scripted([answer(503)])
      const failed = yield* Effect.flip(
        make({ ...options(server.url), maxAttempts: 3 }).submit(intakeInput(), { idempotencyKey: "order-9" })
      )
      assert.deepStrictEqual(
        [failed._tag, (failed as ActionUnavailable).reason, (failed as ActionUnavailable).idempotencyKey],
        ["ActionUnavailable", "http_503", "order-9"]
      )
      assert.deepStrictEqual(server.keys, ["order-9", "order-9", "order-9"])
    })
  )

  it.scoped("a 4xx from any server is not retried", () =>
    Effect.gen(function* () {
      const server = yield* scripted([
        answer(409, {}, { code: "catalog_not_published", detail: "publish a catalog first" }),
        accepted
      ])
      const refused = yield* Effect.flip(make(options(server.url)).submit(intakeInput()))
      assert.deepStrictEqual(
        [(refused as ActionRefused).code, (refused as ActionRefused).detail],
        ["catalog_not_published", "publish a catalog first"]
      )
      assert.strictEqual(server.keys.length, 1)
    })
  )
})
