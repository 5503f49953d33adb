/**
 * The `ApiKeyStore` port: workspaces and their API keys (stored as SHA-256 hashes, the secret shown
 * once).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { StorageError } from "./StorageError.ts"

/**
 * `ingest` (Direct API), `developer:read` (the context server), `admin` (workspace administrator).
 */
export const ApiKeyScope = Schema.Literal("ingest", "developer:read", "admin")

export type ApiKeyScope = typeof ApiKeyScope.Type

/**
 * A stored key: never the secret, only its hash.
 */
export interface ApiKeyRecord {
  readonly id: string
  readonly workspaceId: string
  readonly scope: ApiKeyScope
  readonly name: string | null
  /** Lowercase hex SHA-256 of the secret. */
  readonly secretHash: string
  readonly createdAt: number
  readonly revokedAt: number | null
}

/**
 * The API key port: workspaces, and keys stored by the hash of their secret, with scope and
 * revocation.
 */
export interface ApiKeyStoreService {
  /** Creates the workspace if absent; `true` when it was created. */
  readonly ensureWorkspace: (workspaceId: string, now: number) => Effect.Effect<boolean, StorageError>
  /** Whether the workspace exists. */
  readonly workspaceExists: (workspaceId: string) => Effect.Effect<boolean, StorageError>
  /**
   * Inserts a key; `false` when a key with the same id or hash exists in the workspace (nothing is
   * changed). Unique per workspace; an adapter may also refuse another workspace's.
   */
  readonly create: (record: ApiKeyRecord) => Effect.Effect<boolean, StorageError>
  /** The key whose secret hashes to `secretHash`, if any (revoked keys included; callers check). */
  readonly findByHash: (secretHash: string) => Effect.Effect<Option.Option<ApiKeyRecord>, StorageError>
  /**
   * The key `findByHash` would answer at `now` (epoch ms), when the store holds it in memory and can
   * answer without waiting (the memory store; a live key in `withLookupCache`'s memory); `undefined`
   * otherwise, and then `findByHash` answers. A store that keeps nothing in memory always answers
   * `undefined`.
   */
  readonly findCached: (secretHash: string, now: number) => ApiKeyRecord | undefined
  /** The workspace's keys, oldest first, revoked ones included. */
  readonly list: (workspaceId: string) => Effect.Effect<ReadonlyArray<ApiKeyRecord>, StorageError>
  /** Marks a key revoked; `false` when there is no such live key in that workspace. */
  readonly revoke: (workspaceId: string, id: string, now: number) => Effect.Effect<boolean, StorageError>
}

/** The service tag of the API key store. */
export class ApiKeyStore extends Context.Tag("@accord/core/ApiKeyStore")<ApiKeyStore, ApiKeyStoreService>() {}

/**
 * How long a found key is remembered by `withLookupCache`.
 */
export const lookupCacheMillis = 5_000

/**
 * Remembers keys found by hash for `ttlMillis`, so authenticating a busy key costs no query per
 * request. Only found keys are cached (a new key works at once); a revocation through this store
 * forgets the key at once, one made by another process sharing the database takes effect within
 * `ttlMillis`.
 */
export const withLookupCache = (
  store: ApiKeyStoreService,
  ttlMillis: number = lookupCacheMillis
): ApiKeyStoreService => {
  const found = new Map<string, { readonly record: ApiKeyRecord; readonly until: number }>()
  return {
    ...store,
    findCached: (secretHash, now) => {
      const hit = found.get(secretHash)
      return hit !== undefined && hit.until > now ? hit.record : undefined
    },
    findByHash: (secretHash) =>
      Effect.clockWith((clock) => {
        const now = clock.unsafeCurrentTimeMillis()
        const hit = found.get(secretHash)
        if (hit !== undefined && hit.until > now) return Effect.succeed(Option.some(hit.record))
        return Effect.tap(store.findByHash(secretHash), (record) => {
          if (Option.isSome(record) && record.value.revokedAt === null) {
            if (found.size > 10_000) found.clear()
            found.set(secretHash, { record: record.value, until: now + ttlMillis })
          } else {
            found.delete(secretHash)
          }
        })
      }),
    revoke: (workspaceId, id, now) =>
      Effect.tap(store.revoke(workspaceId, id, now), () => {
        for (const [hash, entry] of found) if (entry.record.id === id) found.delete(hash)
      })
  }
}
