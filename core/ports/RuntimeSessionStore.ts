/**
 * The `RuntimeSessionStore` port: runtime sessions a trusted server caller issued
 * for an end user of the embedded runtime. A session is stored by the SHA-256 of its token only (the
 * token is shown once); it is never changed except to be revoked, and every use reads it again, so
 * a revocation or an expiry takes effect at once.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { TrialRef } from "../protocol/messages/Execution.ts"
import type { StorageError } from "./StorageError.ts"
import type { Subject } from "./SuppressionStore.ts"

/**
 * A runtime session as stored: its account, subject, role and authorities, token hash, expiry and
 * revocation.
 */
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
  /**
   * The account's trial an extend-trial action of this session's requests targets, as the host's
   * server named it when it issued the session (never the browser). Absent when it named none.
   */
  readonly trialRef?: TrialRef
}

/** The runtime session port: create, find by token hash, and revoke sessions. */
export interface RuntimeSessionStoreService {
  /**
   * Inserts a session; `false` when one with the same id or token hash exists in the workspace
   * (nothing changes). Unique per workspace; an adapter may also refuse another workspace's.
   */
  readonly create: (record: RuntimeSessionRecord) => Effect.Effect<boolean, StorageError>
  /**
   * The session whose token hashes to `tokenHash`, if any (revoked and expired included; callers
   * check).
   */
  readonly findByHash: (tokenHash: string) => Effect.Effect<Option.Option<RuntimeSessionRecord>, StorageError>
  /** The session with this id, if any. */
  readonly get: (sessionId: string) => Effect.Effect<Option.Option<RuntimeSessionRecord>, StorageError>
  /** Marks a session revoked; `false` when there is no such unrevoked session in that workspace. */
  readonly revoke: (workspaceId: string, sessionId: string, now: number) => Effect.Effect<boolean, StorageError>
  /**
   * One page of a workspace's sessions, live, expired and revoked, newest first (by `createdAt`,
   * then id, both descending); `after` continues past the last session of the page before.
   */
  readonly list: (query: RuntimeSessionListQuery) => Effect.Effect<ReadonlyArray<RuntimeSessionRecord>, StorageError>
  /**
   * Removes the subject's sessions: an account's (`accountId`), or a user's (`subject`, in any
   * account). Answers how many.
   */
  readonly eraseSubject: (workspaceId: string, subject: Subject) => Effect.Effect<number, StorageError>
}

/** Which sessions `list` reads: a workspace's, newest first, paged by keyset. */
export interface RuntimeSessionListQuery {
  readonly workspaceId: string
  readonly limit: number
  readonly after?: { readonly createdAt: number; readonly id: string }
}

/** The service tag of the runtime session store. */
export class RuntimeSessionStore extends Context.Tag("@accord/core/RuntimeSessionStore")<
  RuntimeSessionStore,
  RuntimeSessionStoreService
>() {}
