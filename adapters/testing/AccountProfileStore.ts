import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as fc from "fast-check"
import {
  AccountProfileStore,
  type LoginActivity,
  type ProfileFact,
  type UserField
} from "../../core/ports/AccountProfileStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const T = 1_700_000_000_000

/**
 * The AccountProfileStore contract (spec "Account profile facts", "User object rules"): a newer
 * occurrence wins, ties go to the greater source event id, so any delivery order converges. One
 * store per suite; each test uses workspaces of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<AccountProfileStore, unknown>) =>
  describe(`AccountProfileStore contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const fact = (name: string, value: unknown, observedAt: number, sourceEventId = uid("evt-")): ProfileFact => ({
        name,
        value,
        observedAt,
        sourceEventId
      })
      const field = (value: string, observedAt: number, sourceEventId = uid("evt-")): UserField => ({
        value,
        observedAt,
        sourceEventId
      })
      /** The profile's facts by name (the port does not fix their order). */
      const factsOf = (workspaceId: string, accountId: string) =>
        Effect.flatMap(AccountProfileStore, (store) =>
          Effect.map(store.get(workspaceId, accountId), (profile) =>
            Option.map(profile, (p) => {
              assert.deepStrictEqual([p.workspaceId, p.accountId], [workspaceId, accountId])
              return [...p.facts].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
            })
          )
        )
      const apply = (workspaceId: string, facts: ReadonlyArray<ProfileFact>, accountId = "acct_1") =>
        Effect.flatMap(AccountProfileStore, (store) => store.applyFacts(workspaceId, accountId, facts))

      it.effect("an unknown account or user has no profile", () =>
        Effect.gen(function* () {
          const store = yield* AccountProfileStore
          assert.isTrue(Option.isNone(yield* store.get(uid("ws-"), "acct_1")))
          assert.isTrue(Option.isNone(yield* store.getUser(uid("ws-"), "user_1")))
        })
      )

      it.effect("applied facts make up the account's profile, and only that account's", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const plan = fact("plan", "pro", T)
          const seats = fact("seats", 12, T)
          const flags = fact("flags", { beta: true, list: [1, "a"] }, T)
          yield* apply(workspaceId, [plan, seats, flags])
          yield* apply(workspaceId, [fact("plan", "free", T)], "acct_other")
          assert.deepStrictEqual(yield* factsOf(workspaceId, "acct_1"), Option.some([flags, plan, seats]))
          assert.isTrue(Option.isNone(yield* factsOf(uid("ws-"), "acct_1")))
        })
      )

      it.effect("a batch over several accounts, repeating a fact, keeps the newest per account", () =>
        Effect.gen(function* () {
          const store = yield* AccountProfileStore
          const workspaceId = uid("ws-")
          const newestA = fact("plan", "team", T + 20)
          const b = fact("plan", "starter", T)
          yield* store.applyFactsBatch([
            { workspaceId, accountId: "acct_a", facts: [fact("plan", "pro", T + 10)] },
            { workspaceId, accountId: "acct_b", facts: [b] },
            { workspaceId, accountId: "acct_a", facts: [newestA, fact("plan", "free", T)] }
          ])
          assert.deepStrictEqual(yield* factsOf(workspaceId, "acct_a"), Option.some([newestA]))
          assert.deepStrictEqual(yield* factsOf(workspaceId, "acct_b"), Option.some([b]))
          yield* store.applyFactsBatch([{ workspaceId, accountId: "acct_a", facts: [fact("plan", "old", T + 5)] }])
          assert.deepStrictEqual(yield* factsOf(workspaceId, "acct_a"), Option.some([newestA]))
        })
      )

      it.effect("a newer fact replaces the stored one; an older one is ignored", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          yield* apply(workspaceId, [fact("plan", "starter", T + 10)])
          const newer = fact("plan", "pro", T + 20)
          yield* apply(workspaceId, [newer])
          yield* apply(workspaceId, [fact("plan", "legacy", T + 15)])
          assert.deepStrictEqual(yield* factsOf(workspaceId, "acct_1"), Option.some([newer]))
        })
      )

      it.effect("at the same observedAt, the greater sourceEventId wins in either order", () =>
        Effect.gen(function* () {
          const low = fact("plan", "from-a", T, "evt-a")
          const high = fact("plan", "from-b", T, "evt-b")
          const first = uid("ws-")
          const second = uid("ws-")
          yield* apply(first, [low])
          yield* apply(first, [high])
          yield* apply(second, [high])
          yield* apply(second, [low])
          assert.deepStrictEqual(yield* factsOf(first, "acct_1"), Option.some([high]))
          assert.deepStrictEqual(yield* factsOf(second, "acct_1"), Option.some([high]))
        })
      )

      it.effect("a batch with two values for one fact keeps the newest, in either order", () =>
        Effect.gen(function* () {
          const older = fact("plan", "starter", T + 1)
          const newer = fact("plan", "pro", T + 2)
          const first = uid("ws-")
          const second = uid("ws-")
          yield* apply(first, [older, newer])
          yield* apply(second, [newer, older])
          assert.deepStrictEqual(yield* factsOf(first, "acct_1"), Option.some([newer]))
          assert.deepStrictEqual(yield* factsOf(second, "acct_1"), Option.some([newer]))
        })
      )

      it.effect.prop(
        "any delivery order of the same fact updates converges to the same profile",
        [
          fc.array(
            fc.tuple(
              fc.constantFrom("plan", "seats", "region"),
              fc.integer({ min: 0, max: 4 }),
              fc.constantFrom("a", "b", "c")
            ),
            {
              minLength: 1,
              maxLength: 12
            }
          ),
          fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
          fc.integer({ min: 1, max: 4 })
        ],
        ([updates, shuffleKeys, batchSize]) =>
          Effect.gen(function* () {
            // Distinct source events (a suffix per update) so the newest of any two is well defined.
            const facts = updates.map(([name, offset, source], i) =>
              fact(name, { i }, T + offset, `evt-${source}-${i}`)
            )
            const permuted = facts
              .map((f, i) => [shuffleKeys[i]!, f] as const)
              .sort((a, b) => a[0] - b[0])
              .map(([, f]) => f)
            const inOrder = uid("ws-")
            const shuffled = uid("ws-")
            for (const f of facts) yield* apply(inOrder, [f])
            for (let i = 0; i < permuted.length; i += batchSize)
              yield* apply(shuffled, permuted.slice(i, i + batchSize))
            const newest = new Map<string, ProfileFact>()
            for (const f of facts) {
              const current = newest.get(f.name)
              if (
                current === undefined ||
                f.observedAt > current.observedAt ||
                (f.observedAt === current.observedAt && f.sourceEventId > current.sourceEventId)
              )
                newest.set(f.name, f)
            }
            const expected = Option.some([...newest.values()].sort((a, b) => (a.name < b.name ? -1 : 1)))
            assert.deepStrictEqual(yield* factsOf(inOrder, "acct_1"), expected)
            assert.deepStrictEqual(yield* factsOf(shuffled, "acct_1"), expected)
          }),
        { fastCheck: { numRuns: 30 } }
      )

      it.effect("upsertUser with only a name, then only an e-mail, keeps both", () =>
        Effect.gen(function* () {
          const store = yield* AccountProfileStore
          const workspaceId = uid("ws-")
          const name = field("Ada Lovelace", T)
          const email = field("ada@example.com", T + 5)
          yield* store.upsertUser({ workspaceId, userId: "user_1", name })
          assert.deepStrictEqual(
            yield* store.getUser(workspaceId, "user_1"),
            Option.some({ workspaceId, userId: "user_1", name, email: null })
          )
          yield* store.upsertUser({ workspaceId, userId: "user_1", email })
          assert.deepStrictEqual(
            yield* store.getUser(workspaceId, "user_1"),
            Option.some({ workspaceId, userId: "user_1", name, email })
          )
          assert.isTrue(Option.isNone(yield* store.getUser(workspaceId, "user_2")))
        })
      )

      it.effect("an older user field does not replace a newer one; a newer one does", () =>
        Effect.gen(function* () {
          const store = yield* AccountProfileStore
          const workspaceId = uid("ws-")
          const current = field("Ada", T + 10)
          yield* store.upsertUser({ workspaceId, userId: "user_1", name: current })
          yield* store.upsertUser({
            workspaceId,
            userId: "user_1",
            name: field("Old Ada", T + 5),
            email: field("ada@example.com", T + 5)
          })
          const user = Option.getOrThrow(yield* store.getUser(workspaceId, "user_1"))
          assert.deepStrictEqual(user.name, current)
          assert.strictEqual(user.email?.value, "ada@example.com")
          const renamed = field("Ada L.", T + 20)
          yield* store.upsertUser({ workspaceId, userId: "user_1", name: renamed })
          assert.deepStrictEqual(Option.getOrThrow(yield* store.getUser(workspaceId, "user_1")).name, renamed)
          // A tie on observedAt goes to the greater source event id.
          const tieLow = field("Tie Low", T + 30, "evt-a")
          const tieHigh = field("Tie High", T + 30, "evt-b")
          yield* store.upsertUser({ workspaceId, userId: "user_1", name: tieHigh })
          yield* store.upsertUser({ workspaceId, userId: "user_1", name: tieLow })
          assert.deepStrictEqual(Option.getOrThrow(yield* store.getUser(workspaceId, "user_1")).name, tieHigh)
        })
      )

      describe("login activity", () => {
        const login = (
          workspaceId: string,
          userId: string,
          observedAt: number,
          accountId = "acct_1"
        ): LoginActivity => ({
          workspaceId,
          accountId,
          userId,
          observedAt,
          sourceEventId: uid("evt-")
        })
        const counts = (workspaceId: string, since: ReadonlyArray<number>, accountId = "acct_1") =>
          Effect.flatMap(AccountProfileStore, (store) => store.countActiveUsers(workspaceId, accountId, since))

        it.effect("without logins every count is zero; no times, no counts", () =>
          Effect.gen(function* () {
            assert.deepStrictEqual(yield* counts(uid("ws-"), [0, T]), [0, 0])
            assert.deepStrictEqual(yield* counts(uid("ws-"), []), [])
          })
        )

        it.effect("counts distinct users whose newest login is at or after each time, per account and workspace", () =>
          Effect.gen(function* () {
            const store = yield* AccountProfileStore
            const workspaceId = uid("ws-")
            yield* store.recordLogins([
              login(workspaceId, "ada", T + 10),
              login(workspaceId, "ada", T + 30),
              login(workspaceId, "bob", T + 20),
              login(workspaceId, "cy", T),
              login(workspaceId, "dee", T + 40, "acct_other"),
              login(uid("ws-"), "eve", T + 40)
            ])
            assert.deepStrictEqual(
              yield* counts(workspaceId, [0, T, T + 1, T + 20, T + 21, T + 30, T + 31]),
              [3, 3, 2, 2, 1, 1, 0]
            )
            assert.deepStrictEqual(yield* counts(workspaceId, [0], "acct_other"), [1])
          })
        )

        it.effect("an older login never moves a user's newest one back; a newer one moves it forward", () =>
          Effect.gen(function* () {
            const store = yield* AccountProfileStore
            const workspaceId = uid("ws-")
            yield* store.recordLogins([login(workspaceId, "ada", T + 50)])
            yield* store.recordLogins([login(workspaceId, "ada", T + 10)])
            assert.deepStrictEqual(yield* counts(workspaceId, [T + 50, T + 51]), [1, 0])
            yield* store.recordLogins([login(workspaceId, "ada", T + 60), login(workspaceId, "ada", T + 20)])
            assert.deepStrictEqual(yield* counts(workspaceId, [T + 60, T + 61]), [1, 0])
            yield* store.recordLogins([])
            assert.deepStrictEqual(yield* counts(workspaceId, [0]), [1])
          })
        )

        it.effect.prop(
          "any delivery order and batching of the same logins gives the same counts",
          [
            fc.array(fc.tuple(fc.constantFrom("ada", "bob", "cy", "dee"), fc.integer({ min: 0, max: 9 })), {
              minLength: 1,
              maxLength: 12
            }),
            fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
            fc.integer({ min: 1, max: 4 })
          ],
          ([logins, shuffleKeys, batchSize]) =>
            Effect.gen(function* () {
              const store = yield* AccountProfileStore
              const inOrder = uid("ws-")
              const shuffled = uid("ws-")
              const permuted = logins
                .map((l, i) => [shuffleKeys[i]!, l] as const)
                .sort((a, b) => a[0] - b[0])
                .map(([, l]) => l)
              for (const [user, at] of logins) yield* store.recordLogins([login(inOrder, user, T + at)])
              for (let i = 0; i < permuted.length; i += batchSize) {
                yield* store.recordLogins(
                  permuted.slice(i, i + batchSize).map(([user, at]) => login(shuffled, user, T + at))
                )
              }
              const newest = new Map<string, number>()
              for (const [user, at] of logins) newest.set(user, Math.max(at, newest.get(user) ?? -1))
              const since = Array.from({ length: 11 }, (_, i) => T + i)
              const expected = since.map((t) => [...newest.values()].filter((at) => T + at >= t).length)
              assert.deepStrictEqual(yield* counts(inOrder, since), expected)
              assert.deepStrictEqual(yield* counts(shuffled, since), expected)
            }),
          { fastCheck: { numRuns: 20 } }
        )
      })

      it.effect("leaving a user field out keeps the stored value", () =>
        Effect.gen(function* () {
          const store = yield* AccountProfileStore
          const workspaceId = uid("ws-")
          const name = field("Grace", T)
          const email = field("grace@example.com", T)
          yield* store.upsertUser({ workspaceId, userId: "user_1", name, email })
          const newerEmail = field("grace@navy.example", T + 100)
          yield* store.upsertUser({ workspaceId, userId: "user_1", email: newerEmail })
          yield* store.upsertUser({ workspaceId, userId: "user_1" })
          assert.deepStrictEqual(
            yield* store.getUser(workspaceId, "user_1"),
            Option.some({ workspaceId, userId: "user_1", name, email: newerEmail })
          )
          // Users are per workspace.
          assert.isTrue(Option.isNone(yield* store.getUser(uid("ws-"), "user_1")))
        })
      )

      it.effect("listAccounts: the accounts with facts, by account id, with their fact counts and times, paged", () =>
        Effect.gen(function* () {
          const store = yield* AccountProfileStore
          const workspaceId = uid("ws-")
          yield* apply(workspaceId, [fact("plan", "pro", T + 5), fact("seats", 3, T + 1)], "acct_b")
          yield* apply(workspaceId, [fact("plan", "free", T + 2)], "acct_a")
          yield* apply(workspaceId, [fact("plan", "team", T + 7)], "Acct_c") // upper case sorts first, byte-wise
          yield* apply(workspaceId, [fact("plan", "pro", T + 9)], "acct_b") // replaces a fact: still two
          yield* apply(uid("ws-"), [fact("plan", "pro", T)], "acct_z")
          const all = yield* store.listAccounts({ workspaceId, limit: 10 })
          assert.deepStrictEqual(all, [
            { accountId: "Acct_c", factCount: 1, firstObservedAt: T + 7, lastObservedAt: T + 7 },
            { accountId: "acct_a", factCount: 1, firstObservedAt: T + 2, lastObservedAt: T + 2 },
            { accountId: "acct_b", factCount: 2, firstObservedAt: T + 1, lastObservedAt: T + 9 }
          ])
          assert.deepStrictEqual(yield* store.listAccounts({ workspaceId, limit: 2 }), all.slice(0, 2))
          assert.deepStrictEqual(yield* store.listAccounts({ workspaceId, limit: 10, after: "acct_a" }), all.slice(2))
          assert.deepStrictEqual(yield* store.listAccounts({ workspaceId, limit: 10, after: "acct_b" }), [])
          assert.deepStrictEqual(yield* store.listAccounts({ workspaceId: uid("ws-"), limit: 10 }), [])
        })
      )
    })
  })
