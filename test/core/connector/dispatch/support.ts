/**
 * Test peers for the service side of the connector: the customer kit served over real HTTP on
 * loopback with its own storage, behind a front that can misbehave on purpose.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import { toWebHandler, type WebHandler } from "../../../../adapters/customer/WebHandler.ts"
import * as MemoryStorage from "../../../../adapters/memory/Storage.ts"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import type { Cipher } from "../../../../core/protocol/Cipher.ts"
import type { StoragePorts } from "../../../../core/ports/StoragePorts.ts"
import { ConnectionStore } from "../../../../core/ports/ConnectionStore.ts"
import { CapabilityRegistry } from "../../../../core/ports/CapabilityRegistry.ts"
import type { PaymentMode } from "../../../../core/protocol/messages/Common.ts"
import type { ActionIntake } from "../../../../core/connector/Action.ts"
import type { Crypto } from "../../../../core/ports/Crypto.ts"
import { executeOutboxKind, makeCustomerHandler } from "../../../../core/customer/Handler.ts"
import type { PaymentReaderService, PaymentReading } from "../../../../core/customer/Reconciliation.ts"
import type { PaymentReconciliationRequest } from "../../../../core/protocol/messages/Reconciliation.ts"
import { Outbox } from "../../../../core/ports/Outbox.ts"
import {
  computeSignature,
  encodeBody,
  freshNonce,
  importSigningKeys,
  type Purpose,
  sign
} from "../../../../core/protocol/Signing.ts"
import { connectorSecretRef, SecretVault } from "../../../../core/ports/SecretVault.ts"
import { formatTimestamp } from "../../../../core/protocol/Timestamp.ts"
import { cipherLayer } from "../../../support/storage.ts"
import { publishCatalog } from "../../../support/catalog.ts"
import { intakeInput, paymentIntake } from "../../../support/deliveries.ts"

export const workspaceId = "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20"
export const connectionId = "6a2e9c14-8b3d-4f5a-a1c7-2d4e6f8a0b13"
export const secrets = {
  actionSigning: Redacted.make("as_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e"),
  completion: Redacted.make("cs_8e6c4a2f0d1b3e5c7a9f1d3b5e7c9a1f3d5b7e9c")
}

export { intakeInput }

/**
 * Records fresh capability evidence for `revision` with these modes (as a signed handshake proof
 * would), under provider connection generation `generation`; the payment gate needs it before a
 * Payment action is taken or delivered.
 */
export const enablePaymentModes = (
  revision: number,
  modes: ReadonlyArray<PaymentMode> = ["one_time_purchase"],
  generation = "gen-1"
) =>
  Effect.flatMap(CapabilityRegistry, (registry) =>
    registry.record({
      connectionId,
      revision,
      modes,
      livemode: false,
      connectedAccountReferenceHash: "a".repeat(64),
      responseFingerprint: globalThis.crypto.randomUUID(),
      providerConnectionGeneration: generation,
      recordedAt: Date.now(),
      expiresAt: Date.now() + 3_600_000
    })
  )

/**
 * Registers `endpoint` as the workspace's active revision with the test secrets (or another
 * workspace's connection and secrets).
 */
export const connect = (
  endpoint: string,
  as: {
    readonly workspaceId: string
    readonly connectionId: string
    readonly secrets: {
      readonly actionSigning: Redacted.Redacted<string>
      readonly completion: Redacted.Redacted<string>
    }
  } = { workspaceId, connectionId, secrets }
) =>
  Effect.gen(function* () {
    const store = yield* ConnectionStore
    const vault = yield* SecretVault
    const now = Date.now()
    const { revision } = yield* store.registerRevision({
      workspaceId: as.workspaceId,
      connectionId: as.connectionId,
      endpoint,
      now
    })
    yield* vault.put(connectorSecretRef(as.connectionId, revision, "actionSigning"), as.secrets.actionSigning, now)
    yield* vault.put(connectorSecretRef(as.connectionId, revision, "completion"), as.secrets.completion, now)
    yield* store.activate({ connectionId: as.connectionId, revision, now })
    // Every intake binds to the fixture catalog: publish it with the connection.
    yield* publishCatalog(as.workspaceId)
    return revision
  })

/** How the front answers; `good` relays the kit's answer unchanged. */
export type PeerMode =
  | "good"
  | "wrong_signature"
  | "stale_response"
  | "extra_field"
  | "redirect"
  | "slow"
  | "reset_after_read"
  | "status_500"
  | "other_key"
  | "unsigned"
  | "continuation"
  | "provider_reference"

/** Misbehaving peers: each must end in an unknown outcome, then accepted with one execution. */
export const misbehavingModes: ReadonlyArray<PeerMode> = [
  "wrong_signature",
  "stale_response",
  "extra_field",
  "redirect",
  "slow",
  "reset_after_read",
  "status_500",
  "other_key"
]

