/**
 * The suppressed subjects, as this process holds them: a suppression stops later events for its
 * subject from recreating it (an account's events by `account_id`, a user's by `user_id`), so
 * ingest answers such an event without storing anything (`Accept`).
 *
 * Ingest asks for every event, thousands of times a second, so the answer is a synchronous lookup
 * in a per-workspace in-memory set (one map lookup for a workspace without suppressions), never a
 * query. The set is loaded from the `SuppressionStore` before the first event is accepted and
 * refreshed every {@link refreshMillis} from the suppressions created since the last refresh (less
 * {@link refreshOverlapMillis}, for clocks of other processes running behind), so an erasure made
 * by another process sharing the database reaches this one within that interval. An erasure made
 * here adds its subject before it removes anything (`Erasure.erase`).
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import type { StorageError } from "../ports/StorageError.ts"
import { type Subject, SuppressionStore } from "../ports/SuppressionStore.ts"

/** How often the set is refreshed from the store. */
export const refreshMillis = 5_000

/** How far before the newest suppression seen a refresh reads again. */
export const refreshOverlapMillis = 60_000

/** The suppressed subjects of this process, asked by ingest and added to by an erasure. */
export interface SuppressionsService {
  /** Whether an event of `accountId`, caused by `userId` when it names one, is suppressed. */
  readonly isSuppressed: (workspaceId: string, accountId: string, userId: string | undefined) => boolean
  /**
   * Adds a subject at once (an erasure about to run); answers how to take it out again, which
   * does nothing when the subject was already suppressed (an erasure that failed leaves the set as
   * it found it).
   */
  readonly add: (workspaceId: string, subject: Subject) => () => void
  /** Reads the suppressions created since the last refresh into the set. */
  readonly refresh: Effect.Effect<void, StorageError>
}

/** The service tag of the process's suppression set. */
export class Suppressions extends Context.Tag("@accord/core/ingest/Suppressions")<
  Suppressions,
  SuppressionsService
>() {}

interface WorkspaceSet {
  readonly account: Set<string>
  readonly user: Set<string>
}

/** The set over the store, loaded once (every suppression) before it answers. */
export const make: Effect.Effect<SuppressionsService, StorageError, SuppressionStore> = Effect.gen(function* () {
  const store = yield* SuppressionStore
  const workspaces = new Map<string, WorkspaceSet>()
  let newest = 0
  const setOf = (workspaceId: string): WorkspaceSet => {
    let found = workspaces.get(workspaceId)
    if (found === undefined) {
      found = { account: new Set(), user: new Set() }
      workspaces.set(workspaceId, found)
    }
    return found
  }
  const refreshFrom = (since: number) =>
    Effect.map(store.createdSince(since), (suppressions) => {
      for (const s of suppressions) {
        setOf(s.workspaceId)[s.subject.kind].add(s.subject.id)
        if (s.createdAt > newest) newest = s.createdAt
      }
    })
  yield* refreshFrom(0)
  return {
    isSuppressed: (workspaceId, accountId, userId) => {
      const set = workspaces.get(workspaceId)
      return set !== undefined && (set.account.has(accountId) || (userId !== undefined && set.user.has(userId)))
    },
    add: (workspaceId, subject) => {
      const ids = setOf(workspaceId)[subject.kind]
      if (ids.has(subject.id)) return () => {}
      ids.add(subject.id)
      return () => void ids.delete(subject.id)
    },
    refresh: Effect.suspend(() => refreshFrom(Math.max(0, newest - refreshOverlapMillis)))
  }
})

/**
 * The set, loaded before the layer is built, and refreshed in the background every
 * {@link refreshMillis} until the layer's scope closes (a failed refresh is retried at the next).
 */
export const layer: Layer.Layer<Suppressions, StorageError, SuppressionStore> = Layer.scoped(
  Suppressions,
  Effect.tap(make, (set) =>
    Effect.forkScoped(Effect.repeat(Effect.ignore(set.refresh), Schedule.spaced(Duration.millis(refreshMillis))))
  )
)
