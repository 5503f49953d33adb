/**
 * The one classification of a driver's fault (`SqlSupport.faultKind`), one case per kind, by
 * SQLSTATE and, where a code says too little, by message.
 */
import { assert, describe, it } from "@effect/vitest"
import { faultKind } from "../../../adapters/sql/SqlSupport.ts"

describe("faultKind", () => {
  const cases: ReadonlyArray<readonly [string, string | undefined, string, string]> = [
    ["a terminated session", "57P01", "terminating connection due to administrator command", "connection"],
    ["a refused connection", "ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432", "connection"],
    ["a statement timeout", "57014", "canceling statement due to statement timeout", "timeout"],
    ["a deadlock", "40P01", "deadlock detected", "conflict"],
    ["a serialization failure", "40001", "could not serialize access due to concurrent update", "conflict"],
    [
      "a row routed to a partition whose bounds a concurrent attach changed",
      "23514",
      'new row for relation "accord_events_default" violates partition constraint',
      "conflict"
    ],
    ["a check constraint", "23514", 'new row for relation "t" violates check constraint "t_check"', "refused"],
    ["a unique violation", "23505", "duplicate key value violates unique constraint", "refused"],
    ["too many clients", "53300", "sorry, too many clients already", "overloaded"],
    ["a wrapper's timeout without a code", undefined, "timeout exceeded when trying to connect", "timeout"],
    ["anything else", "XX000", "internal error", "other"]
  ]
  for (const [name, code, message, kind] of cases) {
    it(`${name}: ${kind}`, () => {
      assert.strictEqual(faultKind({ code, message }), kind)
    })
  }
})
