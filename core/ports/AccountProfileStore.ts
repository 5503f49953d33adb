/**
 * The `AccountProfileStore` port: the small account profile built from event properties, the
 * latest name and e-mail per `user_id` (spec "Account profile facts", "User object rules"), and each
 * account user's last login (login activity, for the active-user counts).
 *
 * Every fact, user field and login carries the occurrence time of the event that set it, and a
 * newer occurrence wins (ties broken by the source event's id), so out-of-order delivery converges
 * to the same profile.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "./StorageError.ts"
import type { Subject } from "./SuppressionStore.ts"

/**
 * One current fact of an account's profile: its name, value, when it was observed and the event
 * that set it.
 */
export interface ProfileFact {
  readonly name: string
  readonly value: unknown
  readonly observedAt: number
  /** Accord's id of the event that set it. */
  readonly sourceEventId: string
}

/** An account's profile: every current fact the Direct API events set. */
export interface AccountProfile {
  readonly workspaceId: string
  readonly accountId: string
  readonly facts: ReadonlyArray<ProfileFact>
}

/** One field of a user record, with when it was observed and the event that set it. */
export interface UserField {
  readonly value: string
  readonly observedAt: number
  readonly sourceEventId: string
}

/**
 * A user of an account as events described them (name, email), each field with its observation
 * time.
 */
export interface UserRecord {
  readonly workspaceId: string
  readonly userId: string
  readonly name: UserField | null
  readonly email: UserField | null
}

/** Facts to merge into an account's profile, as one ingested event sets them. */
export interface FactsEntry {
  readonly workspaceId: string
  readonly accountId: string
  readonly facts: ReadonlyArray<ProfileFact>
}

/**
 * A user's login to an account (spec "Account profile facts", login activity: `user_logged_in` or
 * `session_started` with `semantic_type` `login` and the `user_id` who caused it). `observedAt` is
 * when it occurred.
 */
export interface LoginActivity {
  readonly workspaceId: string
  readonly accountId: string
  readonly userId: string
  readonly observedAt: number
  /** Accord's id of the event. */
  readonly sourceEventId: string
}

/**
 * One account with a profile, as listed: how many facts it has and when the oldest and newest of
 * them were observed.
 */
export interface AccountSummary {
  readonly accountId: string
  readonly factCount: number
  readonly firstObservedAt: number
  readonly lastObservedAt: number
}

/**
 * The account profile port: facts and users merged from events (newest observation wins), and their
 * reads.
 */
export interface AccountProfileStoreService {
  /**
   * One page of a workspace's accounts that have at least one fact, by account id (ascending);
   * `after` continues past the last account id of the page before.
   */
  readonly listAccounts: (query: {
    readonly workspaceId: string
    readonly limit: number
    readonly after?: string
  }) => Effect.Effect<ReadonlyArray<AccountSummary>, StorageError>
  /** Applies facts; each replaces the stored one only if it is newer (see module doc). */
  readonly applyFacts: (
    workspaceId: string,
    accountId: string,
    facts: ReadonlyArray<ProfileFact>
  ) => Effect.Effect<void, StorageError>
  /**
   * The same for many accounts at once (one statement on SQL); entries may repeat an account and a
   * fact, the newest wins.
   */
  readonly applyFactsBatch: (entries: ReadonlyArray<FactsEntry>) => Effect.Effect<void, StorageError>
  /** An account's profile, if it has any fact. */
  readonly get: (workspaceId: string, accountId: string) => Effect.Effect<Option.Option<AccountProfile>, StorageError>
  /** Sending a field updates it (if newer); leaving it out keeps the stored value. */
  readonly upsertUser: (options: {
    readonly workspaceId: string
    readonly userId: string
    readonly name?: UserField
    readonly email?: UserField
  }) => Effect.Effect<void, StorageError>
  /** A user record, if events described one. */
  readonly getUser: (workspaceId: string, userId: string) => Effect.Effect<Option.Option<UserRecord>, StorageError>
  /**
   * Keeps each (workspace, account, user)'s newest login (see module doc; one statement on SQL);
   * entries may repeat a user, the newest wins.
   */
  readonly recordLogins: (logins: ReadonlyArray<LoginActivity>) => Effect.Effect<void, StorageError>
  /**
   * For each of `since` (epoch ms), in order: how many distinct users of the account have their
   * newest login at or after it.
   */
  readonly countActiveUsers: (
    workspaceId: string,
    accountId: string,
    since: ReadonlyArray<number>
  ) => Effect.Effect<ReadonlyArray<number>, StorageError>
  /** Every user's newest login to the account, by user id. */
  readonly listLogins: (
    workspaceId: string,
    accountId: string
  ) => Effect.Effect<ReadonlyArray<LoginActivity>, StorageError>
  /**
   * Removes what the profile holds of a subject. An account: its facts, its logins, and the user
   * records of its login users and of `userIds` (the users its erased events named). A user: the
   * user record, its logins to every account, and the facts that `sourceEventIds` (its erased
   * events) set. Answers how many facts, user records and logins it removed.
   */
  readonly eraseSubject: (options: {
    readonly workspaceId: string
    readonly subject: Subject
    readonly userIds: ReadonlyArray<string>
    readonly sourceEventIds: ReadonlyArray<string>
  }) => Effect.Effect<{ readonly profileFacts: number; readonly users: number; readonly logins: number }, StorageError>
}

/** The service tag of the account profile store. */
export class AccountProfileStore extends Context.Tag("@accord/core/AccountProfileStore")<
  AccountProfileStore,
  AccountProfileStoreService
>() {}

/**
 * Whether `candidate` (observed at, from event) supersedes `current`.
 */
export const isNewer = (
  candidate: { readonly observedAt: number; readonly sourceEventId: string },
  current: { readonly observedAt: number; readonly sourceEventId: string } | null | undefined
): boolean =>
  current == null ||
  candidate.observedAt > current.observedAt ||
  (candidate.observedAt === current.observedAt && candidate.sourceEventId > current.sourceEventId)
