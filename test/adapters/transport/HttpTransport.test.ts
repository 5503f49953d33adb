/**
 * The outbound transports (node:http, undici) against real loopback servers that misbehave on
 * purpose: one contract, the same tests for each.
 */
import dc from "node:diagnostics_channel"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpTransport from "../../../adapters/transport/HttpTransport.ts"
import * as Transport from "../../../adapters/transport/Transport.ts"
import * as UndiciTransport from "../../../adapters/transport/UndiciTransport.ts"
import { layerResolverMemory } from "../../../core/connector/Endpoint.ts"
import { ConnectorTransport } from "../../../core/ports/ConnectorTransport.ts"
import { closedPort } from "../../core/connector/dispatch/support.ts"

let base = ""
let received: Array<{ readonly path: string; readonly body: string; readonly headers: IncomingMessage["headers"] }> = []
let connections = 0
const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  "/echo": (_req, res) =>
    res.writeHead(202, { "content-type": "application/json", "x-echo": "1" }).end(JSON.stringify({ ok: true })),
  "/redirect": (_req, res) => res.writeHead(302, { location: `${base}/target` }).end(),
  "/target": (_req, res) => res.writeHead(200).end("{}"),
  "/slow": (_req, res) => void setTimeout(() => res.writeHead(202).end("{}"), 1_000),
  "/reset": (req) => req.socket.destroy(),
  "/large": (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end("x".repeat(64 * 1024 + 1)),
  "/exact": (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end("x".repeat(64 * 1024)),
  // The request was read; then the client's own connection fails with a code that, before
  // connecting, would mean "nothing was sent".
  "/unreachable-after": () =>
    void setTimeout(
      () => lastClientSocket?.destroy(Object.assign(new Error("simulated"), { code: "EHOSTUNREACH" })),
      20
    )
}
// The client side of the newest outbound connection (node:http and undici both publish it).
let lastClientSocket: Socket | undefined
const remember = (message: unknown) => {
  lastClientSocket = (message as { socket: Socket }).socket
}
dc.subscribe("net.client.socket", remember)
dc.subscribe("undici:client:connected", remember)
const server = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    received.push({ path: req.url ?? "", body: Buffer.concat(chunks).toString(), headers: req.headers })
    routes[req.url ?? ""]?.(req, res)
  })
})
server.on("connection", () => connections++)
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
)

const body = new TextEncoder().encode(JSON.stringify({ hello: "world" }))
const post = (url: string, timeoutMillis?: number) =>
  Effect.flatMap(ConnectorTransport, (t) =>
    t.post({ url, headers: { "x-test": "1" }, body, ...(timeoutMillis ? { timeoutMillis } : {}) })
  )
const failure = (url: string) => Effect.flip(post(url))

const transports = [
  { name: "HttpTransport (node:http)", module: HttpTransport, sequentialConnections: 1 },
  // undici's pool has not yet freed the connection when a request follows the response at once, so
  // the second one opens a second connection; from then on the two are reused.
  { name: "UndiciTransport", module: UndiciTransport, sequentialConnections: 2 }
] as const

