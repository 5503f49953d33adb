/**
 * Shared fixtures for the customer kit's tests: storage, a loopback service, and (re-exported from
 * `deliveries.ts`) the test secrets and signed deliveries built as the service would build them.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import * as Layer from "effect/Layer"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import * as MemoryStorage from "../../adapters/memory/Storage.ts"
import type { CustomerResponse } from "../../core/customer/Handler.ts"
import { cipherLayer } from "./storage.ts"

export * from "./deliveries.ts"

export const storageLayer = () =>
  Layer.merge(MemoryStorage.layer.pipe(Layer.provideMerge(cipherLayer)), NodeCrypto.layer)
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
export const startService = async (options?: {
  /** Whether a delivery is accepted; a refused one is answered 401, as the service answers a bad signature. */
  readonly accepts?: (delivery: Received) => boolean
}) => {
  const received: Array<Received> = []
  const state: { status: number; headers?: Record<string, string> } = { status: 200 }
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const delivery = { headers: req.headers, body: new Uint8Array(Buffer.concat(chunks)) }
      received.push(delivery)
      const refused = options?.accepts !== undefined && !options.accepts(delivery)
      res.writeHead(refused ? 401 : state.status, { "content-type": "application/json", ...state.headers })
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

const root = fileURLToPath(new URL("../..", import.meta.url))

/** A kit in a child process (`test/support/kitProcess.ts`) and every line it printed so far. */
export interface KitProcess {
  readonly child: ChildProcess
  readonly lines: Array<string>
  readonly port: Promise<number>
  readonly exited: Promise<NodeJS.Signals | number | null>
}

/**
 * Starts `test/support/kitProcess.ts` in one process (`node --import tsx`, so SIGKILL kills the kit
 * itself); `env` adds its test switches (`ACCORD_TEST_HOLD_EXECUTION`).
 */
export const spawnKit = (
  args: ReadonlyArray<string>,
  killAfterClaim: boolean,
  env: Record<string, string> = {}
): KitProcess => {
  const child = spawn(process.execPath, ["--import", "tsx", "test/support/kitProcess.ts", ...args], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ACCORD_TEST_KILL_AFTER_CLAIM: killAfterClaim ? "1" : "0", ...env }
  })
  const lines: Array<string> = []
  let buffered = ""
  let stderr = ""
  child.stderr!.on("data", (chunk) => (stderr += chunk))
  const port = new Promise<number>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      buffered += chunk.toString()
      const complete = buffered.split("\n")
      buffered = complete.pop()!
      for (const line of complete) {
        lines.push(line)
        if (line.startsWith("listening ")) resolve(Number(line.slice("listening ".length)))
      }
    })
    child.on("exit", (code) => reject(new Error(`kit exited (${code}) before listening: ${stderr.slice(0, 800)}`)))
  })
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on("exit", (code, signal) => resolve(signal ?? code))
  )
  return { child, lines, port, exited }
}
