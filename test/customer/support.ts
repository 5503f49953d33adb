/**
 * Shared fixtures for the customer kit's tests: the test secrets and signed deliveries built as
 * the service would build them.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Schema from "effect/Schema"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import * as MemoryStorage from "../../adapters/memory/Storage.ts"
import type { CustomerResponse } from "../../core/customer/Handler.ts"
import { deriveProviderIdempotencyKey } from "../../core/Idempotency.ts"
import { encodeBody, freshNonce, type Purpose, sign, type SigningKeys } from "../../core/Signing.ts"
import { verifyAndDecode } from "../../core/Verification.ts"
import { cipherLayer } from "../support/storage.ts"

export const workspaceId = "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20"
export const connectionId = "6a2e9c14-8b3d-4f5a-a1c7-2d4e6f8a0b13"
export const start = Date.UTC(2026, 10, 22, 10, 15, 30)
export const secrets = {
  actionSigning: Redacted.make("as_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e"),
  completion: Redacted.make("cs_8e6c4a2f0d1b3e5c7a9f1d3b5e7c9a1f3d5b7e9c")
}
export const wrongSecrets = {
  actionSigning: Redacted.make("as_000000000000000000000000000000000000000000"),
  completion: Redacted.make("cs_000000000000000000000000000000000000000000")
}

export const storageLayer = () => Layer.merge(MemoryStorage.layer.pipe(Layer.provideMerge(cipherLayer)), NodeCrypto.layer)

export const decoder = new TextDecoder()
export const jsonOf = (response: CustomerResponse): any => JSON.parse(decoder.decode(response.body))

export const executionBody = (actionRequestId: string) =>
  Effect.map(deriveProviderIdempotencyKey(workspaceId, actionRequestId), (providerIdempotencyKey) => ({
    type: "service.customer_action.execute",
    protocolVersion: 1,
    workspaceId,
    accountId: "acct_42",
    actionRequestId,
    action: {
      id: "1c3e5a7b-9d2f-4b6a-8c0e-2f4a6b8c0d1e",
      key: "extend_trial_14",
      operation: {
        family: "extend_trial",
        extensionDays: 14,
        trialRef: { entityKey: "sub_1", entityKind: "subscription", version: 3 }
      },
      safeTerms: { confirmation: "Extend your trial by 14 days?", label: "Extend trial" }
    },
    actor: { authority: "billing_owner", roleKey: "owner", subjectId: "user_7" },
    binding: {
      decisionId: "2d4f6a8b-0c1e-4a3b-9d5f-7e9a1b3c5d7f",
      journeyId: "3e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a",
      offerId: "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b",
      publishedVersionId: "5a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c"
    },
    providerIdempotencyKey,
    requestedAt: "2026-11-22T10:15:30.000Z",
    requestNonce: ""
  }))

export type Body = Record<string, unknown>

/** Signs one execution delivery as the service would: a fresh nonce, echoed in `requestNonce`. */
export const executionDelivery = (
  keys: SigningKeys,
  body: Body,
  options: { readonly idempotencyKey?: string; readonly mutate?: (body: Body) => Body } = {}
) =>
  Effect.gen(function*() {
    const nonce = yield* freshNonce
    const withNonce = { ...body, requestNonce: nonce }
    const bytes = encodeBody(options.mutate ? options.mutate(withNonce) : withNonce)
    const headers = yield* sign({ purpose: "dispatch_request", keys, body: bytes, nonce })
    return {
      nonce,
      headers: {
        ...headers,
        "x-service-customer-action-idempotency-key": options.idempotencyKey ?? (body.providerIdempotencyKey as string)
      } as Record<string, string>,
      body: bytes
    }
  })

export const handshakeDelivery = (keys: SigningKeys, challenge?: string) =>
  Effect.gen(function*() {
    const nonce = yield* freshNonce
    const bytes = encodeBody({
      challenge: challenge ?? nonce,
      connectionId,
      protocolVersion: 1,
      sentAt: "2026-11-22T10:15:30.000Z",
      type: "service.customer_action.handshake",
      workspaceId
    })
    const headers = yield* sign({ purpose: "handshake_request", keys, body: bytes, nonce })
    return { nonce, headers: { ...headers } as Record<string, string>, body: bytes }
  })

export const verifyResponse = <A, I>(schema: Schema.Schema<A, I, never>, purpose: Purpose, keys: SigningKeys, response: CustomerResponse) =>
  Effect.map(
    verifyAndDecode(schema, { purpose, keys, headers: response.headers, body: response.body, nonceScope: "service" }),
    (verified) => verified.body
  )


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


const root = fileURLToPath(new URL("../..", import.meta.url))

/** A kit in a child process (`test/customer/kitProcess.ts`) and every line it printed so far. */
export interface KitProcess {
  readonly child: ChildProcess
  readonly lines: Array<string>
  readonly port: Promise<number>
  readonly exited: Promise<NodeJS.Signals | number | null>
}

/**
 * Starts `test/customer/kitProcess.ts` in one process (`node --import tsx`, so SIGKILL kills the kit
 * itself); `env` adds its test switches (`ACCORD_TEST_HOLD_EXECUTION`).
 */
export const spawnKit = (args: ReadonlyArray<string>, killAfterClaim: boolean, env: Record<string, string> = {}): KitProcess => {
  const child = spawn(process.execPath, ["--import", "tsx", "test/customer/kitProcess.ts", ...args], {
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
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on("exit", (code, signal) => resolve(signal ?? code)))
  return { child, lines, port, exited }
}
