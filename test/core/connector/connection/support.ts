/**
 * Connection setup tests: the real server (`runtimes/Server.ts` `start`) on loopback over real SQL
 * storage (PGlite, and PostgreSQL when `DATABASE_URL` is set), and customer peers on loopback: the
 * customer kit itself, or a peer that answers the handshake wrongly on purpose.
 */
import { createServer, type IncomingMessage, type Server as NodeServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type * as SqlClient from "@effect/sql/SqlClient"
import { describe, layer, type Vitest } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import { makeWebHandler, type WebHandlerOptions } from "../../../../adapters/customer/WebHandler.ts"
import * as MemoryReadiness from "../../../../adapters/memory/Readiness.ts"
import * as DnsResolver from "../../../../adapters/transport/DnsResolver.ts"
import * as HttpTransport from "../../../../adapters/transport/HttpTransport.ts"
import * as MemoryActionLedger from "../../../../adapters/memory/ActionLedger.ts"
import type { Cipher } from "../../../../core/protocol/Cipher.ts"
import { register } from "../../../../core/connector/Connection.ts"
import type { Resolver } from "../../../../core/connector/Endpoint.ts"
import type { ConnectorTransport } from "../../../../core/ports/ConnectorTransport.ts"
import { Crypto } from "../../../../core/ports/Crypto.ts"
import {
  type HandshakeRequest,
  HandshakeRequest as HandshakeRequestSchema
} from "../../../../core/protocol/messages/Handshake.ts"
import * as MemoryNonceStore from "../../../../adapters/memory/NonceStore.ts"
import {
  computeSignature,
  encodeBody,
  freshNonce,
  headerNames,
  importSigningKeys,
  type SigningKeys
} from "../../../../core/protocol/Signing.ts"
import { formatTimestamp } from "../../../../core/protocol/Timestamp.ts"
import { verifyAndDecode } from "../../../../core/protocol/Verification.ts"
import * as Server from "../../../../runtimes/Server.ts"
import { configFrom, type Reply, request } from "../../../support/http.ts"
import { type StoredServices, storageVariants } from "../../../support/storage.ts"
import { publishCatalogHttp } from "../../../support/catalog.ts"

/** The SQL storage variants available here (PGlite always, PostgreSQL with `DATABASE_URL`). */
export const sqlVariants = storageVariants.filter((variant) => variant.name !== "memory")

/** What a test on shared storage has in its context. */
export type StorageContext = StoredServices | Cipher | SqlClient.SqlClient

/**
 * Registers `tests` once per SQL storage variant, on ONE store per variant (PGlite takes seconds to
 * boot); tests keep apart by using workspaces of their own. `live`: the real clock (else TestClock).
 */
export const onEachStorage = (
  name: string,
  options: { readonly live: boolean },
  tests: (it: Vitest.MethodsNonLive<StorageContext, boolean>) => void
): void => {
  for (const variant of sqlVariants) {
    describe.skipIf(!variant.available)(`${name} (${variant.name})`, () => {
      layer(
        Layer.suspend(() => variant.sqlLayer!()),
        { excludeTestServices: options.live, timeout: "60 seconds" }
      )(tests)
    })
  }
}

export const actionSigningSecret = "as_9d1f3b5e7a9c1e3f5b7d9a1c3e5f7b9d1a3c5e7f"
export const completionSecret = "cs_2b4d6f8a0c2e4a6c8e0b2d4f6a8c0e2b4d6f8a0c"

export interface Service {
  readonly url: string
  readonly workspaceId: string
  readonly adminKey: string
  readonly connectorUrl: string
  readonly logs: ReadonlyArray<string>
}

/**
 * Starts the server on the test's storage for a fresh workspace (its bootstrap administrator key),
 * with insecure endpoints allowed (loopback peers over `http`).
 */
export const startService = (
  options: { readonly handshakeTimeoutMillis?: number } = {}
): Effect.Effect<Service, never, Scope.Scope | StoredServices | Cipher> =>
  Effect.gen(function* () {
    const storage = yield* Effect.context<StoredServices | Cipher>()
    const workspaceId = globalThis.crypto.randomUUID()
    const adminKey = `test-admin-${globalThis.crypto.randomUUID()}`
    const config = yield* configFrom({
      ACCORD_DATA_DIR: "memory://",
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
      ACCORD_ALLOW_INSECURE_ENDPOINTS: "1"
    })
    const logs: Array<string> = []
    const capture = Logger.make((entry) => {
      logs.push(Logger.logfmtLogger.log(entry))
    })
    const address = yield* Server.start(
      config,
      NodeHttpServer.layerServer(createServer, { port: 0, host: "127.0.0.1" }),
      Layer.merge(Layer.succeedContext(storage), MemoryReadiness.layerMemory),
      options
    ).pipe(Effect.locally(FiberRef.currentLoggers, HashSet.make(capture)))
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    const url = `http://127.0.0.1:${address.port}`
    // Every intake binds to the fixture catalog: publish it with the workspace.
    yield* Effect.promise(() => publishCatalogHttp(url, workspaceId, adminKey))
    return { url, workspaceId, adminKey, connectorUrl: `${url}/api/admin/v1/workspaces/${workspaceId}/connector`, logs }
  }).pipe(Effect.orDie)

export const send = (url: string, method: string, key: string | undefined, body?: unknown): Effect.Effect<Reply> =>
  request(url, {
    method,
    headers: {
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
  })

/** Registers `endpoint` with the default secrets; fails the test unless it is a 201. */
export const registerEndpoint = (
  service: Service,
  endpoint: string,
  secrets: { readonly actionSigningSecret: string; readonly completionSecret: string } = {
    actionSigningSecret,
    completionSecret
  }
): Effect.Effect<{ readonly connectionId: string; readonly revision: number }> =>
  Effect.flatMap(send(service.connectorUrl, "PUT", service.adminKey, { endpoint, ...secrets }), (reply) =>
    reply.status === 201
      ? Effect.succeed(reply.json)
      : Effect.dieMessage(`PUT /connector: ${reply.status} ${reply.text}`)
  )

export const runCheck = (service: Service): Effect.Effect<Reply> =>
  send(`${service.connectorUrl}/check`, "POST", service.adminKey)

export const showConnector = (service: Service): Effect.Effect<Reply> =>
  send(service.connectorUrl, "GET", service.adminKey)

/** Issues a key of `scope` in the service's workspace. */
export const issueKey = (service: Service, scope: "ingest" | "developer:read" | "admin"): Effect.Effect<string> =>
  Effect.flatMap(
    send(`${service.url}/api/admin/v1/workspaces/${service.workspaceId}/api-keys`, "POST", service.adminKey, { scope }),
    (reply) =>
      reply.status === 201
        ? Effect.succeed(reply.json.secret as string)
        : Effect.dieMessage(`api-keys: ${reply.status}`)
  )

// ---------------------------------------------------------------------------------------------
// Loopback peers

export interface PeerRequest {
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
}

export interface PeerResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
}

const readBody = (message: IncomingMessage): Promise<Uint8Array> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    message.on("data", (chunk: Buffer) => chunks.push(chunk))
    message.on("end", () => resolve(new Uint8Array(Buffer.concat(chunks))))
    message.on("error", reject)
  })

