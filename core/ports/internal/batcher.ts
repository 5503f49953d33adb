/**
 * The batcher's queue and workers (see `Batcher.ts`).
 *
 * The queue is a plain array and a caller costs one `Effect.async` wait: measured under
 * `bench:ingest`, that was cheaper than a `Queue` plus a `Deferred` per caller, since at thousands
 * of items a second that bookkeeping is a large share of the work.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Runtime from "effect/Runtime"
import * as Scheduler from "effect/Scheduler"
import type * as Scope from "effect/Scope"

export const defaultMaxBatch = 256

export interface Options<A, B, E> {
  /** The most items in one run. */
  readonly maxBatch?: number
  /** Runs in flight at once. */
  readonly workers?: number
  /** Runs one item on its own: a batch of one, and each item of a split batch. */
  readonly one?: (item: A) => Effect.Effect<B, E>
  /** Which failures of a batch of several items split it (its items then run one at a time). */
  readonly splitOn?: (error: E) => boolean
  /**
   * Which failures of a run are met by running the same batch once more, at once, before the
   * batch is answered or split (a lost connection: the next run gets a fresh one). Default none.
   */
  readonly retryOn?: (error: E) => boolean
  /**
   * Which failures of a run (answered, not split) are also the answer of every item queued
   * meanwhile, without a run of their own: a store that did not answer in time would keep them
   * waiting as long again, one run after another. Default none.
   */
  readonly shareOn?: (error: E) => boolean
  /**
   * Runs when a worker that had nothing to do is woken by an item, before it takes its batch: a
   * chance for items arriving at the same moment to join (see {@link gatherNextTurn}).
   */
  readonly gather?: Effect.Effect<void>
  /**
   * `many` in callback form, for a store that can run a batch without a fiber: it calls `done` once
   * with the batch's results. When given, the batcher has no worker fibers: batches are taken and
   * answered from plain callbacks, and only `one` (a split batch's items, and a batch of one when
   * `one` is given) and a `gather` other than {@link gatherNextTurn} run as effects.
   */
  readonly manyNow?: (items: ReadonlyArray<A>, done: (exit: Exit.Exit<ReadonlyArray<B>, E>) => void) => void
}

/**
 * Waits for the host's next turn (a zero-delay timer, not the Clock, so a `TestClock` does not stop
 * it): every request that arrived with the first one gets to queue its item before the batch is
 * taken. Without it, a run that occupies the thread itself (an embedded database such as PGlite
 * executes in the calling thread) is taken as soon as the first request of a burst is ready, and
 * every batch holds one item.
 */
export const gatherNextTurn: Effect.Effect<void> = Effect.withScheduler(Effect.yieldNow(), Scheduler.timer(0))

/** {@link gatherNextTurn} for the callback form: the same zero-delay timer. */
const nextTurn = Scheduler.timer(0)

interface Pending<A, B, E> {
  readonly item: A
  /** Called once with the item's result (an `Exit` is also the effect that returns it). */
  readonly resume: (exit: Exit.Exit<B, E>) => void
}

/**
 * A batcher's two doors: `submit` waits in the calling fiber; `offer` queues the item and calls
 * `onExit` once with its result, from the worker, without a fiber of its own.
 */
export interface Doors<A, B, E> {
  /** Queues an item and waits for its result in the next batch. */
  readonly submit: (item: A) => Effect.Effect<B, E>
  /** Queues an item and calls `onExit` once with its result, without a fiber. */
  readonly offer: (item: A, onExit: (exit: Exit.Exit<B, E>) => void) => void
}

export const make = <A, B, E>(
  many: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>,
  options?: Options<A, B, E>
): Effect.Effect<(item: A) => Effect.Effect<B, E>, never, Scope.Scope> =>
  Effect.map(makeDoors(many, options), (doors) => doors.submit)

/** `many`, run once more when its first run fails with a cause `retries` accepts. */
const retriedOnce =
  <A, B, E>(
    many: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>,
    retries: (cause: Cause.Cause<E>) => boolean
  ) =>
  (items: ReadonlyArray<A>): Effect.Effect<ReadonlyArray<B>, E> =>
    Effect.catchAllCause(many(items), (cause) => (retries(cause) ? many(items) : Effect.failCause(cause)))

