/**
 * `accord workspace create` and `accord keys create`: a new workspace with its first administrator
 * key, and further keys (and `accord events sweep`, the on-demand event retention sweep), written to the configured storage (`DATABASE_URL`, else the embedded
 * database in `ACCORD_DATA_DIR`), for scripts and CI, printed once as JSON. The secret exists only
 * in the answer; storage keeps its SHA-256 (docs/decisions.md, "Secret handling").
 *
 * The embedded database has one writer (`adapters/pglite/DataDirectoryLock.ts`). While a server
 * holds its data directory, `keys create` goes through that server's API when it is given
 * `ACCORD_SERVICE_URL` and `ACCORD_ADMIN_KEY`, and otherwise refuses with the fix in one line; a
 * command never opens a copy of a database another process is writing.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { resolve } from "node:path"
import { issue, type IssuedApiKey } from "../../core/access/ApiKeys.ts"
import * as Retention from "../../core/ingest/Retention.ts"
import { type ApiKeyScope, ApiKeyStore } from "../../core/ports/ApiKeyStore.ts"
import type { EventStore, RetentionSweep } from "../../core/ports/EventStore.ts"
import type { Cipher } from "../../core/protocol/Cipher.ts"
import type { Crypto } from "../../core/ports/Crypto.ts"
import { canonicalUuid, randomUuid } from "../../core/protocol/Uuid.ts"
import * as AccordConfig from "../config/AccordConfig.ts"
import * as NodeCrypto from "../crypto/NodeCrypto.ts"
import { createApiKey } from "../http/api/ApiKeysApi.ts"
import { adminWorkspacePath } from "../http/Paths.ts"
import * as DataDirectoryLock from "../pglite/DataDirectoryLock.ts"
import { transport } from "../sdk/internal/declared.ts"
import * as Database from "../sql/Database.ts"
import { UsageError } from "./CliError.ts"
import * as Environment from "./Environment.ts"

/**
 * How the CLI opens the configured storage: the server's own `storageLayer` (passed in by the
 * runtime, so there is one place storage is chosen).
 */
export type StorageFor = (
  config: AccordConfig.AccordConfig
) => Layer.Layer<ApiKeyStore | EventStore, { readonly message: string }, Cipher | Crypto>

/**
 * A key as printed: the secret, shown this once.
 */
export interface PrintedKey {
  readonly id: string
  readonly workspaceId: string
  readonly scope: ApiKeyScope
  readonly name: string | null
  readonly secret: string
}

const printed = ({ record, secret }: IssuedApiKey): PrintedKey => ({
  id: record.id,
  workspaceId: record.workspaceId,
  scope: record.scope,
  name: record.name,
  secret: Redacted.value(secret)
})

const toUsageError = (error: unknown): UsageError => {
  if (error instanceof UsageError) return error
  const { _tag, message } = error as { readonly _tag?: string; readonly message?: string }
  return new UsageError({ message: `storage: ${message || _tag || "unavailable"}` })
}

/** The process holding the embedded database of `config`, when another one holds it now. */
const embeddedHolder = (config: AccordConfig.AccordConfig) => {
  const storage = Database.storageFrom(config)
  return storage._tag === "Pglite" && !storage.dataDir.startsWith("memory://")
    ? Effect.map(
        DataDirectoryLock.holder(storage.dataDir),
        Option.map((held) => ({ ...held, dataDir: storage.dataDir }))
      )
    : Effect.succeed(Option.none())
}

/** The refusal while another process holds the embedded database: one line, with its fix. */
const lockedRefusal = (held: { readonly dataDir: string; readonly pid: number | undefined }, fix: string) =>
  new UsageError({
    message:
      `the embedded database in ${resolve(held.dataDir)} is open in ` +
      `${held.pid === undefined ? "another process" : `process ${held.pid}`} (a running Accord server?): ${fix}`
  })

const loadConfig = AccordConfig.load.pipe(Effect.mapError((error) => new UsageError({ message: error.message })))

const withStorage = <A>(
  storageFor: StorageFor,
  use: Effect.Effect<
    A,
    UsageError | { readonly _tag: "StorageError"; readonly message: string },
    ApiKeyStore | EventStore | Crypto
  >
): Effect.Effect<A, UsageError> =>
  Effect.gen(function* () {
    const config = yield* loadConfig
    const masterKey = yield* AccordConfig.resolveMasterKey(config).pipe(
      Effect.provide(NodeCrypto.layer),
      Effect.mapError((error) => new UsageError({ message: error.message }))
    )
    const storage = storageFor(config).pipe(
      Layer.provide(AccordConfig.layerCipher(masterKey)),
      Layer.provideMerge(NodeCrypto.layer)
    )
    // the storage's start checks (the master-key guard) ran when it was built: a new key is kept now
    return yield* Effect.zipRight(AccordConfig.persistMasterKey(masterKey), use).pipe(
      Effect.provide(storage),
      Effect.scoped,
      Effect.mapError(toUsageError)
    )
  })

/**
 * Creates a workspace and its first administrator key. Refused while another process holds the
 * embedded database: no API creates workspaces (a server creates its first one from
 * `ACCORD_BOOTSTRAP_*`).
 */
