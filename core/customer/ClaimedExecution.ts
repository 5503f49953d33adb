/**
 * What the kit's ledger stores as a claimed execution's `request`, and what the host's executor and
 * payment reader receive: the execution request without the delivery's nonce and time, which are
 * not part of the work (a retry carries fresh ones).
 *
 * @since 0.1.0
 */
import type * as Schema from "effect/Schema"
import { ExecutionRequest } from "../protocol/messages/Execution.ts"

/**
 * @since 0.1.0
 */
export const ClaimedExecution = ExecutionRequest.omit("requestNonce", "requestedAt")

/**
 * @since 0.1.0
 */
export interface ClaimedExecution extends Schema.Schema.Type<typeof ClaimedExecution> {}