export interface Peer {
  readonly url: string
  mode: PeerMode
  /** Requests that reached the front. */
  requests: number
  /** The signed headers and echoed nonce of every execution delivery received. */
  readonly seen: Array<{
    readonly key: string
    readonly nonce: string
    readonly signature: string
    readonly requestNonce: string
  }>
  /** Executions the kit has queued (its `customer.execute` outbox items): one per claimed request. */
  readonly executions: () => Promise<number>
  readonly kit: WebHandler
  /** In `continuation` mode: the continuation added to the kit's acknowledgement. */
  continuation: (request: { readonly actionRequestId: string }) => unknown
  /** In `provider_reference` mode: the raw `providerReference` added to the kit's acknowledgement. */
  providerReference: string
  /** Runs after the kit has answered an execution and before the front sends the answer on. */
  beforeAnswer:
    | ((request: { readonly actionRequestId: string; readonly providerIdempotencyKey: string }) => Promise<void>)
    | undefined
  readonly close: () => Promise<void>
}

const readBody = (req: IncomingMessage): Promise<Uint8Array> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(new Uint8Array(Buffer.concat(chunks))))
    req.on("error", reject)
  })

const run = <A>(effect: Effect.Effect<A, never, Crypto>) => Effect.runPromise(Effect.provide(effect, NodeCrypto.layer))

/** Re-signs a response body with the action signing secret at `timestamp`, for `purpose`. */
const resign = (body: Uint8Array, timestamp: string, purpose: Purpose) =>
  run(
    Effect.gen(function* () {
      const keys = yield* importSigningKeys(secrets)
      const nonce = yield* freshNonce
      const signature = yield* computeSignature(keys.actionSigning, purpose, timestamp, nonce, body)
      return {
        "content-type": "application/json",
        "x-service-customer-action-version": "1",
        "x-service-customer-action-timestamp": timestamp,
        "x-service-customer-action-nonce": nonce,
        "x-service-customer-action-signature": signature
      }
    })
  )

