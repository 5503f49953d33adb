/**
 * The service's inbound completion (spec "Completion body", "States and transitions",
 * "Authentication"; docs/decisions.md, "Completion route authentication").
 *
 * The `workspaceId` and `actionRequestId` are read from the still untrusted JSON only to choose the
 * candidate completion secrets (the action's own revision first, then the workspace's active and
 * replaced-but-not-retired revisions); the HMAC over the raw bytes is verified, the nonce recorded,
 * and only then is the body decoded. An unknown workspace and a bad signature are the same
 * failure. The completion is recorded in one ledger transition together with its `completionId`
 * claim, so the 2xx answer means it is durably stored; a redelivery (same `completionId`, same body
 * bytes) is answered again without a second transition, the same `completionId` with another body
 * is a conflict.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ActionLedger } from "../ports/ActionLedger.ts"
import { timeOrderedUuidWith } from "../protocol/Uuid.ts"
import { CatalogStore } from "../ports/CatalogStore.ts"
import { ConnectionStore } from "../ports/ConnectionStore.ts"
import { EventStore } from "../ports/EventStore.ts"
import { Crypto } from "../ports/Crypto.ts"
import { Completion } from "../protocol/messages/Completion.ts"
import type { NonceStore } from "../ports/NonceStore.ts"
import type { SecretVault } from "../ports/SecretVault.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { checkHeaders, type HeaderSource, makeVerifier, snakeCaseTag } from "../protocol/Verification.ts"
import {
  type FieldIssue,
  type MalformedBody,
  parseJsonBytes,
  parseJsonSyntax,
  toFieldIssues
} from "../protocol/Json.ts"
import * as FastDecode from "../protocol/FastDecode.ts"
import { exactParseOptions } from "../protocol/messages/Common.ts"
import { decodeStoredRequest, isPaymentAction, reconcileOutboxKind } from "./Action.ts"
import type { ActionState } from "./ActionState.ts"
import { completionIdentity } from "./CompletionIdentity.ts"
import { completionTrigger, evidenceStanding, matchEvidence } from "./Evidence.ts"
import { acceptedEvidence, evidenceOutboxKind, type EvidenceWatch, holdsEvidence } from "./ObservedEvidence.ts"
import { answer, applyTrigger, stepDetail } from "./internal/applyTrigger.ts"
import { makeSigningKeyCache } from "./internal/signingKeyCache.ts"

/**
 * What kind of refusal a completion got: not authenticated (no known completion secret signed it,
 * or its signed headers are invalid), not a completion body, no such action in the workspace, a
 * binding that contradicts the action, or a conflict with what is already recorded. The HTTP edge
 * maps each kind to its status (docs/decisions.md, "Problem details").
 */
export const CompletionRefusalKind = Schema.Literal(
  "unauthenticated",
  "invalid",
  "unknown_action",
  "binding_mismatch",
  "conflict"
)

export type CompletionRefusalKind = typeof CompletionRefusalKind.Type

/**
 * Why a completion was refused: its kind and a stable snake_case `code`.
 */
export class CompletionRefused extends Schema.TaggedError<CompletionRefused>()("CompletionRefused", {
  kind: CompletionRefusalKind,
  code: Schema.String,
  detail: Schema.String,
  errors: Schema.optional(Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })))
}) {}

/**
 * What the completion route answers for an authenticated completion: recorded or duplicate, and the
 * action it concerns.
 */
export interface CompletionReceipt {
  readonly status: "recorded" | "duplicate"
  readonly actionRequestId: string
  readonly completionId: string
  readonly state: ActionState
}

/**
 * What completion intake needs: the ledger, connections and their secrets, crypto, nonces, the
 * catalog and events.
 */
export type CompletionServices =
  | ActionLedger
  | ConnectionStore
  | SecretVault
  | Crypto
  | NonceStore
  | CatalogStore
  | EventStore

const refused = (kind: CompletionRefusalKind, code: string, detail: string, errors?: ReadonlyArray<FieldIssue>) =>
  new CompletionRefused({ kind, code, detail, ...(errors !== undefined ? { errors } : {}) })

const unauthenticated = refused(
  "unauthenticated",
  "invalid_signature",
  "the completion is not signed by a known completion secret"
)

const stringField = (json: unknown, name: string): string | undefined => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined
  const value = (json as Record<string, unknown>)[name]
  return typeof value === "string" ? value : undefined
}

/**
 * Builds the completion receiver once (verifier bound); call it per request.
 */
export const makeCompletionReceiver: Effect.Effect<
  (input: {
    readonly headers: HeaderSource
    readonly body: Uint8Array
  }) => Effect.Effect<CompletionReceipt, CompletionRefused | MalformedBody | StorageError>,
  never,
  CompletionServices
