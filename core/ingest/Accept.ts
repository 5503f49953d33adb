/**
 * Accepting one ingested event (spec `direct-api-ingestion.md` "Endpoints": "Each request carries
 * one small JSON event"; "Duplicates": a retry with the same `event_id` is not stored twice): from
 * the parsed body sent with an ingest key to what became of it, in one call.
 *
 * The event is prepared (`Ingest.prepareEvent`: safety, contract, relevance, normalization), an
 * event of a suppressed subject is answered as such without being stored (`Suppression.ts`), its
 * usage meter found (`UsageRollup.usageMeter`), its payload hashed, and it is handed to the group
 * commit (`Committer`), which also settles the meter's unit. The caller reads the request (key,
 * rate, content type, bytes, JSON) and answers; what the answer is made of is decided here.
 *
 * This runs for every event, thousands of times a second: the services are resolved once, by
 * `make`, and a result is passed through as the commit returned it unless a suggested `event_id`
 * must be added.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type { ApiKeyScope } from "../ports/ApiKeyStore.ts"
import { Crypto, CryptoSync } from "../ports/Crypto.ts"
import type { StoredEvent } from "../ports/EventStore.ts"
import type { Submission, WriteResult } from "../ports/IngestWriter.ts"
import type { StorageError } from "../ports/StorageError.ts"
import type { FieldIssue } from "../protocol/Json.ts"
import { Committer } from "./Committer.ts"
import { type IngestRejection, type PreparedEvent, prepareEvent } from "./Ingest.ts"
import { Suppressions } from "./Suppression.ts"
import { sha256HexWith } from "../protocol/Digest.ts"
import { usageMeter } from "./UsageRollup.ts"

/**
 * The ingest key an event was sent with: the workspace it goes to and the key's scope (only server
 * ingest keys unlock feature gates).
 */
export interface IngestKey {
  readonly workspaceId: string
  readonly scope: ApiKeyScope
}

/**
 * What became of an accepted event: stored; a retry of an event already stored (nothing stored
 * twice); its `event_id` already used by a different event (nothing written); or refused because
 * its usage meter already has another unit (nothing written). A usage rollup sent without
 * `event_id` carries `suggestedEventId`, the deterministic id it should carry.
 */
export type Accepted =
  | { readonly _tag: "Stored"; readonly event: StoredEvent; readonly suggestedEventId?: string }
  | { readonly _tag: "Duplicate"; readonly event: StoredEvent; readonly suggestedEventId?: string }
  | { readonly _tag: "Conflict"; readonly event: StoredEvent }
  | { readonly _tag: "UnitChanged"; readonly issue: FieldIssue }
  | { readonly _tag: "Suppressed"; readonly eventId: string | null; readonly accountId: string }

/**
 * Why an event was not accepted: a rule refused it, or storage failed.
 */
export type AcceptError = IngestRejection | StorageError

/**
 * Accepts one parsed body sent with `key`; `id` is Accord's fresh id for the row and `now` the
 * receiving clock (epoch ms).
 */
export type Accept = (key: IngestKey, body: unknown, id: string, now: number) => Effect.Effect<Accepted, AcceptError>

const withSuggestion =
  (suggestedEventId: string) =>
  (result: WriteResult): Accepted =>
    result._tag === "Stored" || result._tag === "Duplicate"
      ? { _tag: result._tag, event: result.event, suggestedEventId }
      : result

/**
 * What the group commit (or a bulk import's batch) writes for a prepared event sent with `key`:
 * the row with its payload hash, what the writers need of the normalized event, and the usage
 * meter of a rollup.
 */
export const submissionOf = (key: IngestKey, event: PreparedEvent, payloadHash: string): Submission => {
  const stored = { ...event.stored, payloadHash }
  const meter = usageMeter(event.event)
  const normalized = { userUpdate: event.userUpdate, profileFacts: event.profileFacts, login: event.login }
  return meter === undefined
    ? { stored, normalized, keyScope: key.scope }
    : { stored, normalized, keyScope: key.scope, meter }
}

/**
 * `Accept` without a fiber: calls `onExit` once with what became of the event (at once for a
 * refusal, after its batch committed otherwise).
 */
export type AcceptNow = (
  key: IngestKey,
  body: unknown,
  id: string,
  now: number,
  onExit: (exit: Exit.Exit<Accepted, AcceptError>) => void
) => void

/**
 * `Accept` and, when the digest is synchronous and the committer takes offers, {@link AcceptNow}.
 */
export interface Acceptors {
  readonly accept: Accept
  readonly acceptNow: AcceptNow | undefined
}

/**
 * Both forms of `Accept` on the `Crypto` and `Committer` in hand.
 */
export const makeAcceptors: Effect.Effect<Acceptors, never, Crypto | Committer | Suppressions> = Effect.gen(
  function* () {
    const crypto = yield* Crypto
    const committer = yield* Committer
    const { isSuppressed } = yield* Suppressions
    const suppressed = (event: PreparedEvent): Accepted | undefined =>
      isSuppressed(event.stored.workspaceId, event.stored.accountId, event.event.user_id)
        ? { _tag: "Suppressed", eventId: event.stored.eventId, accountId: event.stored.accountId }
        : undefined
    const hashSync = Option.getOrUndefined(yield* Effect.serviceOption(CryptoSync))?.sha256Hex
    const accept: Accept = (key, body, id, now) => {
      const prepared = prepareEvent(body, { id, workspaceId: key.workspaceId, now })
      if (Either.isLeft(prepared)) return Effect.fail(prepared.left)
      const event = prepared.right
      const refused = suppressed(event)
      if (refused !== undefined) return Effect.succeed(refused)
      // With a synchronous digest (node:crypto) the row is complete at once: one effect fewer per event.
      const committed =
        hashSync !== undefined
          ? committer.submit(submissionOf(key, event, hashSync(event.payloadHashInput)))
          : Effect.flatMap(sha256HexWith(crypto, event.payloadHashInput), (hash) =>
              committer.submit(submissionOf(key, event, hash))
            )
      return event.suggestedEventId._tag === "Some"
        ? Effect.map(committed, withSuggestion(event.suggestedEventId.value))
        : committed
    }
    const offer = committer.offer
    const acceptNow: AcceptNow | undefined =
      hashSync === undefined || offer === undefined
        ? undefined
        : (key, body, id, now, onExit) => {
            const prepared = prepareEvent(body, { id, workspaceId: key.workspaceId, now })
            if (Either.isLeft(prepared)) return onExit(Exit.fail(prepared.left))
            const event = prepared.right
            const refused = suppressed(event)
            if (refused !== undefined) return onExit(Exit.succeed(refused))
            const suggestion = event.suggestedEventId
            offer(
              submissionOf(key, event, hashSync(event.payloadHashInput)),
              suggestion._tag === "None" ? onExit : (exit) => onExit(Exit.map(exit, withSuggestion(suggestion.value)))
            )
          }
    return { accept, acceptNow }
  }
)

/**
 * `Accept` on the `Crypto` and `Committer` in hand.
 */
export const make: Effect.Effect<Accept, never, Crypto | Committer | Suppressions> = Effect.map(
  makeAcceptors,
  (acceptors) => acceptors.accept
)
