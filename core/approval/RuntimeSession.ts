/**
 * Runtime sessions (spec "Authentication" 8–9, "Approval flow rules" 2 and 6): a
 * trusted server caller holding a workspace admin key issues a session for one end user of the
 * embedded runtime — their account, subject, role and authorities (`funnels.actions.request`,
 * `funnels.actions.execute`) — for a short time (15 minutes unless asked otherwise, never more than
 * 12 hours).
 *
 * The token (`acc_rts_…`, 32 random bytes) is shown once and stored only as its SHA-256. Every use
 * reads the session again: unknown, expired and revoked sessions are refused on the spot. Runtime
 * tokens live in their own store, so a runtime token is never an admin or ingest key, and an admin
 * or ingest key is never a runtime token ("Authentication" 8).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { mintToken } from "../access/ApiKeys.ts"
import { Crypto } from "../ports/Crypto.ts"
import { type RuntimeSessionRecord, RuntimeSessionStore } from "../ports/RuntimeSessionStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { sha256HexWith } from "../protocol/Digest.ts"
import { ApprovalStore } from "../ports/ApprovalStore.ts"
import { AccountId, BoundedString } from "../protocol/messages/Common.ts"
import { TrialRef } from "../protocol/messages/Execution.ts"
import { randomUuid } from "../protocol/Uuid.ts"

/** The authority a session needs to ask for an approval. */
export const requestAuthority = "funnels.actions.request"

/** The authority a session needs to prepare and resolve approvals (the billing owner's). */
export const executeAuthority = "funnels.actions.execute"

/** The authorities a runtime session may be issued with. */
export const RuntimeAuthority = Schema.Literal(requestAuthority, executeAuthority)

/** {@inheritDoc RuntimeAuthority:var} */
export type RuntimeAuthority = typeof RuntimeAuthority.Type

/**
 * The default lifetime of a session: short, since the embedded runtime asks its server for a new
 * one whenever it needs to.
 */
export const defaultSessionSeconds = 15 * 60

/**
 * The hard cap on a session's lifetime.
 */
export const maxSessionSeconds = 12 * 60 * 60

/**
 * The token prefix, so scanners and humans recognise a runtime token.
 */
export const tokenPrefix = "acc_rts_"

/**
 * `POST /runtime-sessions`.
 */
export const SessionRequest = Schema.Struct({
  accountId: AccountId,
  subject: BoundedString(1, 256),
  role: BoundedString(1, 256),
  authorities: Schema.NonEmptyArray(RuntimeAuthority).pipe(
    Schema.filter((list) => new Set(list).size === list.length || "must not repeat an authority")
  ),
  expiresInSeconds: Schema.optionalWith(
    Schema.Int.pipe(
      Schema.between(60, maxSessionSeconds),
      Schema.annotations({ message: () => `must be an integer from 60 to ${maxSessionSeconds} (seconds)` })
    ),
    { exact: true }
  ),
  /**
   * The account's trial that an extend-trial approval requested in this session targets: the
   * account-specific part of the operation, named by the host's server, never by the browser.
   */
  trialRef: Schema.optionalWith(TrialRef, { exact: true })
}).annotations({ identifier: "RuntimeSessionRequest", parseOptions: { onExcessProperty: "error" } })

/** {@inheritDoc SessionRequest:var} */
export interface SessionRequest extends Schema.Schema.Type<typeof SessionRequest> {}

/**
 * A session just issued: its record and the token, which exists only here.
 */
export interface IssuedSession {
  readonly record: RuntimeSessionRecord
  readonly token: Redacted.Redacted<string>
}

/**
 * Issues a session in a workspace for `request`, on behalf of the admin key `issuedBy`.
 */
