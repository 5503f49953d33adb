/**
 * What the kit's ledger stores as a claimed execution's `request`, and what the host's executor and
 * payment reader receive: the execution request without the delivery's nonce and time, which are
 * not part of the work (a retry carries fresh ones).
 */
import type * as Schema from "effect/Schema"
import { ExecutionRequest } from "../protocol/messages/Execution.ts"

export const ClaimedExecution = ExecutionRequest.omit("requestNonce", "requestedAt")

export interface ClaimedExecution extends Schema.Schema.Type<typeof ClaimedExecution> {}
