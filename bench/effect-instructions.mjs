/**
 * A probe for `node --import`: counts the effect instructions the fiber runtime evaluates (one per
 * call of its instruction handlers: `Sync`, `OnSuccess`, `Async`, `Iterator`, …) and each fiber
 * resumption (`runLoop`), in `globalThis.__effectInstructions` (handler name → count). A harness
 * reads it around its measured phase (`bench/dispatch-phase.ts` prints the count per action).
 *
 * It patches the prototype of the `effect` package this repository resolves, so it counts for the
 * bundles too (they keep `effect` external). Counting slows the process: read CPU figures from a
 * run without it.
 */
import * as Effect from "effect/Effect"

const proto = Effect.runSync(Effect.withFiberRuntime((fiber) => Effect.succeed(Object.getPrototypeOf(fiber))))
const counts = (globalThis.__effectInstructions = {})
const handlers = [
  "Async",
  "Commit",
  "Failure",
  "OnFailure",
  "OnSuccess",
  "OnSuccessAndFailure",
  "Success",
  "Sync",
  "Tag",
  "UpdateRuntimeFlags",
  "While",
  "Iterator",
  "WithRuntime",
  "Yield",
  "Left",
  "Right",
  "Some",
  "None",
  "runLoop"
]
for (const name of handlers) {
  const original = proto[name]
  if (typeof original !== "function") continue
  counts[name] = 0
  proto[name] = function (instruction) {
    counts[name]++
    return original.call(this, instruction)
  }
}