> = Effect.gen(function* () {
  const ledger = yield* ActionLedger
  const connections = yield* ConnectionStore
  const crypto = yield* Crypto
  const catalogs = yield* CatalogStore
  const events = yield* EventStore
  const verifier = yield* makeVerifier
  // Each revision's completion key, opened and imported once; which revisions may verify is read
  // from the connection on every completion, so a retired revision's key is never tried again.
  const completionKeys = yield* makeSigningKeyCache("completion")

  const decodeCompletion = FastDecode.decodeUnknown(Completion, exactParseOptions)

  /**
   * Verifies against each candidate revision's completion secret in turn. The header checks that
   * need no secret (version, freshness, nonce and signature form) run first and answer the same
   * whether or not the workspace exists; after them every failure is the one `unauthenticated`
   * answer, so no response tells an unknown workspace from a bad signature. Answers the
   * parsed body and the action it names (read once, for the whole request).
   */
  const authenticate = (headers: HeaderSource, body: Uint8Array) =>
    Effect.gen(function* () {
      const checked = checkHeaders(headers, yield* Clock.currentTimeMillis)
      if ("_tag" in checked) {
        return yield* checked._tag === "InvalidSignature"
          ? unauthenticated
          : refused("unauthenticated", snakeCaseTag(checked._tag), "the completion's signed headers are not valid")
      }
      // Strict parse once; a body only JSON syntax accepts (a duplicate key, unstorable text) is
      // still authenticated first, read for its secrets with syntax only, and refused after
      // ("verify the raw body, then parse").
      const strict = parseJsonBytes(body)
      if (Either.isLeft(strict) && strict.left.reason === "syntax") return yield* unauthenticated
      const untrusted = Either.isRight(strict) ? strict : parseJsonSyntax(body)
      if (Either.isLeft(untrusted)) return yield* unauthenticated
      const json = untrusted.right
      const malformed = Either.isLeft(strict) ? strict.left : undefined
      const workspaceId = stringField(json, "workspaceId")
      if (workspaceId === undefined) return yield* unauthenticated
      const connection = yield* connections.get(workspaceId)
      if (Option.isNone(connection)) return yield* unauthenticated
      const claimedAction = stringField(json, "actionRequestId")
      const bound = claimedAction === undefined ? Option.none() : yield* ledger.get(claimedAction)
      const boundRevision =
        Option.isSome(bound) && bound.value.workspaceId === workspaceId ? bound.value.revision : undefined
      const candidates = connection.value.revisions
        .filter((r) => r.state === "active" || r.state === "replaced" || r.revision === boundRevision)
        .filter((r) => r.state !== "retired")
        .map((r) => r.revision)
        .sort((a, b) => (a === boundRevision ? -1 : b === boundRevision ? 1 : b - a))
      for (const revision of candidates) {
        const keys = yield* completionKeys(connection.value.connectionId, revision)
        if (Option.isNone(keys)) continue
        const verified = yield* verifier
          .verify({
            purpose: "completion",
            keys: keys.value,
            headers,
            body,
            nonceScope: `completion:${connection.value.connectionId}`
          })
          .pipe(Effect.either)
        if (verified._tag === "Right") return { workspaceId, json, bound, malformed }
        const error = verified.left
        if (error._tag === "StorageError") return yield* error
        if (error._tag === "InvalidSignature") continue
        // Only a message signed with this secret gets here (a replayed nonce) or a clock edge case.
        return yield* refused(
          "unauthenticated",
          snakeCaseTag(error._tag),
          "the completion's signed headers are not valid"
        )
      }
      return yield* unauthenticated
    })

  return (input) =>
    Effect.gen(function* () {
      const { bound, json, malformed, workspaceId } = yield* authenticate(input.headers, input.body)
      if (malformed !== undefined) return yield* malformed
      // The body was parsed once, to authenticate it; only its shape is left to check.
      const completion = yield* Effect.mapError(decodeCompletion(json), (error) =>
        refused("invalid", "invalid_body", "the completion does not match the completion body", toFieldIssues(error))
      )
      // `bound` is the action the same body names (`actionRequestId`), read while authenticating.
      const record = bound
      if (Option.isNone(record) || record.value.workspaceId !== workspaceId || completion.workspaceId !== workspaceId) {
        return yield* refused("unknown_action", "unknown_action", "no such action request in this workspace")
      }
      if (record.value.providerIdempotencyKey !== completion.providerIdempotencyKey) {
        return yield* refused(
          "binding_mismatch",
          "idempotency_key_mismatch",
          "the providerIdempotencyKey is not the action's key"
        )
      }
      const bodyHash = yield* crypto.sha256Hex(input.body)
      const providerReferenceHash = yield* crypto.sha256Hex(completion.providerReference)
      const request = yield* Effect.orDie(decodeStoredRequest(record.value))
      const isPayment = isPaymentAction(request)
      const accepted = yield* acceptedEvidence(catalogs, workspaceId, request)
      const match = matchEvidence(
        {
          workspaceId: record.value.workspaceId,
          accountId: record.value.accountId,
          actionRequestId: record.value.actionRequestId,
          providerIdempotencyKey: record.value.providerIdempotencyKey
        },
        completion,
        accepted
      )
      // Which evidence the service itself holds for the named type.
      const standing =
        match._tag === "Matched"
          ? evidenceStanding(
              match.type,
              isPayment,
              yield* holdsEvidence({ events, ledger }, match.type, record.value, request)
            )
          : undefined
      const trigger = completionTrigger(completion, match, standing, isPayment)
      const { actionRequestId, completionId } = completion
      const incoming = { completionId, actionRequestId, bodyHash }
      const receipt = (status: CompletionReceipt["status"], state: ActionState): CompletionReceipt => ({
        status,
        actionRequestId,
        completionId,
        state
      })
      // Built only when refused: a `Schema.TaggedError` checks its fields as it is made (about 0.1 ms).
      const conflict = () =>
        refused("conflict", "completion_id_conflict", "this completionId was already received with another body")
      const applied = yield* applyTrigger<CompletionReceipt, CompletionRefused, never>({
        ledger,
        actionRequestId,
        record: record.value,
        trigger,
        decide: (current, step, { now }) =>
          Effect.gen(function* () {
            if (step === undefined || step._tag === "Illegal") {
              // A redelivery usually finds its action past the state it moved it to: the completion
              // id already recorded answers it (duplicate or conflict) before the state does.
              const existing = yield* ledger.findCompletion(completionId)
              const identity = completionIdentity(Option.getOrUndefined(existing), incoming)
              if (identity === "duplicate") return answer(receipt("duplicate", current.state))
              if (identity === "conflict") return yield* conflict()
              return yield* refused(
                "conflict",
                "completion_not_applicable",
                `the action cannot take this completion (${step?.reason})`
              )
            }
            // A step the action can take claims the completion id in the transition itself: an id
            // already recorded writes nothing and settles as a duplicate or a conflict below.
            const toState = step._tag === "Move" ? step.to : current.state
            const queue = step.queueReconciliation
            const watch =
              !queue && standing === "awaiting" && completion.outcome === "succeeded" && toState === "pending"
            return {
              _tag: "Write" as const,
              write: {
                toState,
                history: {
                  trigger: "completion",
                  detail: {
                    completionId,
                    outcome: completion.outcome,
                    completedAt: completion.completedAt,
                    // "The service hashes the provider event and reference and does not store the raw reference."
                    providerReferenceHash,
                    evidence: {
                      source: completion.evidence.source,
                      reasonCode: completion.evidence.reasonCode,
                      ...(match._tag === "Matched" ? { matched: match.type, standing } : { unmatched: match.reason })
                    },
                    ...stepDetail(step),
                    ...(queue ? { reconciliation: "queued" } : {})
                  }
                },
                completion: { ...incoming, receivedAt: now },
                // Evidence the service does not hold yet: watched for until it arrives (EvidenceWatcher).
                ...(watch
                  ? {
                      outbox: {
                        id: yield* timeOrderedUuidWith(crypto, now),
                        kind: evidenceOutboxKind,
                        dedupeKey: `${actionRequestId}:${completionId}:evidence`,
                        payload: {
                          actionRequestId,
                          completionId,
                          type: match._tag === "Matched" ? match.type : "authenticated_completion"
                        } satisfies EvidenceWatch,
                        nextAttemptAt: now,
                        createdAt: now
                      }
                    }
                  : {}),
                ...(queue
                  ? {
                      outbox: {
                        id: yield* timeOrderedUuidWith(crypto, now),
                        kind: reconcileOutboxKind,
                        dedupeKey: `${actionRequestId}:${completionId}`,
                        payload: { actionRequestId, completionId, providerReferenceHash },
                        nextAttemptAt: now,
                        createdAt: now
                      }
                    }
                  : {})
              },
              settle: (result) =>
                result._tag === "Applied"
                  ? Effect.succeed(receipt("recorded", toState))
                  : result._tag === "DuplicateCompletion"
                    ? Effect.succeed(receipt("duplicate", current.state))
                    : Effect.fail(conflict())
            }
          })
      })
      return (
        applied ??
        (yield* refused(
          "conflict",
          "concurrent_change",
          "the action changed concurrently; deliver the completion again"
        ))
      )
    })
})
