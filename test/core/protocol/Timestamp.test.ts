import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { formatTimestamp, parseTimestamp } from "../../../core/protocol/Timestamp.ts"

/** 0000-01-01T00:00:00.000Z: `Date.UTC(0, 0, 1)` would be 1900. */
const year0 = -62_167_219_200_000

describe("Timestamp", () => {
  it.prop(
    "the sending form round-trips to the millisecond",
    [fc.integer({ min: year0, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) })],
    ([millis]) => {
      assert.strictEqual(parseTimestamp(formatTimestamp(millis)), millis)
    }
  )

  it.prop(
    "agrees with Date.parse on every well-formed UTC timestamp",
    [fc.date({ min: new Date(Date.UTC(1970, 0, 1)), max: new Date(Date.UTC(9999, 0, 1)), noInvalidDate: true })],
    ([date]) => {
      const text = date.toISOString()
      assert.strictEqual(parseTimestamp(text), Date.parse(text))
    }
  )

  it.prop(
    "agrees with Date on every calendar instant of years 0000 to 9999",
    [fc.integer({ min: year0, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) })],
    ([millis]) => {
      const date = new Date(millis)
      const pad = (n: number, width = 2) => String(n).padStart(width, "0")
      const text =
        `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}T` +
        `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds(), 3)}+00:00`
      assert.strictEqual(parseTimestamp(text), millis)
    }
  )

  it("years 0000 to 0099 are not shifted into the 1900s", () => {
    assert.strictEqual(parseTimestamp("0000-01-01T00:00:00Z"), year0)
    assert.strictEqual(parseTimestamp("0001-01-01T00:00:00Z"), -62_135_596_800_000)
    assert.strictEqual(parseTimestamp("0099-12-31T23:59:59.999Z"), -59_011_459_200_001)
    assert.strictEqual(parseTimestamp("0004-02-29T00:00:00Z"), new Date("0004-02-29T00:00:00Z").getTime())
    assert.isUndefined(parseTimestamp("0100-02-29T00:00:00Z"))
    assert.strictEqual(parseTimestamp("0000-02-29T00:00:00Z"), new Date("0000-02-29T00:00:00Z").getTime())
  })

  it("accepts offsets and lowercase separators as RFC 3339 allows", () => {
    const utc = Date.UTC(2026, 10, 22, 10, 15, 30)
    assert.strictEqual(parseTimestamp("2026-11-22T10:15:30Z"), utc)
    assert.strictEqual(parseTimestamp("2026-11-22t10:15:30z"), utc)
    assert.strictEqual(parseTimestamp("2026-11-22T12:15:30+02:00"), utc)
    assert.strictEqual(parseTimestamp("2026-11-22T05:45:30.000-04:30"), utc)
    assert.strictEqual(parseTimestamp("2026-11-22T10:15:30.5Z"), utc + 500)
    assert.strictEqual(parseTimestamp("2026-11-22T10:15:30.123456789Z"), utc + 123)
    assert.strictEqual(parseTimestamp("2024-02-29T00:00:00Z"), Date.UTC(2024, 1, 29))
  })

  for (const bad of [
    "",
    "2026-11-22",
    "2026-11-22T10:15:30",
    "2026-11-22 10:15:30Z",
    "2026-11-22T10:15Z",
    "2026-13-01T00:00:00Z",
    "2026-00-01T00:00:00Z",
    "2026-02-29T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-11-22T24:00:00Z",
    "2026-11-22T10:60:00Z",
    "2026-11-22T10:15:60Z",
    "2026-11-22T10:15:30.Z",
    "2026-11-22T10:15:30.1234567890Z",
    "2026-11-22T10:15:30+0200",
    "2026-11-22T10:15:30+24:00",
    "2026-11-22T10:15:30Zjunk",
    "+02026-11-22T10:15:30Z",
    "1763806530",
    "Sun, 22 Nov 2026 10:15:30 GMT"
  ]) {
    it(`rejects ${JSON.stringify(bad)}`, () => {
      assert.isUndefined(parseTimestamp(bad))
    })
  }
})
