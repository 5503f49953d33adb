/**
 * ApprovalStore in memory: approval requests in a map; every change is one synchronous step.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { newestFirst } from "../../core/ports/ActionLedger.ts"
import {
  type ApprovalRecord,
  ApprovalStore,
  type ApprovalStoreService,
  type CappedCreate,
  type PendingScope
} from "../../core/ports/ApprovalStore.ts"

/**
 * An empty `ApprovalStore` held in this process's memory, caps counted as the SQL store counts
 * them.
 */
export const make = (): ApprovalStoreService => {
  const approvals = new Map<string, ApprovalRecord>()
  /** The action key each approval created within caps counts under. */
  const actionKeys = new Map<string, string>()
  const wrongTokens = new Map<string, number>()
  const update = (
    approvalId: string,
    when: (a: ApprovalRecord) => boolean,
    change: (a: ApprovalRecord) => ApprovalRecord
  ) => {
    const current = approvals.get(approvalId)
    if (current === undefined || !when(current)) return Option.none<ApprovalRecord>()
    const next = change(current)
    approvals.set(approvalId, next)
    return Option.some(next)
  }
  return {
    create: (record) =>
      Effect.sync(() => {
        if (approvals.has(record.approvalId)) return false
        approvals.set(record.approvalId, record)
        return true
      }),
    get: (approvalId) => Effect.sync(() => Option.fromNullable(approvals.get(approvalId))),
    prepare: ({ approvalId, review, revision }) =>
      Effect.sync(() =>
        update(
          approvalId,
          (a) => a.state === "pending" && a.revision === revision,
          (a) => ({ ...a, revision: revision + 1, prepared: { ...review, revision: revision + 1 } })
        )
      ),
    claim: ({ approvalId, now, revision, sessionId, staleBefore }) =>
      Effect.sync(() =>
        Option.isSome(
          update(
            approvalId,
            (a) =>
              a.revision === revision &&
              (a.state === "pending" ||
                (a.state === "approving" &&
                  a.resolvedBy === sessionId &&
                  a.claimedAt !== null &&
                  a.claimedAt < staleBefore)),
            (a) => ({ ...a, state: "approving", claimedAt: now, resolvedBy: sessionId })
          )
        )
      ),
    complete: ({ actionRequestId, approvalId, now, sessionId }) =>
      Effect.sync(() =>
        Option.isSome(
          update(
            approvalId,
            (a) => a.state === "approving" && a.resolvedBy === sessionId,
            (a) => ({ ...a, state: "approved", actionRequestId, resolvedAt: now })
          )
        )
      ),
    release: ({ approvalId, sessionId }) =>
      Effect.sync(() =>
        Option.isSome(
          update(
            approvalId,
            (a) => a.state === "approving" && a.resolvedBy === sessionId,
            (a) => ({
              ...a,
              state: "pending",
              revision: a.revision + 1,
              prepared: null,
              claimedAt: null,
              resolvedBy: null
            })
          )
        )
      ),
    deny: ({ approvalId, now, sessionId }) =>
      Effect.sync(() =>
        Option.isSome(
          update(
            approvalId,
            (a) => a.state === "pending",
            (a) => ({ ...a, state: "denied", resolvedBy: sessionId, resolvedAt: now })
          )
        )
      ),
    createWithinCaps: ({ actionKey, caps, now, record }) =>
      Effect.sync((): CappedCreate => {
        if (approvals.has(record.approvalId)) return { _tag: "Exists" }
        const inScope: Record<PendingScope, (a: ApprovalRecord) => boolean> = {
          account: () => true,
          action: (a) => actionKeys.get(a.approvalId) === actionKey,
          subject: (a) => a.requester.subject === record.requester.subject
        }
        const open = [...approvals.values()].filter(
          (a) =>
            a.workspaceId === record.workspaceId &&
            a.accountId === record.accountId &&
            (a.state === "pending" || a.state === "approving") &&
            a.expiresAt > now
        )
        for (const scope of ["account", "action", "subject"] as const) {
          const held = open.filter(inScope[scope])
          if (held.length >= caps[scope]) {
            return { _tag: "Full", scope, freesAt: held.length === 0 ? now : Math.min(...held.map((a) => a.expiresAt)) }
          }
        }
        approvals.set(record.approvalId, record)
        actionKeys.set(record.approvalId, actionKey)
        return { _tag: "Created" }
      }),
    getUnlocked: ({ approvalId, maxWrongTokens }) =>
      Effect.sync(() =>
        (wrongTokens.get(approvalId) ?? 0) >= maxWrongTokens
          ? Option.none()
          : Option.fromNullable(approvals.get(approvalId))
      ),
    recordWrongToken: ({ approvalId, workspaceId }) =>
      Effect.sync(() => {
        if (approvals.get(approvalId)?.workspaceId !== workspaceId) return
        wrongTokens.set(approvalId, (wrongTokens.get(approvalId) ?? 0) + 1)
      }),
    cancelForRequester: ({ now, sessionId, workspaceId }) =>
      Effect.sync(() => {
        let cancelled = 0
        for (const a of approvals.values()) {
          if (a.workspaceId === workspaceId && a.requester.sessionId === sessionId && a.state === "pending") {
            approvals.set(a.approvalId, { ...a, state: "cancelled", resolvedAt: now })
            cancelled++
          }
        }
        return cancelled
      }),
    list: ({ after, expiry, limit, state, workspaceId }) =>
      Effect.sync(() =>
        [...approvals.values()]
          .filter(
            (a) =>
              a.workspaceId === workspaceId &&
              (state === undefined || a.state === state) &&
              (expiry === undefined || a.expiresAt <= expiry.now === expiry.passed)
          )
          .map((a) => ({ createdAt: a.createdAt, id: a.approvalId, a }))
          .filter((row) => after === undefined || newestFirst(after, row) < 0)
          .sort(newestFirst)
          .slice(0, limit)
          .map(({ a }) => a)
      ),
    eraseSubject: (workspaceId, subject) =>
      Effect.sync(() => {
        let n = 0
        for (const [id, a] of approvals) {
          const named = subject.kind === "account" ? a.accountId === subject.id : a.requester.subject === subject.id
          if (a.workspaceId === workspaceId && named && approvals.delete(id)) {
            actionKeys.delete(id)
            wrongTokens.delete(id)
            n++
          }
        }
        return n
      })
  }
}

/** Provides an empty in-memory `ApprovalStore`. */
export const layerMemory: Layer.Layer<ApprovalStore> = Layer.sync(ApprovalStore, make)
