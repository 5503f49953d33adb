/**
 * Group commit for ingested events. Each request hands its accepted event to the `Committer` and
 * waits; a worker takes whatever has queued up (up to `maxBatch`) and commits it with ONE
 * `IngestWriter.write` (one transaction, or one statement). Only then is each waiting request
 * answered, so a 202 is never sent before its event is committed, and concurrent requests share
 * the cost of a commit.
 *
 * A failed batch is treated by what the store says went wrong (`StorageError`'s fault kind):
 * - a lost connection or a serialization conflict: the same batch runs once more at once (the
 *   next attempt gets a fresh connection, the other transaction has moved on);
 * - a timeout or an overloaded database (a locked table, a slow or frozen database): the whole
 *   batch is answered with the failure (503, retry later), and so is every event that queued
 *   while it waited, so a slow database costs one wait per batch, not one per event, and no
 *   request waits longer than the storage bound for its event;
 * - anything else (the database refusing a row): its events are written again one by one, so an
 *   event the store refuses fails only itself, never the others it was batched with.
 *
 * The batching itself is `ports/Batcher`'s (a plain array queue and one asynchronous wait per
 * request, measurably cheaper than a queue and a deferred per request at thousands of events a
 * second). When the writer's callback form is provided (`IngestWriterNow`: the SQL writer on
 * PostgreSQL), the batches run from callbacks, without a worker fiber.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Batcher from "../ports/Batcher.ts"
import { faultOf, isRetryableAtOnce, isTransient, type StorageError } from "../ports/StorageError.ts"
import { IngestWriter, IngestWriterNow, type Submission, type WriteResult } from "../ports/IngestWriter.ts"

/** Group commit of ingested events: many concurrent submissions written in one transaction. */
export interface CommitterService {
  /** Commits the event (with others queued at the same time) and reports what happened to it. */
  readonly submit: (submission: Submission) => Effect.Effect<WriteResult, StorageError>
  /**
   * The same without a fiber: queues the event and calls `onExit` once with what happened to it,
   * after its batch committed (or failed).
   */
  readonly offer?: (submission: Submission, onExit: (exit: Exit.Exit<WriteResult, StorageError>) => void) => void
}

/** The service tag of the ingest group commit. */
export class Committer extends Context.Tag("@accord/core/ingest/Committer")<Committer, CommitterService>() {}

/**
 * The most events committed in one transaction.
 */
export const defaultMaxBatch = 256

/**
 * Commits in flight at once. One: a batch gathers everything that arrived while the previous one
 * was committing, so the database does its per-statement work once for many events. Measured under
 * `bench:ingest`'s load (PostgreSQL on the same 2-core machine), in one series 1 worker 5 192 events/s
 * and 2 workers 3 887; in another 2 workers 4 116, 4 workers 3 279, 8 workers 2 812: each extra
 * statement in flight cost more database CPU per event than it saved in waiting.
 */
export const defaultWorkers = 1

/** The group commit's batch size and number of workers. */
export interface CommitterOptions {
  readonly maxBatch?: number
  readonly workers?: number
  /**
   * What an idle worker woken by a submission waits for before it takes its batch. Default
   * `Batcher.gatherNextTurn`: the requests that arrived together are committed together. Without
   * it an embedded database that runs in the server's own thread (PGlite) committed every event
   * of a burst on its own (measured: 1–2 events per transaction at 32 concurrent requests).
   */
  readonly gather?: Effect.Effect<void>
}

/**
 * Starts the workers in the current scope (a `Batcher` over `IngestWriter.write`). When the scope
 * closes, submissions still waiting are interrupted (a commit in flight finishes first).
 */
export const make = (options?: CommitterOptions): Effect.Effect<CommitterService, never, Scope.Scope | IngestWriter> =>
  Effect.gen(function* () {
    const writer = yield* IngestWriter
    const now = yield* Effect.serviceOption(IngestWriterNow)
    return yield* Batcher.makeDoors(writer.write, {
      maxBatch: options?.maxBatch ?? defaultMaxBatch,
      workers: options?.workers ?? defaultWorkers,
      gather: options?.gather ?? Batcher.gatherNextTurn,
      retryOn: isRetryableAtOnce,
      splitOn: (error) => !isTransient(error),
      shareOn: (error) => faultOf(error) === "timeout" || faultOf(error) === "overloaded",
      // The writer's callback form, where it has one: no worker fiber (see `Batcher`'s `manyNow`).
      ...(now._tag === "None" ? {} : { manyNow: now.value.writeNow })
    })
  })

/**
 * Provides the group commit over the `IngestWriter`, its workers running for the layer's lifetime.
 */
export const layer = (options?: CommitterOptions): Layer.Layer<Committer, never, IngestWriter> =>
  Layer.scoped(Committer, make(options))