/** The customer kit (memory storage) behind a loopback front whose behaviour the test chooses. */
export const startPeer = async (
  options: {
    readonly slowMillis?: number
    /** The kit's own storage (memory by default); never the service's database. */
    readonly storage?: Layer.Layer<StoragePorts | Cipher, unknown>
    /** Accounts whose actions the kit rejects, with this error code. */
    readonly rejectAccounts?: ReadonlyMap<string, string>
    /** The host's payment reader: the kit then answers payment reconciliation reads. */
    readonly paymentReader?: PaymentReaderService
  } = {}
): Promise<Peer> => {
  const kitLayer = Layer.mergeAll(
    options.storage ?? MemoryStorage.layer.pipe(Layer.provideMerge(cipherLayer)),
    NodeCrypto.layer
  )
  const runtime = ManagedRuntime.make(kitLayer)
  const rejectAccounts = options.rejectAccounts ?? new Map<string, string>()
  const handler = await runtime.runPromise(
    Effect.flatMap(importSigningKeys(secrets), (keys) =>
      makeCustomerHandler({
        workspaceId,
        keys,
        connectionId,
        precheck: (request) => Effect.succeed(Option.fromNullable(rejectAccounts.get(request.accountId))),
        ...(options.paymentReader !== undefined ? { paymentReader: options.paymentReader } : {})
      })
    )
  )
  const kit = toWebHandler(handler.handle)
  let server: Server
  const peer: Peer = {
    url: "",
    mode: "good",
    requests: 0,
    seen: [],
    executions: () =>
      runtime
        .runPromise(
          Effect.flatMap(Outbox, (outbox) =>
            outbox.lease({
              owner: "probe",
              now: Date.now() + 3_600_000,
              leaseMillis: 1,
              limit: 10_000,
              kinds: [executeOutboxKind]
            })
          )
        )
        .then((items) => items.length),
    kit,
    continuation: (request) => testContinuation(request.actionRequestId, "payment"),
    providerReference: "prov_ref_raw_4242",
    beforeAnswer: undefined,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
      await runtime.dispose()
    }
  }
  const respond = async (req: IncomingMessage, res: ServerResponse) => {
    peer.requests++
    const body = await readBody(req)
    const mode = peer.mode
    let purpose: Purpose = "dispatch_response"
    try {
      const parsed = JSON.parse(new TextDecoder().decode(body))
      if (parsed.type === "service.customer_action.payment_reconciliation") purpose = "payment_reconciliation_response"
      if (parsed.type === "service.customer_action.execute") {
        peer.seen.push({
          key: String(req.headers["x-service-customer-action-idempotency-key"]),
          nonce: String(req.headers["x-service-customer-action-nonce"]),
          signature: String(req.headers["x-service-customer-action-signature"]),
          requestNonce: parsed.requestNonce
        })
      }
    } catch {
      // not JSON: the kit answers it
    }
    if (mode === "redirect") {
      res.writeHead(302, { location: peer.url + "/elsewhere" }).end()
      return
    }
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value)
    const answer = await kit(new Request(peer.url, { method: "POST", headers, body }))
    const answerBody = new Uint8Array(await answer.arrayBuffer())
    if (peer.beforeAnswer !== undefined) {
      try {
        await peer.beforeAnswer(JSON.parse(new TextDecoder().decode(body)))
      } catch {
        // the hook's failure is the test's to report
      }
    }
    const answerHeaders: Record<string, string> = {}
    answer.headers.forEach((v, k) => {
      answerHeaders[k] = v
    })
    switch (mode) {
      case "good":
        res.writeHead(answer.status, answerHeaders).end(answerBody)
        return
      case "wrong_signature":
        res
          .writeHead(answer.status, { ...answerHeaders, "x-service-customer-action-signature": "v1=" + "0".repeat(64) })
          .end(answerBody)
        return
      case "unsigned": {
        const { ["x-service-customer-action-signature"]: _, ...rest } = answerHeaders
        res.writeHead(answer.status, rest).end(answerBody)
        return
      }
      case "stale_response": {
        const stale = await resign(answerBody, formatTimestamp(Date.now() - 10 * 60_000), purpose)
        res.writeHead(answer.status, stale).end(answerBody)
        return
      }
      case "extra_field":
      case "other_key":
      case "continuation":
      case "provider_reference": {
        const json = JSON.parse(new TextDecoder().decode(answerBody))
        const changed =
          mode === "extra_field"
            ? { ...json, note: "hello" }
            : mode === "other_key"
              ? { ...json, providerIdempotencyKey: "pva_" + "e".repeat(64) }
              : mode === "provider_reference"
                ? { ...json, providerReference: peer.providerReference }
                : { ...json, continuation: peer.continuation(JSON.parse(new TextDecoder().decode(body))) }
        const bytes = new TextEncoder().encode(JSON.stringify(changed))
        res.writeHead(answer.status, await resign(bytes, formatTimestamp(Date.now()), purpose)).end(bytes)
        return
      }
      case "slow":
        setTimeout(() => res.writeHead(answer.status, answerHeaders).end(answerBody), options.slowMillis ?? 1_500)
        return
      case "reset_after_read":
        req.socket.destroy()
        return
      case "status_500":
        res.writeHead(500, { "content-type": "application/json" }).end("{}")
        return
    }
  }
  server = createServer((req, res) => {
    respond(req, res).catch((error: unknown) => {
      res.destroy()
      // A request still in flight when `close` began (the server no longer listens; a
      // dispatcher's redelivery as its test ends) fails with the kit's runtime disposed under
      // it: expected, and answered by dropping the connection. Any other failure stays an
      // unhandled rejection, for the test run to report.
      if (server.listening) throw error
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  ;(peer as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/connector`
  return peer
}

/** A well-formed payment continuation expiring in 30 minutes. */
export const testContinuation = (actionRequestId: string, intent: "payment" | "setup") => ({
  kind: "provider_payment_element",
  intent,
  clientSecret: `pi_${actionRequestId.slice(0, 8)}_secret_abcdef`,
  publishableKey: "pk_test_51Accord",
  connectedAccountId: null,
  expiresAt: formatTimestamp(Date.now() + 30 * 60_000),
  allowRedirects: "never"
})

/** A one-time purchase action of the fixture catalog, with its authorization snapshot. */
export const paymentIntakeInput = (accountId = "acct_42"): ActionIntake => paymentIntake("one_time_purchase", accountId)

/** The raw provider reference (a payment intent) the test host reports for an action. */
export const providerReferenceOf = (actionRequestId: string) => `pi_raw_${actionRequestId.slice(0, 8)}`

/**
 * What the provider reports for the read's action, a one-time purchase that settled: the expected
 * amount charged and nothing refunded, its signed event seen, read now.
 */
export const chargedReading = (request: PaymentReconciliationRequest): PaymentReading => ({
  providerReference: providerReferenceOf(request.actionRequestId),
  eventId: `evt_${request.actionRequestId.slice(0, 8)}`,
  eventSignatureVerified: true,
  stateReadAt: formatTimestamp(Date.now()),
  customerBound: true,
  intent: "payment",
  paymentStatus: "succeeded",
  subscriptionState: null,
  invoicePaid: null,
  methodAttached: true,
  chargedAmountMinor: request.expected?.amountMinor ?? 0,
  refundedAmountMinor: 0,
  outcome: "succeeded"
})

/** A loopback port with nothing listening on it. */
export const closedPort = async (): Promise<number> => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** A completion body signed with the test completion secret, as the customer kit sends it. */
export const signedCompletion = (
  body: Record<string, unknown>
): Effect.Effect<{ readonly headers: Record<string, string>; readonly body: Uint8Array }> =>
  Effect.gen(function* () {
    const keys = yield* importSigningKeys(secrets)
    const bytes = encodeBody(body)
    const headers = yield* sign({ purpose: "completion", keys, body: bytes })
    return { headers: { ...headers }, body: bytes }
  }).pipe(Effect.provide(NodeCrypto.layer))
