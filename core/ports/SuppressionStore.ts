/**
 * The `SuppressionStore` port: the subjects whose data an administrator erased, each with the
 * audit of its erasures (who, when, what was removed). A suppression stops later events for its
 * subject from recreating it: ingest answers them without storing anything (`core/ingest/Erasure.ts`).
 *
 * A suppression is created once per subject and never removed; erasing the subject again records
 * the later run on the same suppression (its counts added, its last run's time and operator kept),
 * so the answer to a repeated erasure is the same record.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "./StorageError.ts"

/** Whose data is erased: an account (`account_id`) or a user (`user_id`) of a workspace. */
export type SubjectKind = "account" | "user"

/** An erased subject: its kind and its id, as events carry it. */
export interface Subject {
  readonly kind: SubjectKind
  readonly id: string
}

/** What one erasure removed (or, for actions, redacted), counted per kind of data. */
export interface ErasureCounts {
  readonly events: number
  readonly profileFacts: number
  readonly users: number
  readonly logins: number
  readonly featureGates: number
  readonly runtimeSessions: number
  readonly approvals: number
  /** Actions kept with their personal fields removed or replaced by the subject's pseudonym. */
  readonly actionsRedacted: number
}

/** Nothing removed. */
export const noCounts: ErasureCounts = {
  events: 0,
  profileFacts: 0,
  users: 0,
  logins: 0,
  featureGates: 0,
  runtimeSessions: 0,
  approvals: 0,
  actionsRedacted: 0
}

/** The sum of two counts, kind by kind. */
export const addCounts = (a: ErasureCounts, b: ErasureCounts): ErasureCounts => ({
  events: a.events + b.events,
  profileFacts: a.profileFacts + b.profileFacts,
  users: a.users + b.users,
  logins: a.logins + b.logins,
  featureGates: a.featureGates + b.featureGates,
  runtimeSessions: a.runtimeSessions + b.runtimeSessions,
  approvals: a.approvals + b.approvals,
  actionsRedacted: a.actionsRedacted + b.actionsRedacted
})

/**
 * A suppression with its audit: created by the first erasure of its subject (when and by whom),
 * what every erasure of it removed in total, and when and by whom it was last erased.
 */
export interface Suppression {
  readonly workspaceId: string
  readonly subject: Subject
  readonly createdAt: number
  /** The API key (its id) of the administrator who erased the subject first. */
  readonly createdBy: string
  readonly removed: ErasureCounts
  readonly lastErasedAt: number
  readonly lastErasedBy: string
}

/** One erasure run to record: the subject, when, by whom and what it removed. */
export interface ErasureRun {
  readonly workspaceId: string
  readonly subject: Subject
  readonly at: number
  readonly by: string
  readonly removed: ErasureCounts
}

/** The suppression port: record erasures, read suppressions. */
export interface SuppressionStoreService {
  /**
   * Records an erasure run: creates the subject's suppression (`createdAt`, `createdBy` of this
   * run) or, when it exists, adds the run's counts to it and makes this run its last. Answers the
   * suppression as it now is.
   */
  readonly record: (run: ErasureRun) => Effect.Effect<Suppression, StorageError>
  /** The subject's suppression, if it was erased. */
  readonly get: (workspaceId: string, subject: Subject) => Effect.Effect<Option.Option<Suppression>, StorageError>
  /**
   * One page of a workspace's suppressions, newest first (by `createdAt`, then kind and id
   * descending); `after` continues past the last one of the page before.
   */
  readonly list: (query: {
    readonly workspaceId: string
    readonly limit: number
    readonly after?: { readonly createdAt: number; readonly kind: SubjectKind; readonly id: string }
  }) => Effect.Effect<ReadonlyArray<Suppression>, StorageError>
  /**
   * Every suppression of every workspace created at or after `since` (epoch ms), in no particular
   * order: what a process's in-memory suppression set is loaded and refreshed from.
   */
  readonly createdSince: (since: number) => Effect.Effect<ReadonlyArray<Suppression>, StorageError>
}

/** The service tag of the suppression store. */
export class SuppressionStore extends Context.Tag("@accord/core/SuppressionStore")<
  SuppressionStore,
  SuppressionStoreService
>() {}