/** The same for `many` in callback form. */
const retriedOnceNow =
  <A, B, E>(
    manyNow: (items: ReadonlyArray<A>, done: (exit: Exit.Exit<ReadonlyArray<B>, E>) => void) => void,
    retries: (cause: Cause.Cause<E>) => boolean
  ) =>
  (items: ReadonlyArray<A>, done: (exit: Exit.Exit<ReadonlyArray<B>, E>) => void): void =>
    manyNow(items, (exit) => {
      if (Exit.isSuccess(exit) || !retries(exit.cause)) return done(exit)
      try {
        manyNow(items, done)
      } catch (defect) {
        done(Exit.die(defect))
      }
    })

export const makeDoors = <A, B, E>(
  firstMany: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>,
  options?: Options<A, B, E>
): Effect.Effect<Doors<A, B, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const maxBatch = options?.maxBatch ?? defaultMaxBatch
    const retryOn = options?.retryOn
    const retries = (cause: Cause.Cause<E>): boolean => {
      if (retryOn === undefined) return false
      const failure = Cause.failureOption(cause)
      return failure._tag === "Some" && retryOn(failure.value)
    }
    const many = retryOn === undefined ? firstMany : retriedOnce(firstMany, retries)
    const one = options?.one ?? ((item: A) => Effect.map(many([item]), (results) => results[0]!))
    const splitOn = options?.splitOn
    const splits = (cause: Cause.Cause<E>): boolean => {
      if (splitOn === undefined) return true
      const failure = Cause.failureOption(cause)
      return failure._tag === "Some" && splitOn(failure.value)
    }
    const shareOn = options?.shareOn
    const shares = (cause: Cause.Cause<E>): boolean => {
      if (shareOn === undefined) return false
      const failure = Cause.failureOption(cause)
      return failure._tag === "Some" && shareOn(failure.value)
    }
    const firstManyNow = options?.manyNow
    const manyNow =
      firstManyNow === undefined || retryOn === undefined ? firstManyNow : retriedOnceNow(firstManyNow, retries)
    if (manyNow !== undefined)
      return yield* callbackDoors(
        manyNow,
        options?.one,
        one,
        splits,
        shares,
        maxBatch,
        options?.workers ?? 1,
        options?.gather
      )
    const queue: Array<Pending<A, B, E>> = []
    const idle: Array<() => void> = []
    let closed = false

    // Waiting is interruptible; taking a batch, running it and answering it is not, so a batch
    // taken is never lost, even while the scope closes.
    const gather = options?.gather
    // `true` when the worker had to wait for the item that woke it.
    const waitForWork = Effect.async<boolean>((resume) => {
      if (queue.length > 0) return resume(Effect.succeed(false))
      const wake = () => resume(Effect.succeed(true))
      idle.push(wake)
      return Effect.sync(() => {
        const at = idle.indexOf(wake)
        if (at !== -1) idle.splice(at, 1)
      })
    })
    const answer = (pending: Pending<A, B, E>, exit: Exit.Exit<B, E>) => pending.resume(exit)
    const worker = Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        const waited = yield* restore(waitForWork)
        if (waited && gather !== undefined) yield* restore(gather)
        const batch = queue.splice(0, maxBatch)
        if (batch.length === 0) return
        if (batch.length === 1) return answer(batch[0]!, yield* Effect.exit(one(batch[0]!.item)))
        const exit = yield* Effect.exit(many(batch.map((pending) => pending.item)))
        if (Exit.isFailure(exit) && splits(exit.cause)) {
          // One item that fails must not fail the others: each runs again on its own.
          for (const pending of batch) answer(pending, yield* Effect.exit(one(pending.item)))
          return
        }
        for (let i = 0; i < batch.length; i++) {
          batch[i]!.resume(Exit.isSuccess(exit) ? Exit.succeed(exit.value[i]!) : Exit.failCause(exit.cause))
        }
        if (Exit.isFailure(exit) && shares(exit.cause)) {
          for (const pending of queue.splice(0)) pending.resume(Exit.failCause(exit.cause))
        }
      })
    )
    for (let i = 0; i < (options?.workers ?? 1); i++) yield* Effect.forkScoped(Effect.forever(worker))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        for (const pending of queue.splice(0)) pending.resume(Exit.interrupt(FiberId.none))
      })
    )
    const offer = (item: A, resume: (exit: Exit.Exit<B, E>) => void): void => {
      if (closed) return resume(Exit.interrupt(FiberId.none))
      queue.push({ item, resume })
      idle.pop()?.()
    }
    return {
      offer,
      submit: (item: A) => Effect.async<B, E>((resume) => offer(item, resume))
    }
  })