export const createWorkspace = (
  storageFor: StorageFor,
  name: string | null
): Effect.Effect<{ readonly workspaceId: string; readonly adminKey: PrintedKey }, UsageError> =>
  Effect.gen(function* () {
    const held = yield* embeddedHolder(yield* loadConfig)
    if (Option.isSome(held)) {
      return yield* lockedRefusal(
        held.value,
        "stop it, then run this again (or start it with ACCORD_BOOTSTRAP_WORKSPACE_ID and ACCORD_BOOTSTRAP_ADMIN_KEY)"
      )
    }
    return yield* withStorage(
      storageFor,
      Effect.gen(function* () {
        const workspaceId = yield* randomUuid
        yield* (yield* ApiKeyStore).ensureWorkspace(workspaceId, yield* Clock.currentTimeMillis)
        const key = yield* issue({ workspaceId, scope: "admin", name: name ?? "first admin" })
        return { workspaceId, adminKey: printed(key) }
      })
    )
  })

/**
 * `accord events sweep`: one event retention sweep now (`Retention.sweep`, with the configured
 * `ACCORD_EVENT_RETENTION_DAYS`), what it did printed as JSON. A running server sweeps hourly on
 * its own; while one holds the embedded database, this refuses.
 */
export const sweepEvents: (storageFor: StorageFor) => Effect.Effect<RetentionSweep, UsageError> = (storageFor) =>
  Effect.gen(function* () {
    const config = yield* loadConfig
    const held = yield* embeddedHolder(config)
    if (Option.isSome(held)) return yield* lockedRefusal(held.value, "it sweeps hourly on its own; or stop it first")
    return yield* withStorage(storageFor, Retention.sweep(config.eventRetention))
  })

/** What `keys create` asks for. */
export interface KeyRequest {
  readonly workspaceId: string
  readonly scope: ApiKeyScope
  readonly name: string | null
}

/**
 * Creates a key of `scope` in an existing workspace: in the configured storage, or, while a
 * running server holds the embedded database, through that server's API
 * (`POST /api/admin/v1/workspaces/{workspaceId}/api-keys`) with `ACCORD_SERVICE_URL` and an admin
 * key in `ACCORD_ADMIN_KEY`.
 */
export const createKey = (storageFor: StorageFor, request: KeyRequest): Effect.Effect<PrintedKey, UsageError> =>
  Effect.gen(function* () {
    const workspaceId = canonicalUuid(request.workspaceId)
    if (Option.isNone(workspaceId)) {
      return yield* new UsageError({ message: "--workspace must be a workspace id (a UUID)" })
    }
    const input = { ...request, workspaceId: workspaceId.value }
    const held = yield* embeddedHolder(yield* loadConfig)
    if (Option.isSome(held)) {
      const serviceUrl = yield* Environment.optional("ACCORD_SERVICE_URL")
      const adminKey = yield* Environment.optional("ACCORD_ADMIN_KEY")
      if (Option.isNone(serviceUrl) || Option.isNone(adminKey)) {
        return yield* lockedRefusal(
          held.value,
          "set ACCORD_SERVICE_URL and ACCORD_ADMIN_KEY (an admin key) to create the key through its API, or stop it first"
        )
      }
      return yield* createKeyThroughApi(yield* Environment.serviceUrl, Redacted.make(adminKey.value), input)
    }
    return yield* withStorage(
      storageFor,
      Effect.gen(function* () {
        if (!(yield* (yield* ApiKeyStore).workspaceExists(input.workspaceId))) {
          return yield* new UsageError({ message: `no workspace ${input.workspaceId} in this storage` })
        }
        return printed(yield* issue(input))
      })
    )
  })

/** The served `createApiKey` endpoint, under the admin workspace prefix, as the server serves it. */
const keysDeclaration = HttpApi.make("apiKeys").add(
  HttpApiGroup.make("apiKeys").add(createApiKey).prefix(adminWorkspacePath)
)

/**
 * One `POST /api-keys` to the running server: creating a key is not idempotent, so a failed
 * attempt is reported, never repeated.
 */
const createKeyThroughApi = (
  serviceUrl: string,
  adminKey: Redacted.Redacted<string>,
  input: KeyRequest
): Effect.Effect<PrintedKey, UsageError> =>
  Effect.gen(function* () {
    const { attempt, httpClient } = transport({
      credential: adminKey,
      acceptJson: true,
      timeoutMillis: 10_000,
      fallbackDetail: (status) => `the service answered ${status}`
    })
    const client = yield* HttpApiClient.group(keysDeclaration, { group: "apiKeys", httpClient, baseUrl: serviceUrl })
    const result = yield* attempt(
      client.createApiKey({
        path: { workspaceId: input.workspaceId },
        payload: { scope: input.scope, ...(input.name === null ? {} : { name: input.name }) },
        withResponse: true
      })
    )
    switch (result._tag) {
      case "Done":
        return {
          id: result.value.id,
          workspaceId: input.workspaceId,
          scope: result.value.scope,
          name: result.value.name,
          secret: result.value.secret
        }
      case "Refused":
        return yield* new UsageError({
          message: `the service at ${serviceUrl} refused the key (${result.problem.status} ${result.problem.code}): ${result.problem.detail}`
        })
      case "Retry":
        return yield* new UsageError({ message: `cannot create the key through ${serviceUrl} (${result.reason})` })
    }
  })
