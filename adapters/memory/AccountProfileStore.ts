/**
 * AccountProfileStore in memory: profiles, login activity and account summaries in maps, for tests
 * and for embedding without persistence.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  AccountProfileStore,
  type AccountProfileStoreService,
  type AccountSummary,
  type FactsEntry,
  isNewer,
  type LoginActivity,
  type ProfileFact,
  type UserRecord
} from "../../core/ports/AccountProfileStore.ts"

/** An empty `AccountProfileStore` held in this process's memory. */
export const make = (): AccountProfileStoreService => {
  const profiles = new Map<string, Map<string, ProfileFact>>()
  const users = new Map<string, UserRecord>()
  /** Per workspace and account: each user's newest login. */
  const logins = new Map<string, Map<string, LoginActivity>>()
  const key = (a: string, b: string) => a + "\u0000" + b
  const apply = ({ accountId, facts, workspaceId }: FactsEntry) => {
    const k = key(workspaceId, accountId)
    const current = profiles.get(k) ?? new Map<string, ProfileFact>()
    for (const fact of facts) if (isNewer(fact, current.get(fact.name))) current.set(fact.name, fact)
    profiles.set(k, current)
  }
  return {
    listAccounts: ({ after, limit, workspaceId }) =>
      Effect.sync(() => {
        const prefix = workspaceId + "\u0000"
        const found: Array<AccountSummary> = []
        for (const [k, facts] of profiles) {
          const accountId = k.slice(prefix.length)
          if (!k.startsWith(prefix) || facts.size === 0 || (after !== undefined && accountId <= after)) continue
          const times = [...facts.values()].map((fact) => fact.observedAt)
          found.push({
            accountId,
            factCount: facts.size,
            firstObservedAt: Math.min(...times),
            lastObservedAt: Math.max(...times)
          })
        }
        return found
          .sort((a, b) => (a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0))
          .slice(0, limit)
      }),
    applyFacts: (workspaceId, accountId, facts) => Effect.sync(() => apply({ workspaceId, accountId, facts })),
    applyFactsBatch: (entries) => Effect.sync(() => entries.forEach(apply)),
    get: (workspaceId, accountId) =>
      Effect.sync(() =>
        Option.map(Option.fromNullable(profiles.get(key(workspaceId, accountId))), (facts) => ({
          workspaceId,
          accountId,
          facts: [...facts.values()].sort((a, b) => a.name.localeCompare(b.name))
        }))
      ),
    upsertUser: ({ email, name, userId, workspaceId }) =>
      Effect.sync(() => {
        const k = key(workspaceId, userId)
        const current = users.get(k) ?? { workspaceId, userId, name: null, email: null }
        users.set(k, {
          ...current,
          name: name !== undefined && isNewer(name, current.name) ? name : current.name,
          email: email !== undefined && isNewer(email, current.email) ? email : current.email
        })
      }),
    getUser: (workspaceId, userId) => Effect.sync(() => Option.fromNullable(users.get(key(workspaceId, userId)))),
    recordLogins: (batch) =>
      Effect.sync(() => {
        for (const login of batch) {
          const k = key(login.workspaceId, login.accountId)
          const account = logins.get(k) ?? new Map<string, LoginActivity>()
          if (isNewer(login, account.get(login.userId))) account.set(login.userId, login)
          logins.set(k, account)
        }
      }),
    countActiveUsers: (workspaceId, accountId, since) =>
      Effect.sync(() => {
        const account = [...(logins.get(key(workspaceId, accountId))?.values() ?? [])]
        return since.map((at) => account.filter((login) => login.observedAt >= at).length)
      }),
    listLogins: (workspaceId, accountId) =>
      Effect.sync(() =>
        [...(logins.get(key(workspaceId, accountId))?.values() ?? [])].sort((a, b) =>
          a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0
        )
      ),
    eraseSubject: ({ sourceEventIds, subject, userIds, workspaceId }) =>
      Effect.sync(() => {
        let profileFacts = 0
        let removedLogins = 0
        let removedUsers = 0
        const usersToErase = new Set(subject.kind === "account" ? userIds : [subject.id])
        if (subject.kind === "account") {
          const k = key(workspaceId, subject.id)
          profileFacts = profiles.get(k)?.size ?? 0
          profiles.delete(k)
          for (const login of logins.get(k)?.values() ?? []) {
            usersToErase.add(login.userId)
            removedLogins++
          }
          logins.delete(k)
        } else {
          const sources = new Set(sourceEventIds)
          for (const [k, facts] of profiles) {
            if (!k.startsWith(workspaceId + "\u0000")) continue
            for (const [name, fact] of facts) {
              if (sources.has(fact.sourceEventId)) {
                facts.delete(name)
                profileFacts++
              }
            }
            if (facts.size === 0) profiles.delete(k)
          }
          for (const [k, account] of logins) {
            if (k.startsWith(workspaceId + "\u0000") && account.delete(subject.id)) removedLogins++
          }
        }
        for (const userId of usersToErase) if (users.delete(key(workspaceId, userId))) removedUsers++
        return { profileFacts, users: removedUsers, logins: removedLogins }
      })
  }
}

/** Provides an empty in-memory `AccountProfileStore`. */
export const layerMemory: Layer.Layer<AccountProfileStore> = Layer.sync(AccountProfileStore, make)
