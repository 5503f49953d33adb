import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { type RuntimeSessionRecord, RuntimeSessionStore } from "../../core/ports/RuntimeSessionStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

/**
 * The RuntimeSessionStore contract. One store per suite; each test works in workspaces of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<RuntimeSessionStore, unknown>) =>
  describe(`RuntimeSessionStore contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const session = (workspaceId: string, overrides: Partial<RuntimeSessionRecord> = {}): RuntimeSessionRecord => ({
        sessionId: uid("rts-"),
        workspaceId,
        accountId: uid("acct-"),
        subject: uid("user-"),
        role: "billing_owner",
        authorities: ["funnels.actions.request", "funnels.actions.execute"],
        tokenHash: uid("hash-"),
        issuedBy: uid("key-"),
        createdAt: 1_700_000_000_123,
        expiresAt: 1_700_000_900_123,
        revokedAt: null,
        ...overrides
      })

      it.effect("a created session is found by its hash and by its id, exactly as stored", () =>
        Effect.gen(function* () {
          const store = yield* RuntimeSessionStore
          const record = session(uid("ws-"), { role: "viewer", authorities: ["funnels.actions.request"] })
          assert.isTrue(yield* store.create(record))
          assert.deepStrictEqual(yield* store.findByHash(record.tokenHash), Option.some(record))
          assert.deepStrictEqual(yield* store.get(record.sessionId), Option.some(record))
          assert.isTrue(Option.isNone(yield* store.findByHash(uid("hash-"))))
          assert.isTrue(Option.isNone(yield* store.get(uid("rts-"))))
        })
      )

      it.effect("a session with no authorities, or already revoked, round-trips too", () =>
        Effect.gen(function* () {
          const store = yield* RuntimeSessionStore
          const record = session(uid("ws-"), { authorities: [], revokedAt: 1_700_000_000_500 })
          assert.isTrue(yield* store.create(record))
          assert.deepStrictEqual(yield* store.get(record.sessionId), Option.some(record))
        })
      )

      it.effect("a session naming the account's trial round-trips it; one naming none has no trialRef", () =>
        Effect.gen(function* () {
          const store = yield* RuntimeSessionStore
          const record = session(uid("ws-"), {
            trialRef: { entityKey: "sub_ünï_1", entityKind: "subscription", version: 0 }
          })
          assert.isTrue(yield* store.create(record))
          assert.deepStrictEqual(yield* store.get(record.sessionId), Option.some(record))
          assert.deepStrictEqual(yield* store.findByHash(record.tokenHash), Option.some(record))
          const plain = session(uid("ws-"))
          assert.isTrue(yield* store.create(plain))
          assert.isFalse("trialRef" in Option.getOrThrow(yield* store.get(plain.sessionId)))
        })
      )

      it.effect("a duplicate id is refused and changes nothing", () =>
        Effect.gen(function* () {
          const store = yield* RuntimeSessionStore
          const workspaceId = uid("ws-")
          const first = session(workspaceId)
          assert.isTrue(yield* store.create(first))
          const clash = session(workspaceId, { sessionId: first.sessionId, role: "viewer" })
          assert.isFalse(yield* store.create(clash))
          assert.isTrue(Option.isNone(yield* store.findByHash(clash.tokenHash)))
          assert.deepStrictEqual(yield* store.get(first.sessionId), Option.some(first))
        })
      )

      it.effect("a duplicate token hash in the workspace is refused and changes nothing", () =>
        Effect.gen(function* () {
          const store = yield* RuntimeSessionStore
          const first = session(uid("ws-"))
          assert.isTrue(yield* store.create(first))
          const clash = session(first.workspaceId, { tokenHash: first.tokenHash })
          assert.isFalse(yield* store.create(clash))
          assert.isTrue(Option.isNone(yield* store.get(clash.sessionId)))
          assert.deepStrictEqual(yield* store.findByHash(first.tokenHash), Option.some(first))
        })
      )

      it.effect("revoke succeeds once, then reports there is no unrevoked session", () =>
        Effect.gen(function* () {
          const store = yield* RuntimeSessionStore
          const workspaceId = uid("ws-")
          const record = session(workspaceId)
          assert.isTrue(yield* store.create(record))
          assert.isTrue(yield* store.revoke(workspaceId, record.sessionId, 1_700_000_000_500))
          assert.isFalse(yield* store.revoke(workspaceId, record.sessionId, 1_700_000_000_600))
          const revoked = { ...record, revokedAt: 1_700_000_000_500 }
          assert.deepStrictEqual(yield* store.get(record.sessionId), Option.some(revoked))
          assert.deepStrictEqual(yield* store.findByHash(record.tokenHash), Option.some(revoked))
          assert.isFalse(yield* store.revoke(workspaceId, uid("rts-"), 1_700_000_000_600))
        })
      )

      it.effect("a session cannot be revoked through another workspace", () =>
        Effect.gen(function* () {
          const store = yield* RuntimeSessionStore
          const record = session(uid("ws-"))
          assert.isTrue(yield* store.create(record))
          assert.isFalse(yield* store.revoke(uid("ws-"), record.sessionId, 1_700_000_000_500))
          assert.deepStrictEqual(yield* store.get(record.sessionId), Option.some(record))
        })
      )

      it.effect("list: a workspace's sessions newest first, revoked ones too, paged by keyset", () =>
        Effect.gen(function* () {
          const store = yield* RuntimeSessionStore
          const workspaceId = uid("ws-")
          // two share a creation time: the larger id comes first
          const made = [
            session(workspaceId, { sessionId: "rts-1", createdAt: 1_000 }),
            session(workspaceId, { sessionId: "rts-3", createdAt: 2_000 }),
            session(workspaceId, { sessionId: "rts-2", createdAt: 2_000 }),
            session(workspaceId, { sessionId: "rts-4", createdAt: 3_000, revokedAt: 3_500 })
          ].map((s) => ({ ...s, sessionId: `${workspaceId}-${s.sessionId}` }))
          for (const s of made) assert.isTrue(yield* store.create(s))
          assert.isTrue(yield* store.create(session(uid("ws-"), { createdAt: 2_500 })))
          const ids = (listed: ReadonlyArray<RuntimeSessionRecord>) =>
            listed.map((s) => s.sessionId.slice(workspaceId.length + 1))
          const all = yield* store.list({ workspaceId, limit: 10 })
          assert.deepStrictEqual(ids(all), ["rts-4", "rts-3", "rts-2", "rts-1"])
          assert.deepStrictEqual(all[0], made[3])
          const first = yield* store.list({ workspaceId, limit: 2 })
          assert.deepStrictEqual(ids(first), ["rts-4", "rts-3"])
          const last = first[first.length - 1]!
          const after = { createdAt: last.createdAt, id: last.sessionId }
          assert.deepStrictEqual(ids(yield* store.list({ workspaceId, limit: 10, after })), ["rts-2", "rts-1"])
          assert.deepStrictEqual(yield* store.list({ workspaceId: uid("ws-"), limit: 10 }), [])
        })
      )

      it.effect("revoking one session leaves the account's other sessions live", () =>
        Effect.gen(function* () {
          const store = yield* RuntimeSessionStore
          const workspaceId = uid("ws-")
          const first = session(workspaceId)
          const second = session(workspaceId, { accountId: first.accountId, subject: first.subject })
          assert.isTrue(yield* store.create(first))
          assert.isTrue(yield* store.create(second))
          assert.isTrue(yield* store.revoke(workspaceId, first.sessionId, 1_700_000_000_500))
          assert.deepStrictEqual(yield* store.get(second.sessionId), Option.some(second))
        })
      )
    })
  })