const headerRecord = (message: IncomingMessage): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(message.headers)) {
    if (typeof value === "string") headers[name] = value
  }
  return headers
}

const listen = (server: NodeServer): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<string>((resume) => {
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(
          Effect.succeed(
            typeof address === "object" && address !== null ? `http://127.0.0.1:${address.port}/accord/hook` : ""
          )
        )
      })
    }),
    () =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/**
 * A loopback peer whose answers come from `handler`, run on the test's runtime (so a `TestClock`
 * governs the peer's time too). Returns the endpoint URL.
 */
export const servePeer = <R>(
  handler: (request: PeerRequest) => Effect.Effect<PeerResponse, never, R>
): Effect.Effect<string, never, Scope.Scope | R> =>
  Effect.gen(function* () {
    const run = Runtime.runPromise(yield* Effect.runtime<R>())
    const server = createServer((message, response) => {
      readBody(message)
        .then((body) => run(handler({ headers: headerRecord(message), body })))
        .then(
          (answer) => {
            response.writeHead(answer.status, answer.headers)
            response.end(answer.body)
          },
          () => {
            response.writeHead(500)
            response.end()
          }
        )
    })
    return yield* listen(server)
  })

/** A Fetch handler (the customer kit's `makeWebHandler`) served on loopback. */
export const serveFetch = (
  fetchHandler: (request: Request) => Promise<Response>
): Effect.Effect<string, never, Scope.Scope> =>
  Effect.gen(function* () {
    const server = createServer((message, response) => {
      readBody(message)
        .then((body) =>
          fetchHandler(
            new Request(`http://127.0.0.1${message.url ?? "/"}`, {
              method: message.method ?? "GET",
              headers: headerRecord(message),
              ...(body.length > 0 ? { body } : {})
            })
          )
        )
        .then(async (answer) => {
          const headers: Record<string, string> = {}
          answer.headers.forEach((value, name) => {
            headers[name] = value
          })
          response.writeHead(answer.status, headers)
          response.end(new Uint8Array(await answer.arrayBuffer()))
        })
        .catch(() => {
          response.writeHead(500)
          response.end()
        })
    })
    return yield* listen(server)
  })

