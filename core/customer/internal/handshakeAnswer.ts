/**
 * The customer endpoint's handshake answer (spec "Handshake response body", "Payment capability
 * evidence lifecycle"): a `handshake_ack` echoing the challenge, connection and workspace, signed
 * with the pair of the revision the request's header names, carrying the payment capability proof
 * only when the host configured one and, where the provider account is watched
 * (`ProviderAccount.ts`), only while an account is proven, naming the account proven now. A
 * revision not configured is refused (409 `revision_mismatch`).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { CryptoService } from "../../ports/Crypto.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { type HandshakeAck, HandshakeRequest, type PaymentCapabilities } from "../../protocol/messages/Handshake.ts"
import { headerNames, protocolVersion } from "../../protocol/Signing.ts"
import { readHeader, type VerificationError } from "../../protocol/Verification.ts"
import type { RevisionKeys } from "../Keyring.ts"
import { type ParsedRequest, type CustomerResponse, type EndpointExchange, errorResponse } from "./endpoint.ts"

/**
 * The payment capability proof the host configured (see `CustomerHandlerSettings.payment`).
 */
export interface PaymentProofSettings {
  readonly modes: PaymentCapabilities["modes"]
  /** The connected payment provider account ID (e.g. Stripe's `acct_…`); only its hash is sent. */
  readonly providerAccountId: string
  readonly livemode: boolean
}

/**
 * Builds the handshake answer. `payment` is the proof now (`None`: no proof); the provider
 * account's hash is computed once per account.
 */
export const makeHandshakeAnswer = (options: {
  readonly workspaceId: string
  readonly keyring: ReadonlyArray<RevisionKeys>
  readonly payment: Effect.Effect<Option.Option<PaymentProofSettings>>
  readonly crypto: CryptoService
  readonly exchange: EndpointExchange
}): Effect.Effect<(input: ParsedRequest) => Effect.Effect<CustomerResponse, VerificationError | StorageError>> =>
  Effect.sync(() => {
    const { crypto, keyring, workspaceId } = options
    const { signed, verifyAndDecode } = options.exchange
    let hashed: { readonly accountId: string; readonly hash: string } | undefined
    const paymentCapabilities = (revision: number): Effect.Effect<PaymentCapabilities | undefined> =>
      Effect.flatMap(options.payment, (proof) =>
        Option.match(proof, {
          onNone: () => Effect.succeed(undefined),
          onSome: (payment) =>
            Effect.map(
              hashed?.accountId === payment.providerAccountId
                ? Effect.succeed(hashed.hash)
                : Effect.tap(crypto.sha256Hex(JSON.stringify(payment.providerAccountId)), (hash) => {
                    hashed = { accountId: payment.providerAccountId, hash }
                  }),
              (hash): PaymentCapabilities => ({
                connectedAccountReferenceHash: hash,
                connectionRevision: revision,
                livemode: payment.livemode,
                modes: payment.modes
              })
            )
        })
      )

    return (input: ParsedRequest): Effect.Effect<CustomerResponse, VerificationError | StorageError> => {
      // The revision header selects the pair; a revision not configured is refused, but only after
      // the request verified with some pair, so only the service learns which revisions exist.
      const asked = readHeader(input.headers, headerNames.connectionRevision)?.trim()
      const selected = asked === undefined ? undefined : keyring.find((entry) => String(entry.revision) === asked)
      return Effect.flatMap(
        verifyAndDecode(HandshakeRequest, "handshake_request", input, selected),
        ({ body, entry, headers }) => {
          if (body.challenge !== headers.nonce || body.workspaceId !== workspaceId) {
            return Effect.succeed(errorResponse(401, { error: "binding_mismatch" }))
          }
          if (asked !== undefined && selected === undefined) {
            return Effect.succeed(errorResponse(409, { error: "revision_mismatch" }))
          }
          return Effect.flatMap(paymentCapabilities(entry.revision), (proof) => {
            const ack: HandshakeAck = {
              challenge: body.challenge,
              connectionId: body.connectionId,
              protocolVersion,
              status: "ready",
              type: "service.customer_action.handshake_ack",
              workspaceId: body.workspaceId,
              ...(proof !== undefined ? { paymentCapabilities: proof } : {})
            }
            return signed(entry.keys, 200, "handshake_response", ack)
          })
        }
      )
    }
  })
