import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { type Connection, ConnectionStore, type RevisionState } from "../../core/ports/ConnectionStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

/**
 * The ConnectionStore contract (spec "Connection revision lifecycle"). One store per suite; each
 * test registers connections for workspaces of its own.
 *
 * With `sqlLayer` (SQL variants) the suite also checks a state the port alone cannot reach (a
 * connection whose revisions are all retired) by writing it directly.
 */
export const suite = (
  name: string,
  layer: () => Layer.Layer<ConnectionStore, unknown>,
  sqlLayer?: () => Layer.Layer<ConnectionStore | SqlClient.SqlClient, unknown>
) =>
  describe(`ConnectionStore contract (${name})`, () => {
    onOneStore(sqlLayer ?? layer, (it) => {
      const register = (workspaceId: string, now: number, endpoint = "https://customer.example/accord") =>
        Effect.flatMap(ConnectionStore, (store) =>
          store.registerRevision({ workspaceId, connectionId: uid("conn-"), endpoint, now })
        )
      const activate = (connectionId: string, revision: number, now = 5_000) =>
        Effect.flatMap(ConnectionStore, (store) => store.activate({ connectionId, revision, now }))
      const retire = (connectionId: string, revision: number, now = 9_000) =>
        Effect.flatMap(ConnectionStore, (store) => store.retire({ connectionId, revision, now }))
      const load = (connectionId: string) =>
        Effect.flatMap(ConnectionStore, (store) => Effect.map(store.getById(connectionId), Option.getOrThrow))
      /** Revision states, newest first. */
      const states = (connection: Connection): ReadonlyArray<readonly [number, RevisionState]> =>
        connection.revisions.map((r) => [r.revision, r.state] as const)
      const statesOf = (connectionId: string) => Effect.map(load(connectionId), states)

      it.effect("the first registration creates the connection with revision 0, pending", () =>
        Effect.gen(function* () {
          const store = yield* ConnectionStore
          const workspaceId = uid("ws-")
          const connectionId = uid("conn-")
          const registered = yield* store.registerRevision({
            workspaceId,
            connectionId,
            endpoint: "https://customer.example/hook",
            now: 1_000
          })
          assert.deepStrictEqual(registered, { connectionId, revision: 0 })
          const expected: Connection = {
            workspaceId,
            connectionId,
            createdAt: 1_000,
            revisions: [
              {
                revision: 0,
                endpoint: "https://customer.example/hook",
                state: "pending",
                createdAt: 1_000,
                activatedAt: null,
                retiredAt: null
              }
            ],
            lastCheck: null
          }
          assert.deepStrictEqual(yield* store.get(workspaceId), Option.some(expected))
          assert.deepStrictEqual(yield* store.getById(connectionId), Option.some(expected))
        })
      )

      it.effect("an unknown workspace or connection id has no connection", () =>
        Effect.gen(function* () {
          const store = yield* ConnectionStore
          assert.isTrue(Option.isNone(yield* store.get(uid("ws-"))))
          assert.isTrue(Option.isNone(yield* store.getById(uid("conn-"))))
        })
      )

      it.effect("a second registration is revision 1, pending, and supersedes revision 0", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000, "https://a.example/v0")
          assert.deepStrictEqual(yield* register(workspaceId, 2_000, "https://a.example/v1"), {
            connectionId,
            revision: 1
          })
          const connection = yield* load(connectionId)
          assert.deepStrictEqual(states(connection), [
            [1, "pending"],
            [0, "superseded"]
          ])
          assert.deepStrictEqual(
            connection.revisions.map((r) => [r.endpoint, r.createdAt]),
            [
              ["https://a.example/v1", 2_000],
              ["https://a.example/v0", 1_000]
            ]
          )
          assert.strictEqual(connection.createdAt, 1_000)
        })
      )

      it.effect("the connectionId argument is ignored when the workspace already has a connection", () =>
        Effect.gen(function* () {
          const store = yield* ConnectionStore
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000)
          const ignored = uid("conn-")
          const second = yield* store.registerRevision({
            workspaceId,
            connectionId: ignored,
            endpoint: "https://b.example",
            now: 2_000
          })
          assert.deepStrictEqual(second, { connectionId, revision: 1 })
          assert.isTrue(Option.isNone(yield* store.getById(ignored)))
          assert.strictEqual(Option.getOrThrow(yield* store.get(workspaceId)).connectionId, connectionId)
        })
      )

      it.effect("activating a superseded revision is refused and changes nothing", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000)
          yield* register(workspaceId, 2_000)
          const before = yield* load(connectionId)
          assert.strictEqual(yield* activate(connectionId, 0), "superseded")
          assert.deepStrictEqual(yield* load(connectionId), before)
        })
      )

      it.effect("activating an unknown connection or revision is refused", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000)
          assert.strictEqual(yield* activate(uid("conn-"), 0), "superseded")
          assert.strictEqual(yield* activate(connectionId, 1), "superseded")
          assert.deepStrictEqual(yield* statesOf(connectionId), [[0, "pending"]])
        })
      )

      it.effect("the newest pending revision activates; activating a newer one replaces it", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000)
          yield* register(workspaceId, 2_000)
          assert.strictEqual(yield* activate(connectionId, 1, 3_000), "activated")
          const activated = yield* load(connectionId)
          assert.deepStrictEqual(states(activated), [
            [1, "active"],
            [0, "superseded"]
          ])
          assert.strictEqual(activated.revisions[0]!.activatedAt, 3_000)
          assert.deepStrictEqual(yield* register(workspaceId, 4_000), { connectionId, revision: 2 })
          // A new pending revision leaves the active one in use until it is proven.
          assert.deepStrictEqual(yield* statesOf(connectionId), [
            [2, "pending"],
            [1, "active"],
            [0, "superseded"]
          ])
          assert.strictEqual(yield* activate(connectionId, 2, 5_000), "activated")
          const replaced = yield* load(connectionId)
          assert.deepStrictEqual(states(replaced), [
            [2, "active"],
            [1, "replaced"],
            [0, "superseded"]
          ])
          assert.deepStrictEqual(
            replaced.revisions.map((r) => r.activatedAt),
            [5_000, 3_000, null]
          )
        })
      )

      it.effect("re-activating the active revision is refused", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000)
          assert.strictEqual(yield* activate(connectionId, 0, 2_000), "activated")
          assert.strictEqual(yield* activate(connectionId, 0, 3_000), "superseded")
          const connection = yield* load(connectionId)
          assert.deepStrictEqual(states(connection), [[0, "active"]])
          assert.strictEqual(connection.revisions[0]!.activatedAt, 2_000)
        })
      )

      it.effect("an active revision cannot be activated again once a newer one is pending", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000)
          assert.strictEqual(yield* activate(connectionId, 0), "activated")
          yield* register(workspaceId, 2_000)
          assert.strictEqual(yield* activate(connectionId, 0), "superseded")
          assert.deepStrictEqual(yield* statesOf(connectionId), [
            [1, "pending"],
            [0, "active"]
          ])
        })
      )

      it.effect("retire applies only to replaced or superseded revisions", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000) // 0: superseded below
          yield* register(workspaceId, 2_000) // 1: active, then replaced
          assert.strictEqual(yield* activate(connectionId, 1), "activated")
          yield* register(workspaceId, 3_000) // 2: active
          assert.strictEqual(yield* activate(connectionId, 2), "activated")
          yield* register(workspaceId, 4_000) // 3: pending
          assert.deepStrictEqual(yield* statesOf(connectionId), [
            [3, "pending"],
            [2, "active"],
            [1, "replaced"],
            [0, "superseded"]
          ])

          assert.isFalse(yield* retire(connectionId, 3))
          assert.isFalse(yield* retire(connectionId, 2))
          assert.isFalse(yield* retire(connectionId, 7))
          assert.isFalse(yield* retire(uid("conn-"), 0))
          assert.isTrue(yield* retire(connectionId, 1, 8_000))
          assert.isTrue(yield* retire(connectionId, 0, 9_000))
          assert.isFalse(yield* retire(connectionId, 0, 9_500))
          const connection = yield* load(connectionId)
          assert.deepStrictEqual(states(connection), [
            [3, "pending"],
            [2, "active"],
            [1, "retired"],
            [0, "retired"]
          ])
          assert.deepStrictEqual(
            connection.revisions.map((r) => r.retiredAt),
            [null, null, 8_000, 9_000]
          )
        })
      )

      it.effect("recordCheck is shown by get, and a later check replaces it", () =>
        Effect.gen(function* () {
          const store = yield* ConnectionStore
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000)
          const failed = { revision: 0, at: 2_000, outcome: "failed", problem: "signature_invalid" } as const
          yield* store.recordCheck(connectionId, failed)
          assert.deepStrictEqual((yield* load(connectionId)).lastCheck, failed)
          const succeeded = { revision: 0, at: 3_000, outcome: "succeeded", problem: null } as const
          assert.isTrue(yield* store.recordCheck(connectionId, succeeded))
          assert.deepStrictEqual(Option.getOrThrow(yield* store.get(workspaceId)).lastCheck, succeeded)
        })
      )

      it.effect("recordCheck refuses a check of a revision that is no longer active or pending", () =>
        Effect.gen(function* () {
          const store = yield* ConnectionStore
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000) // 0
          yield* register(workspaceId, 2_000) // 1 pending, 0 superseded
          const newer = { revision: 1, at: 3_000, outcome: "succeeded", problem: null } as const
          assert.isTrue(yield* store.recordCheck(connectionId, newer))
          assert.strictEqual(yield* activate(connectionId, 1), "activated")
          assert.isTrue(yield* store.recordCheck(connectionId, { ...newer, at: 3_500 }))
          const late = { revision: 0, at: 4_000, outcome: "failed", problem: "invalid_signature" } as const
          assert.isFalse(yield* store.recordCheck(connectionId, late))
          assert.isFalse(yield* store.recordCheck(connectionId, { ...late, revision: 9 }))
          assert.isFalse(yield* store.recordCheck(uid("conn-"), late))
          assert.deepStrictEqual((yield* load(connectionId)).lastCheck, { ...newer, at: 3_500 })
        })
      )

      it.effect("dueForCheck returns connections never checked or last checked before the bound", () =>
        Effect.gen(function* () {
          const store = yield* ConnectionStore
          const check = (connectionId: string, at: number) =>
            store.recordCheck(connectionId, { revision: 0, at, outcome: "succeeded", problem: null })
          const never = (yield* register(uid("ws-"), 1_000)).connectionId
          const older = (yield* register(uid("ws-"), 1_000)).connectionId
          const atBound = (yield* register(uid("ws-"), 1_000)).connectionId
          const newer = (yield* register(uid("ws-"), 1_000)).connectionId
          const active = (yield* register(uid("ws-"), 1_000)).connectionId
          assert.strictEqual(yield* activate(active, 0), "activated")
          yield* check(older, 9_999)
          yield* check(atBound, 10_000)
          yield* check(newer, 10_001)
          yield* check(active, 500)
          const mine = new Set([never, older, atBound, newer, active])
          const due = (yield* store.dueForCheck(10_000)).filter((c) => mine.has(c.connectionId))
          assert.sameMembers(
            due.map((c) => c.connectionId),
            [never, older, active]
          )
          // Whole connections, as get returns them.
          for (const connection of due) {
            assert.deepStrictEqual(connection, yield* load(connection.connectionId))
          }
        })
      )

      it.effect("dueForCheck skips connections without an active or pending revision", () =>
        Effect.gen(function* () {
          // Unreachable through the port (the newest revision is always pending or active), so
          // written directly where the store is SQL; nothing to check for memory.
          const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
          if (Option.isNone(sql)) return
          const store = yield* ConnectionStore
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000)
          yield* register(workspaceId, 2_000)
          yield* sql.value`UPDATE accord_connection_revisions SET state = 'retired', retired_at = 3000
                           WHERE connection_id = ${connectionId}`
          const due = yield* store.dueForCheck(Number.MAX_SAFE_INTEGER)
          assert.isFalse(due.some((c) => c.connectionId === connectionId))
        })
      )

      it.effect("withRetirableRevisions lists connections with a replaced or superseded revision", () =>
        Effect.gen(function* () {
          const store = yield* ConnectionStore
          const only = (yield* register(uid("ws-"), 1_000)).connectionId // 0 pending
          const activeOnly = (yield* register(uid("ws-"), 1_000)).connectionId // 0 active
          assert.strictEqual(yield* activate(activeOnly, 0), "activated")
          const supersededWs = uid("ws-")
          const superseded = (yield* register(supersededWs, 1_000)).connectionId
          yield* register(supersededWs, 2_000) // 0 superseded, 1 pending
          const replacedWs = uid("ws-")
          const replaced = (yield* register(replacedWs, 1_000)).connectionId
          assert.strictEqual(yield* activate(replaced, 0), "activated")
          yield* register(replacedWs, 2_000)
          assert.strictEqual(yield* activate(replaced, 1), "activated") // 0 replaced
          const retiredWs = uid("ws-")
          const retired = (yield* register(retiredWs, 1_000)).connectionId
          yield* register(retiredWs, 2_000)
          assert.isTrue(yield* retire(retired, 0)) // 0 retired, 1 pending
          const mine = new Set([only, activeOnly, superseded, replaced, retired])
          const listed = (yield* store.withRetirableRevisions).filter((c) => mine.has(c.connectionId))
          assert.sameMembers(
            listed.map((c) => c.connectionId),
            [superseded, replaced]
          )
          for (const connection of listed) assert.deepStrictEqual(connection, yield* load(connection.connectionId))
        })
      )

      it.effect("the audit trail keeps every entry in order, per connection", () =>
        Effect.gen(function* () {
          const store = yield* ConnectionStore
          const a = (yield* register(uid("ws-"), 1_000)).connectionId
          const b = (yield* register(uid("ws-"), 1_000)).connectionId
          assert.deepStrictEqual(yield* store.audit(a), [])
          yield* store.appendAudit(a, {
            at: 1_000,
            revision: 0,
            event: "registered",
            detail: { endpointHost: "a.example" }
          })
          yield* store.appendAudit(b, { at: 1_500, revision: 0, event: "registered", detail: {} })
          yield* store.appendAudit(a, {
            at: 2_000,
            revision: 0,
            event: "orphan_retired",
            detail: { missing: ["completion"] }
          })
          const trail = yield* store.audit(a)
          assert.deepStrictEqual(
            trail.map(({ seq: _, ...entry }) => entry),
            [
              { at: 1_000, revision: 0, event: "registered", detail: { endpointHost: "a.example" } },
              { at: 2_000, revision: 0, event: "orphan_retired", detail: { missing: ["completion"] } }
            ]
          )
          assert.isTrue(trail[0]!.seq < trail[1]!.seq)
          assert.strictEqual((yield* store.audit(b)).length, 1)
        })
      )

      it.effect("appending to the audit trail of an unknown connection fails", () =>
        Effect.gen(function* () {
          const store = yield* ConnectionStore
          const result = yield* Effect.either(
            store.appendAudit(uid("conn-"), { at: 1, revision: 0, event: "registered", detail: {} })
          )
          assert.strictEqual(result._tag, "Left")
        })
      )

      it.effect("the audit table refuses updates and deletes (SQL)", () =>
        Effect.gen(function* () {
          const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
          if (Option.isNone(sql)) return
          const store = yield* ConnectionStore
          const connectionId = (yield* register(uid("ws-"), 1_000)).connectionId
          yield* store.appendAudit(connectionId, { at: 1_000, revision: 0, event: "registered", detail: {} })
          const update = yield* Effect.either(
            sql.value`UPDATE accord_connection_audit SET event = 'retired' WHERE connection_id = ${connectionId}`
          )
          const remove = yield* Effect.either(
            sql.value`DELETE FROM accord_connection_audit WHERE connection_id = ${connectionId}`
          )
          assert.strictEqual(update._tag, "Left")
          assert.strictEqual(remove._tag, "Left")
          assert.deepStrictEqual(
            (yield* store.audit(connectionId)).map((e) => e.event),
            ["registered"]
          )
        })
      )

      it.effect("20 concurrent registrations get distinct revisions 0..19 and leave exactly one pending", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const results = yield* Effect.all(
            Array.from({ length: 20 }, (_, i) => register(workspaceId, 1_000 + i)),
            { concurrency: "unbounded" }
          )
          const connectionIds = new Set(results.map((r) => r.connectionId))
          assert.strictEqual(connectionIds.size, 1)
          assert.deepStrictEqual(
            results.map((r) => r.revision).sort((a, b) => a - b),
            Array.from({ length: 20 }, (_, i) => i)
          )
          const connection = yield* load([...connectionIds][0]!)
          assert.deepStrictEqual(
            connection.revisions.map((r) => r.revision),
            Array.from({ length: 20 }, (_, i) => 19 - i)
          )
          assert.deepStrictEqual(
            connection.revisions.filter((r) => r.state === "pending").map((r) => r.revision),
            [19]
          )
          assert.isTrue(connection.revisions.slice(1).every((r) => r.state === "superseded"))
        })
      )

      it.effect("10 concurrent activations of one pending revision: exactly one activates", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const { connectionId } = yield* register(workspaceId, 1_000)
          yield* register(workspaceId, 2_000)
          const outcomes = yield* Effect.all(
            Array.from({ length: 10 }, (_, i) => activate(connectionId, 1, 3_000 + i)),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(outcomes.filter((o) => o === "activated").length, 1)
          assert.deepStrictEqual(yield* statesOf(connectionId), [
            [1, "active"],
            [0, "superseded"]
          ])
        })
      )
    })
  })
