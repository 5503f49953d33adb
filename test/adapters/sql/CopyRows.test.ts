/**
 * Event rows sent with `COPY` (`EventStore.batchRows` under `copiedRows`, a bulk import's write)
 * arrive exactly as sent, whatever their text: every field through `COPY`'s text format on both SQL
 * clients (PGlite always; PostgreSQL with `DATABASE_URL`), compared with what the JSON parameter
 * path stores for the same events.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import { copiedRows } from "../../../adapters/sql/EventStore.ts"
import { EventStore, type StoredEvent } from "../../../core/ports/EventStore.ts"
import { Transactor } from "../../../core/ports/Transactor.ts"
import { storageVariants } from "../../support/storage.ts"
import { uid } from "../../support/storage.ts"

const T = Date.UTC(2026, 10, 20)
/** Text PostgreSQL can hold: anything but NUL, lone surrogates left out. */
const text = fc.string({ unit: "grapheme", maxLength: 24 }).map((s) => s.replaceAll("\u0000", ""))
const specials = fc.constantFrom("\\", "\t", "\n", "\r", "\\N", "\\.", '"', "\\\\", "\u2028", "😀")
const awkward = fc.array(fc.oneof(text, specials), { maxLength: 6 }).map((parts) => parts.join(""))

for (const variant of storageVariants.filter((v) => v.name !== "memory")) {
  describe.skipIf(!variant.available)(`event rows sent with COPY (${variant.name})`, () => {
    it.layer(variant.layer())((it) => {
      it.effect.prop(
        "every field reads back as sent, the same as through the JSON parameter",
        [
          fc.array(fc.tuple(awkward, awkward, awkward, fc.option(awkward, { nil: null })), {
            minLength: 1,
            maxLength: 8
          })
        ],
        ([fields]) =>
          Effect.gen(function* () {
            const store = yield* EventStore
            const transactor = yield* Transactor
            const workspaceId = uid("ws-")
            const batch = (prefix: string) =>
              fields.map(
                ([account, name, value, eventId], i): StoredEvent => ({
                  id: `${prefix}-${i}`,
                  workspaceId,
                  eventId: eventId === null ? null : `${prefix}:${eventId}:${i}`,
                  accountId: `acct ${account}`,
                  eventName: `name ${name}`,
                  occurredAt: T + i,
                  receivedAt: T,
                  payloadHash: "a".repeat(64),
                  body: { value, nested: [value, { [`k${value}`]: value }] }
                })
              )
            const copied = batch("copy")
            const results = yield* transactor.withTransaction(Effect.locally(store.append(copied), copiedRows, true))
            assert.deepStrictEqual(
              results.map((r) => r._tag),
              copied.map(() => "Stored")
            )
            yield* store.append(batch("json"))
            const read = yield* store.listAll({ workspaceId })
            const byId = new Map(read.map((e) => [e.id, e]))
            copied.forEach((sent, i) => {
              assert.deepStrictEqual(byId.get(sent.id), sent)
              const viaJson = byId.get(`json-${i}`)!
              assert.deepStrictEqual({ ...viaJson, id: sent.id, eventId: sent.eventId }, sent)
            })
          }),
        { fastCheck: { numRuns: 40 } }
      )
    })
  })
}
