/**
 * `accord workspace create` and `accord keys create`: a new workspace with its first administrator
 * key, and further keys, written to the configured storage (`DATABASE_URL`, else the embedded
 * database in `ACCORD_DATA_DIR`), for scripts and CI, printed once as JSON. The secret exists only
 * in the answer; storage keeps its SHA-256 (docs/decisions.md, "Secret handling").
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { issue, type IssuedApiKey } from "../../core/access/ApiKeys.ts"
import { type ApiKeyScope, ApiKeyStore } from "../../core/ports/ApiKeyStore.ts"
import type { Cipher } from "../../core/protocol/Cipher.ts"
import type { Crypto } from "../../core/ports/Crypto.ts"
import { isUuid, randomUuid } from "../../core/protocol/Uuid.ts"
import * as AccordConfig from "../config/AccordConfig.ts"
import * as NodeCrypto from "../crypto/NodeCrypto.ts"
import { UsageError } from "./CliError.ts"

/**
 * How the CLI opens the configured storage: the server's own `storageLayer` (passed in by the
 * runtime, so there is one place storage is chosen).
 */
export type StorageFor = (
  config: AccordConfig.AccordConfig
) => Layer.Layer<ApiKeyStore, { readonly message: string }, Cipher | Crypto>

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

const withStorage = <A>(
  storageFor: StorageFor,
  use: Effect.Effect<A, UsageError | { readonly _tag: "StorageError"; readonly message: string }, ApiKeyStore | Crypto>
): Effect.Effect<A, UsageError> =>
  Effect.gen(function* () {
    const config = yield* AccordConfig.load.pipe(Effect.mapError((error) => new UsageError({ message: error.message })))
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
 * Creates a workspace and its first administrator key.
 */
export const createWorkspace = (
  storageFor: StorageFor,
  name: string | null
): Effect.Effect<{ readonly workspaceId: string; readonly adminKey: PrintedKey }, UsageError> =>
  withStorage(
    storageFor,
    Effect.gen(function* () {
      const workspaceId = yield* randomUuid
      yield* (yield* ApiKeyStore).ensureWorkspace(workspaceId, yield* Clock.currentTimeMillis)
      const key = yield* issue({ workspaceId, scope: "admin", name: name ?? "first admin" })
      return { workspaceId, adminKey: printed(key) }
    })
  )

/**
 * Creates a key of `scope` in an existing workspace.
 */
export const createKey = (
  storageFor: StorageFor,
  input: { readonly workspaceId: string; readonly scope: ApiKeyScope; readonly name: string | null }
): Effect.Effect<PrintedKey, UsageError> =>
  isUuid(input.workspaceId)
    ? withStorage(
        storageFor,
        Effect.gen(function* () {
          if (!(yield* (yield* ApiKeyStore).workspaceExists(input.workspaceId))) {
            return yield* new UsageError({ message: `no workspace ${input.workspaceId} in this storage` })
          }
          return printed(yield* issue(input))
        })
      )
    : Effect.fail(new UsageError({ message: "--workspace must be a workspace id (a UUID)" }))
