import { assert, describe, it } from "@effect/vitest"
import { remembering } from "../../../core/ingest/Memo.ts"

describe("remembering", () => {
  const counting = (options?: Parameters<typeof remembering>[1]) => {
    const calls: Array<string> = []
    const f = remembering((key: string) => {
      calls.push(key)
      return key === "none" ? undefined : key.length
    }, options)
    return { calls, f }
  }

  it("computes a key once, undefined results included", () => {
    const { calls, f } = counting()
    assert.deepStrictEqual([f("plan"), f("plan"), f("none"), f("none")], [4, 4, undefined, undefined])
    assert.deepStrictEqual(calls, ["plan", "none"])
  })

  it("forgets everything when full, so memory stays bounded", () => {
    const { calls, f } = counting({ max: 2 })
    f("a")
    f("b")
    f("c")
    f("a")
    f("c")
    assert.deepStrictEqual(calls, ["a", "b", "c", "a"])
  })

  it("never keeps what keep refuses", () => {
    const { calls, f } = counting({ keep: (key) => !key.includes("@") })
    f("ada@example.com")
    f("ada@example.com")
    f("plan")
    f("plan")
    assert.deepStrictEqual(calls, ["ada@example.com", "ada@example.com", "plan"])
  })
})