describe.each(transports)("$name", ({ module: HttpTransport, sequentialConnections }) => {
  const insecure = HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 300 })

  it.live("POSTs the exact bytes with content-type and returns status, lowercase headers and body", () =>
    Effect.gen(function* () {
      received = []
      const response = yield* post(`${base}/echo`)
      assert.strictEqual(response.status, 202)
      assert.strictEqual(response.headers["x-echo"], "1")
      assert.deepStrictEqual(JSON.parse(new TextDecoder().decode(response.body)), { ok: true })
      assert.strictEqual(received[0]!.body, JSON.stringify({ hello: "world" }))
      assert.strictEqual(received[0]!.headers["content-type"], "application/json")
      assert.strictEqual(received[0]!.headers["x-test"], "1")
    }).pipe(Effect.provide(insecure))
  )

  it.live("a redirect is returned, never followed", () =>
    Effect.gen(function* () {
      received = []
      const response = yield* post(`${base}/redirect`)
      assert.strictEqual(response.status, 302)
      assert.deepStrictEqual(
        received.map((r) => r.path),
        ["/redirect"]
      )
    }).pipe(Effect.provide(insecure))
  )

  it.live("a slow response past the time-out: timeout, may have been delivered", () =>
    Effect.gen(function* () {
      const error = yield* failure(`${base}/slow`)
      assert.strictEqual(error.reason, "timeout")
      assert.isTrue(error.maybeDelivered)
    }).pipe(Effect.provide(insecure))
  )

  it.live("the connection destroyed after the request was read: reset, may have been delivered", () =>
    Effect.gen(function* () {
      const error = yield* failure(`${base}/reset`)
      assert.strictEqual(error.reason, "reset")
      assert.isTrue(error.maybeDelivered)
    }).pipe(Effect.provide(insecure))
  )

  it.live("nothing listening: connect, not delivered", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(closedPort)
      const error = yield* failure(`http://127.0.0.1:${port}/x`)
      assert.strictEqual(error.reason, "connect")
      assert.isFalse(error.maybeDelivered)
    }).pipe(Effect.provide(insecure))
  )

  it.live("an error after the request was written: may have been delivered, whatever its code", () =>
    Effect.gen(function* () {
      received = []
      const error = yield* Effect.flip(post(`${base}/unreachable-after`, 2_000))
      assert.deepStrictEqual(
        received.map((r) => r.path),
        ["/unreachable-after"]
      )
      assert.strictEqual(error.reason, "reset")
      assert.isTrue(error.maybeDelivered)
    }).pipe(Effect.provide(Layer.fresh(insecure)))
  )

  it.live(
    "a TLS handshake that never completes: time-out, not delivered; an interrupted one is closed with the layer",
    () =>
      Effect.gen(function* () {
        // Accepts TCP connections and never answers the TLS client hello.
        // Each accepted connection: when it was accepted and when the client closed it.
        const connectionsSeen: Array<{ readonly acceptedAt: number; closedAt?: number }> = []
        const accepted = new Set<Socket>()
        const stalled = createTcpServer((socket) => {
          const seen: { readonly acceptedAt: number; closedAt?: number } = { acceptedAt: Date.now() }
          connectionsSeen.push(seen)
          accepted.add(socket)
          socket.on("close", () => (seen.closedAt = Date.now()))
          socket.on("error", () => undefined)
          // Reading, so the client's close is seen.
          socket.resume()
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => stalled.listen(0, "127.0.0.1", resolve))),
          () =>
            Effect.promise(
              () =>
                new Promise<void>((resolve) => {
                  for (const socket of accepted) socket.destroy()
                  stalled.close(() => resolve())
                })
            )
        )
        const url = `https://127.0.0.1:${(stalled.address() as AddressInfo).port}/connector`
        const timedOut = yield* Effect.flip(
          Effect.provide(
            Effect.flatMap(ConnectorTransport, (t) => t.post({ url, headers: {}, body })),
            HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 300 })
          )
        )
        assert.strictEqual(timedOut.reason, "timeout")
        assert.isFalse(timedOut.maybeDelivered)
        // Interrupted while connecting, then the layer closes: the connection closes at once, not
        // at some later connect time-out.
        const started = Date.now()
        yield* Effect.scoped(
          Effect.gen(function* () {
            const transport = yield* HttpTransport.make({ allowInsecure: true }, { timeoutMillis: 10_000 })
            yield* transport.post({ url, headers: {}, body }).pipe(Effect.timeout("150 millis"), Effect.ignore)
          })
        ).pipe(Effect.provide(layerResolverMemory({})))
        const closing = Date.now()
        yield* Effect.sleep("500 millis")
        const interrupted = connectionsSeen.filter((c) => c.acceptedAt >= started)
        assert.strictEqual(interrupted.length, 1)
        assert.isDefined(interrupted[0]!.closedAt)
        assert.isBelow(interrupted[0]!.closedAt! - closing, 400)
      }).pipe(Effect.scoped)
  )

  it.live("a body over 64 KiB is refused; exactly 64 KiB is read", () =>
    Effect.gen(function* () {
      const error = yield* failure(`${base}/large`)
      assert.strictEqual(error.reason, "response_too_large")
      assert.strictEqual((yield* post(`${base}/exact`)).body.byteLength, 64 * 1024)
    }).pipe(Effect.provide(insecure))
  )

  it.live("loopback without insecure mode: refused before anything is sent", () =>
    Effect.gen(function* () {
      received = []
      const error = yield* failure(`${base.replace("http:", "https:")}/echo`)
      assert.strictEqual(error.reason, "refused_address")
      assert.isFalse(error.maybeDelivered)
      const plain = yield* failure(`${base}/echo`)
      assert.strictEqual(plain.reason, "refused_address")
      assert.strictEqual(received.length, 0)
    }).pipe(Effect.provide(HttpTransport.layer({ allowInsecure: false })))
  )

  it.live("a host that resolves to a private address at connect time is refused (DNS rebinding)", () =>
    Effect.gen(function* () {
      const transport = yield* HttpTransport.make({ allowInsecure: false })
      const error = yield* Effect.flip(
        transport.post({ url: "https://rebind.example.com/connector", headers: {}, body })
      )
      assert.strictEqual(error.reason, "refused_address")
      const unknown = yield* Effect.flip(
        transport.post({ url: "https://nowhere.example.com/connector", headers: {}, body })
      )
      assert.strictEqual(unknown.reason, "dns")
    }).pipe(
      Effect.scoped,
      Effect.provide(layerResolverMemory({ "rebind.example.com": ["93.184.216.34", "192.168.0.10"] }))
    )
  )

  it.live(
    "a name is resolved and checked again on every request: once it resolves to a private address, it is refused",
    () => {
      const table: Record<string, ReadonlyArray<string>> = { "switch.example.com": ["127.0.0.1"] }
      return Effect.gen(function* () {
        const transport = yield* HttpTransport.make({ allowInsecure: true })
        const url = `http://switch.example.com:${new URL(base).port}/echo`
        received = []
        const first = yield* transport.post({ url, headers: {}, body })
        assert.strictEqual(first.status, 202)
        table["switch.example.com"] = ["10.0.0.5"]
        const error = yield* Effect.flip(transport.post({ url, headers: {}, body }))
        assert.strictEqual(error.reason, "refused_address")
        assert.isFalse(error.maybeDelivered)
        table["switch.example.com"] = ["127.0.0.1"]
        assert.strictEqual((yield* transport.post({ url, headers: {}, body })).status, 202)
        assert.strictEqual(received.length, 2)
      }).pipe(Effect.scoped, Effect.provide(layerResolverMemory(table)))
    }
  )

  it.live("an endpoint URL refused once is refused on every request, and nothing is sent", () =>
    Effect.gen(function* () {
      const transport = yield* HttpTransport.make({ allowInsecure: false })
      received = []
      for (const url of [
        `${base.replace("http:", "https:")}/echo`,
        "https://10.0.0.5/connector",
        "http://public.example.com/connector",
        "https://user:pw@public.example.com/x"
      ]) {
        const reasons = []
        for (let i = 0; i < 3; i++)
          reasons.push((yield* Effect.flip(transport.post({ url, headers: {}, body }))).reason)
        assert.deepStrictEqual(reasons, Array(3).fill(reasons[0]), url)
        assert.strictEqual(reasons[0], "refused_address", url)
      }
      assert.strictEqual(received.length, 0)
    }).pipe(Effect.scoped, Effect.provide(layerResolverMemory({ "public.example.com": ["93.184.216.34"] })))
  )

  it.live("sequential requests reuse keep-alive connections", () =>
    Effect.gen(function* () {
      const before = connections
      for (let i = 0; i < 10; i++) yield* post(`${base}/echo`)
      assert.strictEqual(connections - before, sequentialConnections)
    }).pipe(Effect.provide(Layer.fresh(insecure)))
  )
})

describe("Transport.layer", () => {
  it.live("on Node it is the undici transport, and it delivers", () =>
    Effect.gen(function* () {
      received = []
      const response = yield* post(`${base}/echo`)
      assert.strictEqual(response.status, 202)
      assert.strictEqual(received.length, 1)
      assert.strictEqual(Transport.implementation(), "undici")
    }).pipe(Effect.provide(Transport.layer({ allowInsecure: true })))
  )
})
