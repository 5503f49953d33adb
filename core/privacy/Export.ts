/**
 * An account's export: everything the service holds about one account, as a stream of records
 * read page by page (never the whole account in memory), for the admin export route to write as
 * NDJSON (docs/decisions.md, "Account export").
 *
 * In order: the profile (its facts), every event (newest first, as the Events view pages them),
 * the logins, the user records of every user its events or logins name, the feature gates, and the
 * actions with their history. An action is exported by its non-secret fields: never its sealed
 * continuation, nor its acknowledgement (which a Payment action's continuation travels in).
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { AccountProfileStore } from "../ports/AccountProfileStore.ts"
import { ActionLedger, type ActionRecord } from "../ports/ActionLedger.ts"
import { EventStore, type StoredEvent } from "../ports/EventStore.ts"
import { FeatureGateStore } from "../ports/FeatureGateStore.ts"
import type { StorageError } from "../ports/StorageError.ts"

/** One exported record: its kind and its fields. */
export type ExportRecord =
  | { readonly kind: "profile"; readonly accountId: string; readonly facts: ReadonlyArray<unknown> }
  | { readonly kind: "event"; readonly event: StoredEvent }
  | {
      readonly kind: "login"
      readonly userId: string
      readonly lastLoginAt: number
      readonly sourceEventId: string
    }
  | { readonly kind: "user"; readonly userId: string; readonly name: string | null; readonly email: string | null }
  | { readonly kind: "feature_gate"; readonly gate: unknown }
  | {
      readonly kind: "action"
      readonly action: Omit<ActionRecord, "sealedContinuation" | "acknowledgement">
      readonly history: ReadonlyArray<unknown>
    }

/** Events and actions are read this many at a time. */
export const pageSize = 200

/** What an export reads. */
export type ExportServices = EventStore | AccountProfileStore | FeatureGateStore | ActionLedger

/** Keyset pages of a newest-first list, as one stream: the next page is read once this one is taken. */
const paged = <A, K>(
  page: (after: K | undefined) => Effect.Effect<ReadonlyArray<A>, StorageError>,
  keyOf: (last: A) => K
): Stream.Stream<A, StorageError> =>
  Stream.paginateChunkEffect<K | undefined, A, StorageError, never>(undefined, (after) =>
    Effect.map(page(after), (rows) => [
      Chunk.fromIterable(rows),
      rows.length < pageSize ? Option.none() : Option.some(keyOf(rows[rows.length - 1]!))
    ])
  )

/** Everything held about the account, record by record (see module doc). */
export const exportAccount = (
  workspaceId: string,
  accountId: string
): Stream.Stream<ExportRecord, StorageError, ExportServices> =>
  Stream.unwrap(
    Effect.gen(function* () {
      const [events, profiles, gates, ledger] = yield* Effect.all([
        EventStore,
        AccountProfileStore,
        FeatureGateStore,
        ActionLedger
      ])
      const userIds = new Set<string>()
      const profile: Stream.Stream<ExportRecord, StorageError> = Stream.fromEffect(
        Effect.map(profiles.get(workspaceId, accountId), (found) => ({
          kind: "profile" as const,
          accountId,
          facts: Option.match(found, { onNone: () => [], onSome: (p) => p.facts })
        }))
      )
      const eventRecords = paged(
        (after: { readonly occurredAt: number; readonly id: string } | undefined) =>
          events.list({ workspaceId, accountId, limit: pageSize, ...(after === undefined ? {} : { after }) }),
        (last) => ({ occurredAt: last.occurredAt, id: last.id })
      ).pipe(
        Stream.map((event): ExportRecord => {
          const userId = (event.body as { readonly user_id?: unknown } | null)?.user_id
          if (typeof userId === "string") userIds.add(userId)
          return { kind: "event", event }
        })
      )
      const logins = Stream.flatMap(Stream.fromEffect(profiles.listLogins(workspaceId, accountId)), (rows) =>
        Stream.fromIterable(
          rows.map((login): ExportRecord => {
            userIds.add(login.userId)
            return {
              kind: "login",
              userId: login.userId,
              lastLoginAt: login.observedAt,
              sourceEventId: login.sourceEventId
            }
          })
        )
      )
      const users = Stream.suspend(() =>
        Stream.fromIterable([...userIds].sort()).pipe(
          Stream.mapEffect((userId) => profiles.getUser(workspaceId, userId)),
          Stream.filterMap((found) => found),
          Stream.map(
            (user): ExportRecord => ({
              kind: "user",
              userId: user.userId,
              name: user.name?.value ?? null,
              email: user.email?.value ?? null
            })
          )
        )
      )
      const gateRecords = Stream.flatMap(Stream.fromEffect(gates.listByAccount(workspaceId, accountId)), (rows) =>
        Stream.fromIterable(rows.map((gate): ExportRecord => ({ kind: "feature_gate", gate })))
      )
      const actions = paged(
        (after: { readonly createdAt: number; readonly actionRequestId: string } | undefined) =>
          ledger.list({ workspaceId, accountId, limit: pageSize, ...(after === undefined ? {} : { after }) }),
        (last) => ({ createdAt: last.createdAt, actionRequestId: last.actionRequestId })
      ).pipe(
        Stream.mapEffect((record) =>
          Effect.map(ledger.history(record.actionRequestId), (history): ExportRecord => {
            const { acknowledgement: _ack, sealedContinuation: _sealed, ...action } = record
            return { kind: "action", action, history }
          })
        )
      )
      return Stream.concatAll(Chunk.make(profile, eventRecords, logins, users, gateRecords, actions))
    })
  )