export const issue = (
  workspaceId: string,
  request: SessionRequest,
  issuedBy: string
): Effect.Effect<IssuedSession, StorageError, RuntimeSessionStore | Crypto> =>
  Effect.gen(function* () {
    const store = yield* RuntimeSessionStore
    const crypto = yield* Crypto
    const now = yield* Clock.currentTimeMillis
    // A collision of 32 random bytes or a v4 UUID does not happen; if `create` ever refused, mint again.
    for (;;) {
      const token = yield* mintToken(tokenPrefix)
      const record: RuntimeSessionRecord = {
        sessionId: yield* randomUuid,
        workspaceId,
        accountId: request.accountId,
        subject: request.subject,
        role: request.role,
        authorities: request.authorities,
        tokenHash: yield* sha256HexWith(crypto, Redacted.value(token)),
        issuedBy,
        createdAt: now,
        expiresAt: now + (request.expiresInSeconds ?? defaultSessionSeconds) * 1000,
        revokedAt: null,
        ...(request.trialRef === undefined ? {} : { trialRef: request.trialRef })
      }
      if (yield* store.create(record)) return { record, token }
    }
  })

/**
 * Why a runtime token does not authorize: `runtime_session_invalid` (missing, malformed or
 * unknown: the three look alike), `runtime_session_expired`, `runtime_session_revoked`, or
 * `runtime_authority_missing` (live, without the authority the route needs).
 */
export const SessionRefusal = Schema.Literal(
  "runtime_session_invalid",
  "runtime_session_expired",
  "runtime_session_revoked",
  "runtime_authority_missing"
)

export type SessionRefusal = typeof SessionRefusal.Type

/** A runtime token refused: invalid, expired, revoked, or without the authority the route needs. */
export class RuntimeSessionRefused extends Schema.TaggedError<RuntimeSessionRefused>()("RuntimeSessionRefused", {
  reason: SessionRefusal,
  detail: Schema.String
}) {}

const refuse = (reason: SessionRefusal, detail: string) => Effect.fail(new RuntimeSessionRefused({ reason, detail }))

/** A token worth hashing: the prefix and 43 base64url characters, so garbage costs no digest or lookup. */
const tokenPattern = /^acc_rts_[A-Za-z0-9_-]{43}$/

/**
 * Whether `token` has the shape of a runtime token.
 */
export const isTokenShaped = (token: unknown): token is string => typeof token === "string" && tokenPattern.test(token)

/**
 * The live session a runtime token presents, holding `authority` (any, when `undefined`). Read
 * from storage on every use.
 */
export const authenticate = (
  token: string | undefined,
  authority: RuntimeAuthority | undefined
): Effect.Effect<RuntimeSessionRecord, RuntimeSessionRefused | StorageError, RuntimeSessionStore | Crypto> =>
  Effect.gen(function* () {
    if (!isTokenShaped(token))
      return yield* refuse("runtime_session_invalid", "a valid runtime session token is required")
    const crypto = yield* Crypto
    const found = yield* (yield* RuntimeSessionStore).findByHash(yield* sha256HexWith(crypto, token))
    if (Option.isNone(found))
      return yield* refuse("runtime_session_invalid", "a valid runtime session token is required")
    const session = found.value
    if (session.revokedAt !== null) return yield* refuse("runtime_session_revoked", "the runtime session was revoked")
    if (session.expiresAt <= (yield* Clock.currentTimeMillis))
      return yield* refuse("runtime_session_expired", "the runtime session has expired")
    return authority === undefined ? session : yield* requireAuthority(session, authority)
  })

/**
 * The session, when it holds `authority` (a route that authenticated first checks it here).
 */
export const requireAuthority = (
  session: RuntimeSessionRecord,
  authority: RuntimeAuthority
): Effect.Effect<RuntimeSessionRecord, RuntimeSessionRefused> =>
  session.authorities.includes(authority)
    ? Effect.succeed(session)
    : refuse("runtime_authority_missing", `the runtime session lacks the ${authority} authority`)

/**
 * Revokes a session at once and cancels the approvals it requested that are still `pending`: a
 * request outlives no revocation of its requester. `false` when there is no such live session.
 */
export const revoke = (
  workspaceId: string,
  sessionId: string
): Effect.Effect<boolean, StorageError, RuntimeSessionStore | ApprovalStore> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    if (!(yield* (yield* RuntimeSessionStore).revoke(workspaceId, sessionId, now))) return false
    yield* (yield* ApprovalStore).cancelForRequester({ workspaceId, sessionId, now })
    return true
  })
