/**
 * `@effect/vitest`'s `layer(...)` assigns its layer-bound testers onto the package's shared `it`
 * object (`it.effect`, `it.scoped`, …), so whatever runs after a `layer(...)` block in the same module
 * graph provides that block's runtime: its stores, its scope (closed after the block) and its
 * `TestClock` (at whatever time its tests left it). Registered as a vitest `setupFiles` entry, this
 * puts the package's own testers back before every test file, so a file never inherits the layer of
 * a file that ran before it in the same worker.
 */
import { it, makeMethods } from "@effect/vitest"

makeMethods(it)
