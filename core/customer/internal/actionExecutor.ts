/**
 * The host's port of the customer kit (spec "Rules for execution handling on the customer side"
 * 6–7): the kit runs each claimed execution through `execute`, and before any second run "looks up
 * its record by providerIdempotencyKey, reconciles with the owning system" through `lookup`.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { CatalogEvidenceType, CompletionOutcome, EvidenceScalar } from "../../protocol/messages/Completion.ts"
import type { ClaimedExecution } from "../ClaimedExecution.ts"

/**
 * The business outcome the host observed, sent as the completion's evidence unchanged: the spec's
 * `entitlement`, `reasonCode` and `source` (a catalog evidence type for the service to verify the
 * action), and up to 15 further scalar evidence fields. An `accountId` field, if the host sets one,
 * must be the action's account, or the service does not match the evidence.
 */
export interface ExecutionResult {
  readonly outcome: CompletionOutcome
  readonly providerReference: string
  readonly evidence: {
    readonly entitlement: string
    readonly reasonCode: string
    readonly source: CatalogEvidenceType
    readonly [field: string]: EvidenceScalar
  }
}

/**
 * The host's side of an execution.
 *
 * - `execute` performs exactly the claimed operation. It should pass `providerIdempotencyKey` to the
 *   owning system (billing, subscription, entitlement), so that even a run the kit could not record
 *   (a crash mid-call, or a call abandoned at its time limit that goes on running) is not repeated
 *   there. A defect or a call past the time limit is treated as an ambiguous result.
 * - `lookup` reads the owning system for a run under that key: `Some(result)` if it ran (with the
 *   outcome observed now), `None` if it never ran. Called before any second `execute`.
 */
export interface ActionExecutorService {
  /**
   * Performs exactly the claimed operation, passing `providerIdempotencyKey` to the owning system.
   */
  readonly execute: (request: ClaimedExecution) => Effect.Effect<ExecutionResult>
  /**
   * Reads the owning system for a run under this key: its result if it ran, `None` if it never did;
   * called before any second `execute`.
   */
  readonly lookup: (providerIdempotencyKey: string) => Effect.Effect<Option.Option<ExecutionResult>>
}

export class ActionExecutor extends Context.Tag("@accord/core/customer/ActionExecutor")<
  ActionExecutor,
  ActionExecutorService
>() {}
