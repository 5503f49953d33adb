/**
 * The `RuntimeSessionStore` port: runtime sessions a trusted server caller issued
 * for an end user of the embedded runtime. A session is stored by the SHA-256 of its token only (the
 * token is shown once); it is never changed except to be revoked, and every use reads it again, so
 * a revocation or an expiry takes effect at once.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { StorageError } from "./StorageError.ts"

export interface RuntimeSessionRecord {
  readonly sessionId: string
  readonly workspaceId: string
  readonly accountId: string
  /** The end user the session speaks for (the execution request's `actor.subjectId`). */
  readonly subject: string
  /** Their role in the customer's product (`actor.roleKey`), e.g. `billing_owner`, `viewer`. */
  readonly role: string
  /** `funnels.actions.request`, `funnels.actions.execute`, or both. */
  readonly authorities: ReadonlyArray<string>
  /** Lowercase hex SHA-256 of the token. */
  readonly tokenHash: string
  /** The admin API key that issued it. */
  readonly issuedBy: string
  readonly createdAt: number
  readonly expiresAt: number
  readonly revokedAt: number | null
}

export interface RuntimeSessionStoreService {
  /** Inserts a session; `false` when one with the same id or token hash exists (nothing changes). */
  readonly create: (record: RuntimeSessionRecord) => Effect.Effect<boolean, StorageError>
  readonly findByHash: (tokenHash: string) => Effect.Effect<Option.Option<RuntimeSessionRecord>, StorageError>
  readonly get: (sessionId: string) => Effect.Effect<Option.Option<RuntimeSessionRecord>, StorageError>
  /** Marks a session revoked; `false` when there is no such unrevoked session in that workspace. */
  readonly revoke: (workspaceId: string, sessionId: string, now: number) => Effect.Effect<boolean, StorageError>
}

export class RuntimeSessionStore extends Context.Tag("@accord/core/RuntimeSessionStore")<
  RuntimeSessionStore,
  RuntimeSessionStoreService
>() {}

export const makeMemory = (): RuntimeSessionStoreService => {
  const sessions = new Map<string, RuntimeSessionRecord>()
  return {
    create: (record) =>
      Effect.sync(() => {
        if (sessions.has(record.sessionId) || [...sessions.values()].some((s) => s.tokenHash === record.tokenHash))
          return false
        sessions.set(record.sessionId, record)
        return true
      }),
    findByHash: (tokenHash) =>
      Effect.sync(() => Option.fromNullable([...sessions.values()].find((s) => s.tokenHash === tokenHash))),
    get: (sessionId) => Effect.sync(() => Option.fromNullable(sessions.get(sessionId))),
    revoke: (workspaceId, sessionId, now) =>
      Effect.sync(() => {
        const session = sessions.get(sessionId)
        if (session === undefined || session.workspaceId !== workspaceId || session.revokedAt !== null) return false
        sessions.set(sessionId, { ...session, revokedAt: now })
        return true
      })
  }
}

export const layerMemory: Layer.Layer<RuntimeSessionStore> = Layer.sync(RuntimeSessionStore, makeMemory)
