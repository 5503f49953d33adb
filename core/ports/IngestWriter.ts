/**
 * The `IngestWriter` port: commits a batch of accepted events with everything they change, all or
 * nothing. For every event newly stored: the event row (its client `event_id` unique per
 * workspace decides duplicates), its profile facts (newest by event time wins), its login, its
 * user update, the feature gates it unlocks, and for a usage rollup its meter's unit.
 *
 * A usage meter keeps the unit it was first recorded with (spec "Usage rollup event": `unit` keeps a
 * stable meaning). The unit is claimed in the same transaction as the event, and only by an event
 * that is stored: a rollup refused for its unit, or a duplicate or conflicting one, leaves the
 * meter as it was.
 *
 * Two contracts. `IngestWriter` is every writer's: `core/ingest/StoreWriter.ts` composes it from
 * the storage ports in one transaction, and a storage adapter may provide a faster implementation
 * (the SQL one writes the common batch in a single statement). `IngestWriterNow` is the same write
 * in callback form, a separate capability that only a writer which can run a batch without a
 * fiber provides (the SQL writer on PostgreSQL), always together with the `IngestWriter` it
 * belongs to.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Option from "effect/Option"
import type { AccountProfileStoreService, LoginActivity, ProfileFact } from "./AccountProfileStore.ts"
import type { ApiKeyScope } from "./ApiKeyStore.ts"
import type { AppendResult, StoredEvent } from "./EventStore.ts"
import type { StorageError } from "./StorageError.ts"
import type { FieldIssue } from "../protocol/Json.ts"

/**
 * One accepted event, ready to commit.
 */
export interface Submission {
  readonly stored: StoredEvent
  /**
   * What the writers need of the normalized event besides the row. Only these: a submission waits
   * for its batch's commit, and whatever it holds lives that long (the rest of the prepared event,
   * its canonical payload text and the decoded fields, is garbage by then).
   */
  readonly normalized: {
    readonly userUpdate: Option.Option<Parameters<AccountProfileStoreService["upsertUser"]>[0]>
    readonly profileFacts: ReadonlyArray<ProfileFact>
    readonly login: Option.Option<LoginActivity>
  }
  /** The scope of the key it was sent with (only server ingest keys unlock gates). */
  readonly keyScope: ApiKeyScope
  /** For a usage rollup: the meter it feeds and the unit it is sent in. */
  readonly meter?: { readonly meterKey: string; readonly unit: string }
}

/**
 * What happened to one submission: stored, a duplicate or conflict of a stored event (nothing
 * written), or refused because its meter already has another unit (nothing written).
 */
export type WriteResult = AppendResult | { readonly _tag: "UnitChanged"; readonly issue: FieldIssue }

/** How a batch is written; the results are the same either way. */
export interface WriteOptions {
  /**
   * The batch is a bulk import's, written inside the caller's transaction: a writer may send its
   * rows by a bulk transport (the SQL writer sends the events with `COPY`).
   */
  readonly bulk?: boolean
}

/** Writes a batch of accepted events with everything they change, in one transaction. */
export interface IngestWriterService {
  /** One result per submission, in order. */
  readonly write: (
    batch: ReadonlyArray<Submission>,
    options?: WriteOptions
  ) => Effect.Effect<ReadonlyArray<WriteResult>, StorageError>
}

/** The service tag of the ingest writer the group commit calls. */
export class IngestWriter extends Context.Tag("@accord/core/ingest/IngestWriter")<
  IngestWriter,
  IngestWriterService
>() {}

/** The ingest writer in callback form, so a batch runs without a fiber on the hottest path. */
export interface IngestWriterNowService {
  /**
   * `IngestWriter.write` of the writer provided with it, in callback form: calls `done` once with
   * the same results `write` answers. The group commit runs its batches with it (`Committer`).
   */
  readonly writeNow: (
    batch: ReadonlyArray<Submission>,
    done: (exit: Exit.Exit<ReadonlyArray<WriteResult>, StorageError>) => void
  ) => void
}

/** The service tag of the ingest writer's callback form (the SQL writer on PostgreSQL). */
export class IngestWriterNow extends Context.Tag("@accord/core/ingest/IngestWriterNow")<
  IngestWriterNow,
  IngestWriterNowService
>() {}
