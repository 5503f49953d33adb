/**
 * RuntimeSessionStore in memory: runtime sessions in a map.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { newestFirst } from "../../core/ports/ActionLedger.ts"
import {
  type RuntimeSessionRecord,
  RuntimeSessionStore,
  type RuntimeSessionStoreService
} from "../../core/ports/RuntimeSessionStore.ts"

/** An empty `RuntimeSessionStore` held in this process's memory. */
export const make = (): RuntimeSessionStoreService => {
  const sessions = new Map<string, RuntimeSessionRecord>()
  return {
    create: (record) =>
      Effect.sync(() => {
        if (sessions.has(record.sessionId) || [...sessions.values()].some((s) => s.tokenHash === record.tokenHash))
          return false
        sessions.set(record.sessionId, record)
        return true
      }),
    findByHash: (tokenHash) =>
      Effect.sync(() => Option.fromNullable([...sessions.values()].find((s) => s.tokenHash === tokenHash))),
    get: (sessionId) => Effect.sync(() => Option.fromNullable(sessions.get(sessionId))),
    revoke: (workspaceId, sessionId, now) =>
      Effect.sync(() => {
        const session = sessions.get(sessionId)
        if (session === undefined || session.workspaceId !== workspaceId || session.revokedAt !== null) return false
        sessions.set(sessionId, { ...session, revokedAt: now })
        return true
      }),
    list: ({ after, limit, workspaceId }) =>
      Effect.sync(() =>
        [...sessions.values()]
          .map((s) => ({ createdAt: s.createdAt, id: s.sessionId, s }))
          .filter(({ s }) => s.workspaceId === workspaceId)
          .filter((row) => after === undefined || newestFirst(after, row) < 0)
          .sort(newestFirst)
          .slice(0, limit)
          .map(({ s }) => s)
      ),
    eraseSubject: (workspaceId, subject) =>
      Effect.sync(() => {
        let n = 0
        for (const [id, s] of sessions) {
          const named = subject.kind === "account" ? s.accountId === subject.id : s.subject === subject.id
          if (s.workspaceId === workspaceId && named && sessions.delete(id)) n++
        }
        return n
      })
  }
}

/** Provides an empty in-memory `RuntimeSessionStore`. */
export const layerMemory: Layer.Layer<RuntimeSessionStore> = Layer.sync(RuntimeSessionStore, make)
