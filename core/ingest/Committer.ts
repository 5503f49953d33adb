/**
 * Group commit for ingested events. Each request hands its accepted event to the `Committer` and
 * waits; a worker takes whatever has queued up (up to `maxBatch`) and commits it with ONE
 * `IngestWriter.write` (one transaction, or one statement). Only then is each waiting request
 * answered, so a 202 is never sent before its event is committed, and concurrent requests share
 * the cost of a commit. When a batch fails, its events are written again one by one, so an event
 * the store refuses (or a deadlock) fails only itself, never the others it was batched with.
 *
 * The queue is a plain array: a request costs one asynchronous wait, not a queue and a deferred of
 * its own, since at thousands of events a second that bookkeeping is a large share of the work.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { StorageError } from "../ports/StorageError.ts"
import { IngestWriter, type Submission, type WriteResult } from "../ports/IngestWriter.ts"

/**
 * @since 0.1.0
 */
export interface CommitterService {
  /** Commits the event (with others queued at the same time) and reports what happened to it. */
  readonly submit: (submission: Submission) => Effect.Effect<WriteResult, StorageError>
}

/**
 * @since 0.1.0
 */
export class Committer extends Context.Tag("@accord/core/ingest/Committer")<Committer, CommitterService>() {}

/**
 * The most events committed in one transaction.
 *
 * @since 0.1.0
 */
export const defaultMaxBatch = 256

/**
 * Commits in flight at once. One: a batch gathers everything that arrived while the previous one
 * was committing, so the database does its per-statement work once for many events. Measured under
 * `bench:ingest`'s load (PostgreSQL on the same 2-core machine), in one series 1 worker 5 192 events/s
 * and 2 workers 3 887; in another 2 workers 4 116, 4 workers 3 279, 8 workers 2 812: each extra
 * statement in flight cost more database CPU per event than it saved in waiting.
 *
 * @since 0.1.0
 */
export const defaultWorkers = 1

interface Pending {
  readonly submission: Submission
  readonly resume: (effect: Effect.Effect<WriteResult, StorageError>) => void
}

/**
 * Starts the workers in the current scope. When the scope closes, submissions still waiting are
 * interrupted (a commit in flight finishes first).
 *
 * @since 0.1.0
 */
export const make = (options?: { readonly maxBatch?: number; readonly workers?: number }): Effect.Effect<
  CommitterService,
  never,
  Scope.Scope | IngestWriter
> =>
  Effect.gen(function*() {
    const maxBatch = options?.maxBatch ?? defaultMaxBatch
    const writer = yield* IngestWriter
    const queue: Array<Pending> = []
    const idle: Array<() => void> = []
    let closed = false

    // Waiting is interruptible; taking a batch, committing it and answering it is not, so a batch
    // taken is never lost, even while the scope closes.
    const waitForWork = Effect.async<void>((resume) => {
      if (queue.length > 0) return resume(Effect.void)
      const wake = () => resume(Effect.void)
      idle.push(wake)
      return Effect.sync(() => {
        const at = idle.indexOf(wake)
        if (at !== -1) idle.splice(at, 1)
      })
    })
    const worker = Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        yield* restore(waitForWork)
        const batch = queue.splice(0, maxBatch)
        if (batch.length === 0) return
        const exit = yield* Effect.exit(writer.write(batch.map((p) => p.submission)))
        if (Exit.isFailure(exit) && batch.length > 1) {
          // One event the store refuses must not fail the others: each is written again on its own.
          for (const pending of batch) {
            const alone = yield* Effect.exit(writer.write([pending.submission]))
            pending.resume(Exit.isSuccess(alone) ? Effect.succeed(alone.value[0]!) : Effect.failCause(alone.cause))
          }
          return
        }
        for (let i = 0; i < batch.length; i++) {
          batch[i]!.resume(Exit.isSuccess(exit) ? Effect.succeed(exit.value[i]!) : Effect.failCause(exit.cause))
        }
      })
    )
    for (let i = 0; i < (options?.workers ?? defaultWorkers); i++) yield* Effect.forkScoped(Effect.forever(worker))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        for (const pending of queue.splice(0)) pending.resume(Effect.interrupt)
      })
    )
    return {
      submit: (submission) =>
        Effect.async<WriteResult, StorageError>((resume) => {
          if (closed) return resume(Effect.interrupt)
          queue.push({ submission, resume })
          idle.pop()?.()
        })
    }
  })

/**
 * @since 0.1.0
 */
export const layer = (options?: { readonly maxBatch?: number; readonly workers?: number }): Layer.Layer<
  Committer,
  never,
  IngestWriter
> => Layer.scoped(Committer, make(options))
