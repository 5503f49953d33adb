/**
 * Shared fixtures for the customer kit's tests: storage, a loopback service, and (re-exported from
 * `deliveries.ts`) the test secrets and signed deliveries built as the service would build them.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as Layer from "effect/Layer"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import * as MemoryStorage from "../../adapters/memory/Storage.ts"
import type { CustomerResponse } from "../../core/customer/Handler.ts"
import { cipherLayer } from "../support/storage.ts"

export * from "./deliveries.ts"

export const storageLayer = () => Layer.merge(MemoryStorage.layer.pipe(Layer.provideMerge(cipherLayer)), NodeCrypto.layer)
export const decoder = new TextDecoder()
export const jsonOf = (response: CustomerResponse): any => JSON.parse(decoder.decode(response.body))

/** Polls `condition` (up to 10 s) for something another process or fiber does. */
export const until = async (condition: () => boolean, what: string) => {
  for (let i = 0; i < 400; i++) {
    if (condition()) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`timed out waiting for ${what}`)
}

export interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: Uint8Array
}

/** A loopback "service" completion endpoint answering `status`; `down()` refuses connections until `up()`. */
export const startService = async () => {
  const received: Array<Received> = []
  const state = { status: 200 }
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      received.push({ headers: req.headers, body: new Uint8Array(Buffer.concat(chunks)) })
      res.writeHead(state.status, { "content-type": "application/json" })
      res.end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    state,
    down: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
    up: () => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

