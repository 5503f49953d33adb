/**
 * The `UsageMeterStore` port: the unit each usage meter was first recorded with, per workspace
 * (spec "Usage rollup event": "`product_key`, `metric_key` and `unit` must keep a stable meaning over
 * time").
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "./StorageError.ts"

/**
 * The usage meter port: records the first unit a meter is reported in, so a meter's meaning stays
 * stable.
 */
export interface UsageMeterStoreService {
  /**
   * Records `unit` for the meter if it has none yet, atomically. Returns the unit the meter had
   * before this call (`none` when this call recorded it).
   */
  readonly claimUnit: (options: {
    readonly workspaceId: string
    readonly meterKey: string
    readonly unit: string
    readonly now: number
  }) => Effect.Effect<Option.Option<string>, StorageError>
  /**
   * Forgets the meter's unit if it is `unit`. Only for a claim made earlier in the same transaction
   * whose event was not stored after all (`IngestWriter`), before anyone else could rely on it.
   */
  readonly releaseUnit: (options: {
    readonly workspaceId: string
    readonly meterKey: string
    readonly unit: string
  }) => Effect.Effect<void, StorageError>
}

/** The service tag of the usage meter store. */
export class UsageMeterStore extends Context.Tag("@accord/core/UsageMeterStore")<
  UsageMeterStore,
  UsageMeterStoreService
>() {}