/**
 * The doors over `many` in callback form (`Options.manyNow`): the same queue, batches, splits and
 * closing as the worker fibers, run from callbacks. An idle batcher woken by an item takes its batch
 * after `gather` (on the host's next turn for {@link gatherNextTurn}, else on the scheduler's next
 * task); a batcher that finishes a run with items waiting takes the next batch at once. Closing the
 * scope interrupts the items still waiting and waits for the runs in flight, which are answered.
 *
 * Measured under `bench:ingest` (docs/performance.md): with the group commit on
 * this form instead of a worker fiber resumed from the database driver's callback for every batch,
 * the server's CPU per event in garbage collection and in Effect's runtime fell by more than half in
 * both `bench:perf` pairs.
 */
const callbackDoors = <A, B, E>(
  manyNow: (items: ReadonlyArray<A>, done: (exit: Exit.Exit<ReadonlyArray<B>, E>) => void) => void,
  /** `Options.one` as given: when it is, a batch of one runs through it, else through `manyNow`. */
  ownOne: ((item: A) => Effect.Effect<B, E>) | undefined,
  one: (item: A) => Effect.Effect<B, E>,
  splits: (cause: Cause.Cause<E>) => boolean,
  shares: (cause: Cause.Cause<E>) => boolean,
  maxBatch: number,
  workers: number,
  gather: Effect.Effect<void> | undefined
): Effect.Effect<Doors<A, B, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const runCallback = Runtime.runCallback(yield* Effect.runtime<never>())
    const queue: Array<Pending<A, B, E>> = []
    let running = 0
    let waking = false
    let closed = false
    // Resumed when the last run in flight is answered (the scope's closing waits for it).
    const drained: Array<() => void> = []

    const finished = (): void => {
      running--
      if (queue.length > 0 && !closed) return take()
      if (running === 0) for (const resume of drained.splice(0)) resume()
    }
    // Answers each item of a run; a callback that throws does not keep the others unanswered.
    const answerAll = (batch: ReadonlyArray<Pending<A, B, E>>, exitOf: (i: number) => Exit.Exit<B, E>): void => {
      for (let i = 0; i < batch.length; i++) {
        try {
          batch[i]!.resume(exitOf(i))
        } catch {
          // The caller's own defect; the others are still answered.
        }
      }
    }
    const runOne = (batch: ReadonlyArray<Pending<A, B, E>>): void => {
      runCallback(
        Effect.forEach(
          batch,
          (pending) => Effect.map(Effect.exit(one(pending.item)), (exit) => answerAll([pending], () => exit)),
          {
            discard: true
          }
        ),
        { onExit: finished }
      )
    }
    const run = (batch: ReadonlyArray<Pending<A, B, E>>): void => {
      if (batch.length === 1 && ownOne !== undefined) return runOne(batch)
      let answered = false
      const done = (exit: Exit.Exit<ReadonlyArray<B>, E>): void => {
        if (answered) return
        answered = true
        // One item that fails must not fail the others: each runs again on its own.
        if (Exit.isFailure(exit) && batch.length > 1 && splits(exit.cause)) return runOne(batch)
        answerAll(batch, (i) => (Exit.isSuccess(exit) ? Exit.succeed(exit.value[i]!) : Exit.failCause(exit.cause)))
        if (Exit.isFailure(exit) && shares(exit.cause)) answerAll(queue.splice(0), () => Exit.failCause(exit.cause))
        finished()
      }
      try {
        manyNow(
          batch.map((pending) => pending.item),
          done
        )
      } catch (defect) {
        done(Exit.die(defect))
      }
    }
    const take = (): void => {
      while (running < workers && queue.length > 0) {
        running++
        run(queue.splice(0, maxBatch))
      }
    }
    const woken = (): void => {
      waking = false
      take()
    }
    const wake = (): void => {
      waking = true
      if (gather === undefined) Scheduler.defaultScheduler.scheduleTask(woken, 0)
      else if (gather === gatherNextTurn) nextTurn.scheduleTask(woken, 0)
      else runCallback(gather, { onExit: woken })
    }

    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        closed = true
        for (const pending of queue.splice(0)) pending.resume(Exit.interrupt(FiberId.none))
        if (running === 0) return resume(Effect.void)
        drained.push(() => resume(Effect.void))
      })
    )
    const offer = (item: A, resume: (exit: Exit.Exit<B, E>) => void): void => {
      if (closed) return resume(Exit.interrupt(FiberId.none))
      queue.push({ item, resume })
      if (running < workers && !waking) wake()
    }
    return {
      offer,
      submit: (item: A) => Effect.async<B, E>((resume) => offer(item, resume))
    }
  })
