/**
 * Registers a contract suite's tests on ONE store, built once before them (PGlite takes seconds to
 * boot) and released after them; tests keep apart by using unique ids.
 *
 * This uses `@effect/vitest`'s module-level `layer`, not `it.layer`: every `layer(...)` call
 * rebinds the shared `it` object's `layer` method to nest inside the layer just built (same memo
 * map), so a second suite calling `it.layer` in the same file would silently get the first suite's
 * store (memoized ports) next to its own fresh client.
 */
import { layer, type Vitest } from "@effect/vitest"
import * as Layer from "effect/Layer"

export const onOneStore = <R>(
  makeLayer: () => Layer.Layer<R, unknown>,
  tests: (it: Vitest.MethodsNonLive<R>) => void
): void => layer(Layer.suspend(makeLayer), { timeout: "60 seconds" })(tests)