/**
 * The customer kit (`makeWebHandler`) for `workspaceId`, with the default secrets, served on
 * loopback; `options` are the kit's own (revision, payment proof).
 */
export const kitPeer = (
  workspaceId: string,
  options: Omit<WebHandlerOptions, "workspaceId" | "secrets"> = {}
): Effect.Effect<string, never, Scope.Scope> =>
  Effect.gen(function* () {
    const kit = yield* Effect.acquireRelease(
      Effect.promise(() =>
        makeWebHandler(Layer.mergeAll(NodeCrypto.layer, MemoryNonceStore.layer, MemoryActionLedger.layerMemory), {
          ...options,
          workspaceId,
          secrets: { actionSigning: Redacted.make(actionSigningSecret), completion: Redacted.make(completionSecret) }
        })
      ),
      (kit) => Effect.promise(() => kit.dispose())
    )
    return yield* serveFetch(kit.fetch)
  })

export const keysOf = (secret: string): Effect.Effect<SigningKeys> =>
  Effect.provide(
    importSigningKeys({ actionSigning: Redacted.make(secret), completion: Redacted.make(completionSecret) }),
    NodeCrypto.layer
  )

/** The handshake the service sent, as a peer saw it. */
export interface SeenHandshake {
  readonly request: HandshakeRequest
  readonly headers: Readonly<Record<string, string>>
}

export interface AckPeerOptions {
  /** The secret the peer verifies requests with (the service's, by default). */
  readonly secret?: string
  /** Changes the acknowledgement before it is signed. */
  readonly ack?: (ack: Record<string, unknown>, request: HandshakeRequest) => Record<string, unknown>
  /** The response status (200 by default). */
  readonly status?: number
  /** Signs the response with this secret instead. */
  readonly signingSecret?: string
  /** Moves the response timestamp. */
  readonly timestampShiftMillis?: number
  /** Signs and sends these bytes instead of an acknowledgement. */
  readonly rawBody?: string
  /** Extra response headers (after the signed ones). */
  readonly headers?: Readonly<Record<string, string>>
  /** Waits before answering. */
  readonly delay?: Effect.Effect<void>
  /** Answers with this earlier response instead of a fresh one, when set. */
  readonly replay?: () => PeerResponse | undefined
  /** Called with every verified request and the response sent. */
  readonly onExchange?: (seen: SeenHandshake, response: PeerResponse) => void
}

