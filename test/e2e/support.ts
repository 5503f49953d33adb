/**
 * End-to-end fixtures: the real Accord server (`runtimes/Server.ts` `start`, the whole composition)
 * on a loopback port with a bootstrapped workspace and administrator key, the connector set-up an
 * administrator does (`PUT /connector`, `POST /connector/check`), and polling for a state.
 */
import { createServer, type Server as NodeServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import { type CustomerKitSettings, makeCustomerKit } from "../../adapters/customer/Kit.ts"
import * as MemoryReadiness from "../../adapters/memory/Readiness.ts"
import * as HttpTransport from "../../adapters/transport/HttpTransport.ts"
import type { ConnectorSecrets } from "../../core/protocol/Signing.ts"
import * as Server from "../../runtimes/Server.ts"
import { intakeInput, secrets, workspaceId } from "../core/connector/dispatch/support.ts"
import { configFrom, request } from "../support/http.ts"
import type { StorageVariant } from "../support/storage.ts"
import { publishCatalogHttp } from "../support/catalog.ts"

export const adminKey = "e2e-admin-key-0123456789abcdef0123456789abcdef"
export const admin = { authorization: `Bearer ${adminKey}`, "content-type": "application/json" }

export interface Service {
  readonly base: string
  readonly port: number
  /** `/api/admin/v1/workspaces/{workspaceId}` on this server. */
  readonly ws: string
}

/**
 * Starts the server in the current scope with connector endpoints on loopback allowed. `storage`:
 * a test storage variant; without it the server opens its own storage from `env` (`ACCORD_DATA_DIR`,
 * `DATABASE_URL`), as in production. `port` 0 picks a free one.
 */
export const bootService = (
  options: { readonly storage?: StorageVariant; readonly env?: Record<string, string>; readonly port?: number } = {}
) =>
  Effect.gen(function* () {
    const config = yield* configFrom({
      ACCORD_DATA_DIR: "memory://",
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
      ACCORD_ALLOW_INSECURE_ENDPOINTS: "1",
      ...options.env
    })
    // Idle connections stay open until the client closes them: with Node's default 5 s, the server
    // could close one at the moment a test's fetch reuses it after a long pause (ECONNRESET under load).
    const listen = NodeHttpServer.layerServer(() => Object.assign(createServer(), { keepAliveTimeout: 0 }), {
      port: options.port ?? 0,
      host: "127.0.0.1"
    })
    const address =
      options.storage === undefined
        ? yield* Server.start(config, listen)
        : yield* Server.start(
            config,
            listen,
            Layer.merge(
              Layer.succeedContext(yield* Layer.build(Layer.mergeAll(options.storage.layer(), NodeCrypto.layer))),
              MemoryReadiness.layerMemory
            )
          )
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    const base = `http://127.0.0.1:${address.port}`
    // Every intake binds to the fixture catalog: publish it (a restart finds it published: 409).
    yield* Effect.promise(() => publishCatalogHttp(base, workspaceId, adminKey))
    return { base, port: address.port, ws: `${base}/api/admin/v1/workspaces/${workspaceId}` } satisfies Service
  })

/** `PUT /connector` with `endpoint` and `secrets`: the new pending revision. */
export const register = (service: Service, endpoint: string, secrets: ConnectorSecrets) =>
  Effect.map(
    request(`${service.ws}/connector`, {
      method: "PUT",
      headers: admin,
      body: JSON.stringify({
        endpoint,
        actionSigningSecret: Redacted.value(secrets.actionSigning),
        completionSecret: Redacted.value(secrets.completion)
      })
    }),
    (registered) => {
      assert.strictEqual(registered.status, 201, registered.text)
      return registered.json as { readonly connectionId: string; readonly revision: number; readonly state: "pending" }
    }
  )

/** `POST /connector/check`: the handshake against the pending (else active) revision. */
export const check = (service: Service) =>
  Effect.map(request(`${service.ws}/connector/check`, { method: "POST", headers: admin, body: "{}" }), (checked) => {
    assert.strictEqual(checked.status, 200, checked.text)
    return checked.json as { readonly revision: number; readonly state: string; readonly problem?: string }
  })

/** Registers `endpoint` and runs the check, which must activate it. */
export const connect = (service: Service, endpoint: string, secrets: ConnectorSecrets) =>
  Effect.gen(function* () {
    const registered = yield* register(service, endpoint, secrets)
    const checked = yield* check(service)
    assert.strictEqual(checked.state, "active", JSON.stringify(checked))
    assert.strictEqual(checked.revision, registered.revision)
    // The fixture catalog every intake binds to (already published by `bootService`: 409, fine).
    yield* Effect.promise(() => publishCatalogHttp(service.base, workspaceId, adminKey))
    return registered
  })

/** Polls `probe` every 50 ms until `done`; dies naming `what` after 600 polls (30 s and more). */
export const waitFor = <A, E, R>(probe: Effect.Effect<A, E, R>, done: (a: A) => boolean, what: string) =>
  Effect.gen(function* () {
    let last: A | undefined
    for (let i = 0; i < 600; i++) {
      const value = yield* probe
      if (done(value)) return value
      last = value
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)?.slice(0, 2000)}`)
  })

/** `GET /action-requests/{id}` as JSON. */
export const actionStatus = (service: Service, id: string) =>
  Effect.map(request(`${service.ws}/action-requests/${id}`, { headers: admin }), (r) => r.json)

/** An action of `accountId` taken in over HTTP and accepted by the connected peer: its id and key. */
export const acceptedAction = (service: Service, accountId: string) =>
  Effect.gen(function* () {
    const created = yield* request(`${service.ws}/action-requests`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify(intakeInput(accountId))
    })
    assert.strictEqual(created.status, 202, created.text)
    const id = created.json.actionRequestId as string
    const accepted = yield* waitFor(actionStatus(service, id), (s) => s.state === "accepted", "acceptance")
    return { id, providerIdempotencyKey: accepted.providerIdempotencyKey as string }
  })

/**
 * The customer kit (`makeCustomerKit`: handler plus its execution and completion workers) with the
 * test workspace and secrets, completing to `serviceUrl`, on its own storage, served by
 * `node:http` on its own loopback port for the current scope. `settings` adds the host's parts
 * (executor, payment, reader).
 */
export const serveKit = (
  storage: StorageVariant,
  serviceUrl: string,
  settings: Pick<CustomerKitSettings, "executor" | "payment" | "paymentReader">
) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const kit = await makeCustomerKit({
        workspaceId,
        secrets,
        serviceUrl,
        allowInsecureServiceUrl: true,
        storage: storage.layer(),
        transport: HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 5_000 }),
        worker: { pollMillis: 100 },
        ...settings
      })
      const server: NodeServer = createServer(kit.nodeHandler)
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/connector`, server, kit }
    }),
    ({ kit, server }) =>
      Effect.promise(async () => {
        server.closeAllConnections()
        await new Promise<void>((resolve) => server.close(() => resolve()))
        await kit.dispose()
      })
  )
