/**
 * The `FeatureGateStore` port: feature-gate funnels awaiting access evidence (spec
 * `direct-api-ingestion.md` "States and transitions": a checking state and an unlocked step).
 *
 * A gate is `checking` until a correlated `entitlement_active` event unlocks it; unlocking is a
 * compare-and-set from `checking`, recording the event that did it.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "./StorageError.ts"

/**
 * A feature gate: the account, journey and feature it waits on, its state and the event that
 * unlocked it.
 */
export interface FeatureGate {
  readonly id: string
  readonly workspaceId: string
  readonly accountId: string
  readonly journeyId: string
  readonly versionId: string
  readonly featureKey: string
  /** When the journey began (epoch ms): evidence must be timed after it. */
  readonly startedAt: number
  readonly createdAt: number
  readonly state: "checking" | "unlocked"
  readonly unlockedAt: number | null
  /** Accord's id of the event that unlocked it. */
  readonly unlockEventId: string | null
}

/** The feature gate port: create gates, settle them on evidence, read and list them. */
export interface FeatureGateStoreService {
  /** `false` when a gate with this id exists (nothing changes). */
  readonly create: (
    gate: Omit<FeatureGate, "state" | "unlockedAt" | "unlockEventId">
  ) => Effect.Effect<boolean, StorageError>
  /** The gate with this id in the workspace, if any. */
  readonly get: (workspaceId: string, id: string) => Effect.Effect<Option.Option<FeatureGate>, StorageError>
  /** Every gate of the account, checking and unlocked, oldest first (by `createdAt`, then id). */
  readonly listByAccount: (
    workspaceId: string,
    accountId: string
  ) => Effect.Effect<ReadonlyArray<FeatureGate>, StorageError>
  /** The account's gates still in `checking`. */
  /**
   * One page of a workspace's gates, newest first (by `createdAt`, then id, both descending),
   * optionally of one account and one state; `after` continues past the last gate of the page before.
   */
  readonly list: (query: FeatureGateListQuery) => Effect.Effect<ReadonlyArray<FeatureGate>, StorageError>
  /** The account's gates still waiting for their evidence. */
  readonly checking: (workspaceId: string, accountId: string) => Effect.Effect<ReadonlyArray<FeatureGate>, StorageError>
  /** Unlocks a `checking` gate; `false` if it is not (or no longer) checking. */
  readonly unlock: (options: {
    readonly workspaceId: string
    readonly id: string
    readonly at: number
    readonly eventId: string
  }) => Effect.Effect<boolean, StorageError>
  /** Removes every gate of the account; answers how many. */
  readonly eraseAccount: (workspaceId: string, accountId: string) => Effect.Effect<number, StorageError>
}

/** One page of a workspace's feature gates, optionally filtered by account and state. */
export interface FeatureGateListQuery {
  readonly workspaceId: string
  readonly limit: number
  readonly accountId?: string
  readonly state?: FeatureGate["state"]
  readonly after?: { readonly createdAt: number; readonly id: string }
}

/** The service tag of the feature gate store. */
export class FeatureGateStore extends Context.Tag("@accord/core/FeatureGateStore")<
  FeatureGateStore,
  FeatureGateStoreService
>() {}
