import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ImportJobStore, maxLineErrors } from "../../core/ports/ImportJobStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const T = 1_700_000_000_000

/**
 * The ImportJobStore contract: a job is opened once per id, its progress moves only from the line
 * it stands at, and it keeps the first refused lines. One store per suite; each test uses
 * workspaces of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<ImportJobStore, unknown>) =>
  describe(`ImportJobStore contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const progress = (workspaceId: string, fromLine: number, toLine: number, errorLines: Array<number> = []) => ({
        workspaceId,
        id: "history",
        fromLine,
        toLine,
        bytesCommitted: toLine * 10,
        accepted: toLine - fromLine - errorLines.length,
        duplicates: 0,
        refused: errorLines.length,
        errors: errorLines.map((line) => ({ line, code: "invalid_event" })),
        now: T + toLine
      })

      it.effect("open creates a running job once; opening again answers it as it stands", () =>
        Effect.gen(function* () {
          const store = yield* ImportJobStore
          const workspaceId = uid("ws-")
          const created = yield* store.open(workspaceId, "history", T)
          assert.deepStrictEqual(
            [created.state, created.linesCommitted, created.accepted, created.errors],
            ["running", 0, 0, []]
          )
          assert.isTrue(yield* store.advance(progress(workspaceId, 0, 5, [2])))
          const again = yield* store.open(workspaceId, "history", T + 100)
          assert.deepStrictEqual(
            [again.linesCommitted, again.bytesCommitted, again.accepted, again.refused, again.errors],
            [5, 50, 4, 1, [{ line: 2, code: "invalid_event" }]]
          )
          assert.isTrue(Option.isNone(yield* store.find(uid("ws-"), "history")))
        })
      )

      it.effect("advance moves only from the line the job stands at", () =>
        Effect.gen(function* () {
          const store = yield* ImportJobStore
          const workspaceId = uid("ws-")
          yield* store.open(workspaceId, "history", T)
          assert.isTrue(yield* store.advance(progress(workspaceId, 0, 3)))
          assert.isFalse(yield* store.advance(progress(workspaceId, 0, 6)))
          assert.isTrue(yield* store.advance(progress(workspaceId, 3, 6)))
          const job = Option.getOrThrow(yield* store.find(workspaceId, "history"))
          assert.deepStrictEqual([job.linesCommitted, job.accepted], [6, 6])
        })
      )

      it.effect("keeps the first refused lines only, and counts them all", () =>
        Effect.gen(function* () {
          const store = yield* ImportJobStore
          const workspaceId = uid("ws-")
          yield* store.open(workspaceId, "history", T)
          const many = Array.from({ length: maxLineErrors + 20 }, (_, i) => i + 1)
          assert.isTrue(yield* store.advance(progress(workspaceId, 0, many.length, many)))
          const job = Option.getOrThrow(yield* store.find(workspaceId, "history"))
          assert.strictEqual(job.refused, many.length)
          assert.deepStrictEqual(
            job.errors.map((error) => error.line),
            many.slice(0, maxLineErrors)
          )
        })
      )

      it.effect("a failed job says why, and opening it again resumes it as running", () =>
        Effect.gen(function* () {
          const store = yield* ImportJobStore
          const workspaceId = uid("ws-")
          yield* store.open(workspaceId, "history", T)
          yield* store.finish(workspaceId, "history", { state: "failed", failure: "content_too_large" }, T + 1)
          const failed = Option.getOrThrow(yield* store.find(workspaceId, "history"))
          assert.deepStrictEqual([failed.state, failed.failure], ["failed", "content_too_large"])
          const resumed = yield* store.open(workspaceId, "history", T + 2)
          assert.deepStrictEqual([resumed.state, resumed.failure], ["running", null])
          yield* store.finish(workspaceId, "history", { state: "completed" }, T + 3)
          const done = yield* store.open(workspaceId, "history", T + 4)
          assert.strictEqual(done.state, "completed")
        })
      )
    })
  })
