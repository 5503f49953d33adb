/**
 * The connection handshake (spec "Handshake request body", "Handshake response body"): the service
 * proves it holds the pending revision's action signing secret, and the customer answers `ready`,
 * optionally with a payment capability proof.
 */
import * as Schema from "effect/Schema"
import { ExactStruct, Nonce, NonNegativeInt, PaymentMode, ProtocolVersion, Sha256Hex, Timestamp } from "./Common.ts"
import { Uuid } from "../Uuid.ts"

/**
 * The handshake request body.
 *
 * `challenge`: "string, equals the request nonce" (the equality is checked against the verified
 * header, not here).
 */
export const HandshakeRequest = ExactStruct({
  challenge: Nonce,
  connectionId: Uuid,
  protocolVersion: ProtocolVersion,
  sentAt: Timestamp,
  type: Schema.Literal("service.customer_action.handshake"),
  workspaceId: Uuid
}).annotations({ identifier: "HandshakeRequest" })

/** {@inheritDoc HandshakeRequest:var} */
export interface HandshakeRequest extends Schema.Schema.Type<typeof HandshakeRequest> {}

/**
 * `paymentCapabilities.modes`: "each one of" the five payment modes. Listing a mode twice says
 * nothing more, so duplicates are refused rather than silently merged.
 */
export const PaymentModes = Schema.Array(PaymentMode).pipe(
  Schema.maxItems(5),
  Schema.filter((modes) => new Set(modes).size === modes.length || "each mode at most once")
)

/**
 * The payment capability proof carried by a handshake acknowledgement.
 *
 * `connectedAccountReferenceHash`: "SHA-256 of the JSON serialization of the connected payment
 * provider account ID" (lowercase hex, as every reference hash). `connectionRevision`: "the initial
 * revision is zero".
 */
export const PaymentCapabilities = ExactStruct({
  connectedAccountReferenceHash: Sha256Hex,
  connectionRevision: NonNegativeInt,
  livemode: Schema.Boolean,
  modes: PaymentModes
}).annotations({ identifier: "PaymentCapabilities" })

/** {@inheritDoc PaymentCapabilities:var} */
export interface PaymentCapabilities extends Schema.Schema.Type<typeof PaymentCapabilities> {}

/**
 * The handshake response body (`handshake_ack`). "The response must have exactly this shape";
 * "`paymentCapabilities` is optional".
 */
export const HandshakeAck = ExactStruct({
  challenge: Nonce,
  connectionId: Uuid,
  protocolVersion: ProtocolVersion,
  status: Schema.Literal("ready"),
  type: Schema.Literal("service.customer_action.handshake_ack"),
  workspaceId: Uuid,
  paymentCapabilities: Schema.optionalWith(PaymentCapabilities, { exact: true })
}).annotations({ identifier: "HandshakeAck" })

/** {@inheritDoc HandshakeAck:var} */
export interface HandshakeAck extends Schema.Schema.Type<typeof HandshakeAck> {}