/**
 * A customer peer that verifies the service's handshake like the kit does (purpose, freshness,
 * nonce, HMAC, exact shape) and answers a signed `handshake_ack`, or a deliberately wrong one.
 */
export const ackPeer = (options: AckPeerOptions = {}): Effect.Effect<string, never, Scope.Scope> =>
  Effect.gen(function* () {
    const verifyKeys = yield* keysOf(options.secret ?? actionSigningSecret)
    const signKeys = yield* keysOf(options.signingSecret ?? options.secret ?? actionSigningSecret)
    const nonces = MemoryNonceStore.context()
    return yield* servePeer((incoming) =>
      Effect.gen(function* () {
        const verified = yield* Effect.either(
          verifyAndDecode(HandshakeRequestSchema, {
            purpose: "handshake_request",
            keys: verifyKeys,
            headers: incoming.headers,
            body: incoming.body,
            nonceScope: "peer"
          })
        )
        if (verified._tag === "Left") {
          return {
            status: 401,
            headers: { "content-type": "application/json" },
            body: encodeBody({ error: verified.left._tag })
          }
        }
        const seen = { request: verified.right.body, headers: incoming.headers }
        if (options.delay !== undefined) yield* options.delay
        const replayed = options.replay?.()
        if (replayed !== undefined) {
          options.onExchange?.(seen, replayed)
          return replayed
        }
        const request = verified.right.body
        const base: Record<string, unknown> = {
          challenge: request.challenge,
          connectionId: request.connectionId,
          protocolVersion: 1,
          status: "ready",
          type: "service.customer_action.handshake_ack",
          workspaceId: request.workspaceId
        }
        const body =
          options.rawBody !== undefined
            ? new TextEncoder().encode(options.rawBody)
            : encodeBody(options.ack?.(base, request) ?? base)
        const timestamp = formatTimestamp(
          (yield* Effect.clockWith((clock) => clock.currentTimeMillis)) + (options.timestampShiftMillis ?? 0)
        )
        const nonce = yield* freshNonce
        const signature = yield* computeSignature(signKeys.actionSigning, "handshake_response", timestamp, nonce, body)
        const response: PeerResponse = {
          status: options.status ?? 200,
          headers: {
            "content-type": "application/json",
            [headerNames.version]: "1",
            [headerNames.timestamp]: timestamp,
            [headerNames.nonce]: nonce,
            [headerNames.signature]: signature,
            ...options.headers
          },
          body
        }
        options.onExchange?.(seen, response)
        return response
      }).pipe(Effect.provide(nonces), Effect.provide(NodeCrypto.layer))
    )
  })

/** A peer that answers every request with a fixed status, headers and body. */
export const fixedPeer = (
  status: number,
  headers: Record<string, string> = {},
  body = ""
): Effect.Effect<string, never, Scope.Scope> =>
  servePeer(() => Effect.succeed({ status, headers, body: new TextEncoder().encode(body) }))

/** Outbound calls (the real transport, insecure endpoints allowed) and crypto, for core-level tests. */
export const outbound: Layer.Layer<Crypto | ConnectorTransport | Resolver> = Layer.mergeAll(
  NodeCrypto.layer,
  HttpTransport.layer({ allowInsecure: true }),
  DnsResolver.layer
)

/** Registers `endpoint` with the default secrets through the core (no server). */
export const registerCore = (workspaceId: string, endpoint: string) =>
  register(
    {
      workspaceId,
      endpoint,
      secrets: { actionSigning: Redacted.make(actionSigningSecret), completion: Redacted.make(completionSecret) }
    },
    { allowInsecure: true }
  )

export const sha256Hex = (bytes: Uint8Array): Effect.Effect<string> =>
  Effect.provide(
    Effect.flatMap(Crypto, (crypto) => crypto.sha256Hex(bytes)),
    NodeCrypto.layer
  )
