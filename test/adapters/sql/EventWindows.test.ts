/**
 * The time windows a page of events reads (`EventStore.windowsOf`): newest first, each ending where
 * the one before it starts, together exactly the span the query allows, none empty, and the first
 * one short (a page usually needs no other statement).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { windowsOf } from "../../../adapters/sql/EventStore.ts"

const year = 365 * 86_400_000
const T = Date.UTC(2026, 10, 29)
const time = fc.integer({ min: T - 5 * year, max: T + year })

describe("EventStore.windowsOf", () => {
  it.prop(
    "the windows are contiguous, newest first, and cover exactly the query's span",
    [
      fc.option(time, { nil: undefined }),
      fc.option(time, { nil: undefined }),
      fc.option(time, { nil: undefined }),
      time
    ],
    ([from, to, cursor, now]) => {
      const q = {
        workspaceId: "ws",
        ...(from === undefined ? {} : { from }),
        ...(to === undefined ? {} : { to }),
        ...(cursor === undefined ? {} : { after: { occurredAt: cursor, id: "evt" } })
      }
      const windows = windowsOf(q, now)
      const upper = Math.min(
        to ?? Number.POSITIVE_INFINITY,
        cursor === undefined ? Number.POSITIVE_INFINITY : cursor + 1
      )
      const lower = from ?? Number.NEGATIVE_INFINITY
      if (lower >= upper) return assert.deepStrictEqual(windows, [])
      assert.isAtLeast(windows.length, 1)
      assert.isAtMost(windows.length, 3)
      assert.strictEqual(windows[0]!.to ?? Number.POSITIVE_INFINITY, upper)
      assert.strictEqual(windows.at(-1)!.from ?? Number.NEGATIVE_INFINITY, lower)
      windows.forEach((w, i) => {
        assert.isBelow(w.from ?? Number.NEGATIVE_INFINITY, w.to ?? Number.POSITIVE_INFINITY)
        if (i > 0) assert.strictEqual(w.to, windows[i - 1]!.from)
      })
    }
  )

  it("without bounds: this month and the last, the six before, then the rest", () => {
    assert.deepStrictEqual(windowsOf({ workspaceId: "ws" }, Date.UTC(2026, 10, 29, 12)), [
      { from: Date.UTC(2026, 9, 1) },
      { from: Date.UTC(2026, 3, 1), to: Date.UTC(2026, 9, 1) },
      { to: Date.UTC(2026, 3, 1) }
    ])
  })

  it("a cursor anchors the windows at its own month, whatever the time now", () => {
    const cursor = Date.UTC(2025, 1, 10)
    assert.deepStrictEqual(windowsOf({ workspaceId: "ws", after: { occurredAt: cursor, id: "evt" } }, T), [
      { from: Date.UTC(2025, 0, 1), to: cursor + 1 },
      { from: Date.UTC(2024, 6, 1), to: Date.UTC(2025, 0, 1) },
      { to: Date.UTC(2024, 6, 1) }
    ])
  })

  it("a one-day range is one window", () => {
    const from = Date.UTC(2026, 9, 2)
    assert.deepStrictEqual(windowsOf({ workspaceId: "ws", from, to: from + 86_400_000 }, T), [
      { from, to: from + 86_400_000 }
    ])
  })
})
