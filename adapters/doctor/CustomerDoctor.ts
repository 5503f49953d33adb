/**
 * `accord customer doctor`: the spec's installation checks ("Installation checks" 4 and 5) run
 * against a deployed customer endpoint, as a checklist. It applies the service's own secret rules
 * (`secretIssues`), signs real protocol messages with the customer's own secrets and checks that
 * the endpoint answers valid ones correctly and refuses tampered, stale, replayed and wrongly
 * signed ones, and correctly signed ones for another workspace. With `withExecution` it also sends
 * one signed execution (which the backend may really perform) and its duplicate.
 *
 * What it cannot see: whether the backend *ran* a duplicate twice. `duplicate_idempotent` only
 * compares the two acknowledgements; a second run happens inside the backend.
 *
 * Results carry fixed reasons, never a secret or a body.
 *
 * With `payments` (the Stripe installation values) it also runs the installation checks before
 * offering payment capabilities, 1–6 (`PaymentChecks.ts`): each `passed`, `failed` or
 * `not_verified` with why, the payment test cases (6) in a section of their own, apart from the
 * handshake results, and never with a live key (`sk_live_` stops them with one clear line).
 * `paymentOptionsFromEnv` reads them from these environment variables (the names the reference
 * backend reads, plus the doctor's own):
 *
 * - `STRIPE_SECRET_KEY`, `STRIPE_PUBLISHABLE_KEY`, `STRIPE_WEBHOOK_SECRET` (all three, or no
 *   payment checks), `STRIPE_API_BASE` (another API base, e.g. a local fake);
 * - `ACCORD_CONNECTED_ACCOUNT_ID`: the provider account connected to the workspace (check 1);
 * - `ACCORD_DOCTOR_PRICE_IDS`: comma-separated price ids the app sells (check 2);
 * - `ACCORD_DOCTOR_WEBHOOK_URL`: the deployed webhook route, e.g. `https://…/stripe/webhook` (check 5);
 * - `ACCORD_DOCTOR_PAYMENT_TESTS=1`: run the payment test cases (check 6; test keys only);
 * - `ACCORD_DOCTOR_PRICE_KEY`: the `priceKey` of the test purchase (default `addon`).
 *
 * The environment itself is passed as `env` for check 3 (the exact names the app reads).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { secretIssues } from "../../core/connector/Connection.ts"
import type { Crypto } from "../../core/ports/Crypto.ts"
import { Acknowledgement } from "../../core/protocol/messages/Acknowledgement.ts"
import { HandshakeAck } from "../../core/protocol/messages/Handshake.ts"
import { deriveProviderIdempotencyKey } from "../../core/protocol/Idempotency.ts"
import * as MemoryNonceStore from "../../adapters/memory/NonceStore.ts"
import {
  computeSignature,
  encodeBody,
  freshNonce,
  headerNames,
  importSigningKeys,
  type Purpose,
  sign,
  type SigningKeys
} from "../../core/protocol/Signing.ts"
import { formatTimestamp } from "../../core/protocol/Timestamp.ts"
import { makeVerifier } from "../../core/protocol/Verification.ts"
import * as NodeCrypto from "../crypto/NodeCrypto.ts"
import type { PaymentCapabilities } from "../../core/protocol/messages/Handshake.ts"
import { type CheckSection, type CheckStatus, type DoctorPaymentOptions, runPaymentChecks } from "./PaymentChecks.ts"

/**
 * The payment checks' options and statuses (`PaymentChecks.ts`).
 */
export type { CheckSection, CheckStatus, DoctorPaymentOptions } from "./PaymentChecks.ts"

export interface DoctorOptions {
  readonly endpoint: string
  readonly workspaceId: string
  readonly actionSigningSecret: string
  readonly completionSecret: string
  /** The connection revision the secrets belong to (default 0). */
  readonly revision?: number
  /** Also send one signed execution and its duplicate (the backend may perform it). */
  readonly withExecution?: boolean
  readonly timeoutMillis?: number
  /** The Stripe installation values: adds installation checks 1–6 (`PaymentChecks.ts`). */
  readonly payments?: DoctorPaymentOptions
}

/**
 * The payment checks' options from the environment (names in the module comment); `undefined`
 * unless all three Stripe values are set.
 */
export const paymentOptionsFromEnv = (
  env: Readonly<Record<string, string | undefined>>
): DoctorPaymentOptions | undefined => {
  const value = (name: string) => {
    const found = env[name]
    return found === undefined || found.trim() === "" ? undefined : found
  }
  const secretKey = value("STRIPE_SECRET_KEY")
  const publishableKey = value("STRIPE_PUBLISHABLE_KEY")
  const webhookSecret = value("STRIPE_WEBHOOK_SECRET")
  if (secretKey === undefined || publishableKey === undefined || webhookSecret === undefined) return undefined
  const optional = (name: string) => (value(name) === undefined ? {} : { [name]: value(name)! })
  const apiBase = optional("STRIPE_API_BASE").STRIPE_API_BASE
  const connectedAccountId = optional("ACCORD_CONNECTED_ACCOUNT_ID").ACCORD_CONNECTED_ACCOUNT_ID
  const webhookUrl = optional("ACCORD_DOCTOR_WEBHOOK_URL").ACCORD_DOCTOR_WEBHOOK_URL
  const priceKey = optional("ACCORD_DOCTOR_PRICE_KEY").ACCORD_DOCTOR_PRICE_KEY
  const priceIds = value("ACCORD_DOCTOR_PRICE_IDS")
    ?.split(",")
    .map((id) => id.trim())
    .filter((id) => id !== "")
  return {
    secretKey,
    publishableKey,
    webhookSecret,
    env,
    runPaymentTests: value("ACCORD_DOCTOR_PAYMENT_TESTS") === "1" || value("ACCORD_DOCTOR_PAYMENT_TESTS") === "true",
    ...(apiBase !== undefined ? { apiBase } : {}),
    ...(connectedAccountId !== undefined ? { connectedAccountId } : {}),
    ...(webhookUrl !== undefined ? { webhookUrl } : {}),
    ...(priceKey !== undefined ? { priceKey } : {}),
    ...(priceIds !== undefined ? { priceIds } : {})
  }
}

export interface DoctorCheck {
  readonly id: string
  readonly title: string
  /** `false` only for a `failed` check. */
  readonly ok: boolean
  readonly status: CheckStatus
  readonly section: CheckSection
  readonly reason: string
}

export interface DoctorReport {
  readonly ok: boolean
  readonly checks: ReadonlyArray<DoctorCheck>
}

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Uint8Array
}

const doctorConnectionId = "00000000-0000-4000-8000-00000000d0c7"
/** What the tamper check puts in place of `connectionId`: a field the endpoint only echoes. */
const tamperedConnectionId = "00000000-0000-4000-8000-00000000d0c8"
/** The workspace of the wrong-workspace check: a valid UUID that is not the customer's. */
const otherWorkspaceId = "00000000-0000-4000-8000-0000000000aa"

/**
 * Runs every check in order and reports all of them.
 */
export const runDoctor = (options: DoctorOptions): Promise<DoctorReport> =>
  Effect.runPromise(doctor(options).pipe(Effect.provide(Layer.merge(NodeCrypto.layer, MemoryNonceStore.layer))))

const doctor = (options: DoctorOptions) =>
  Effect.gen(function* () {
    const checks: Array<DoctorCheck> = []
    const add = (id: string, title: string, ok: boolean, reason: string) =>
      checks.push({ id, title, ok, status: ok ? "passed" : "failed", section: "handshake", reason })
    let proof: PaymentCapabilities | undefined
    const revision = options.revision ?? 0
    // The service's own registration rules, so a secret the doctor passes is one `PUT /connector` takes.
    const issues = secretIssues({
      actionSigning: Redacted.make(options.actionSigningSecret),
      completion: Redacted.make(options.completionSecret)
    })
    const secretCheck = (id: string, title: string, problems: ReadonlyArray<string>) => {
      const found = issues.filter((i) => problems.includes(i.problem))
      add(
        id,
        title,
        found.length === 0,
        found.length === 0 ? "ok" : found.map((i) => `${i.issue.path} ${i.issue.message}`).join("; ")
      )
    }
    secretCheck("secrets_length", "Both connector secrets have 32 to 512 characters", [
      "secret_too_short",
      "secret_too_long"
    ])
    secretCheck("secrets_whitespace", "Neither secret starts or ends with whitespace or contains a control character", [
      "secret_whitespace"
    ])
    secretCheck("secrets_distinct", "The action signing and completion secrets are distinct", ["secrets_not_distinct"])

    const keys = yield* importSigningKeys({
      actionSigning: Redacted.make(options.actionSigningSecret),
      completion: Redacted.make(options.completionSecret)
    })
    const wrongKeys = yield* importSigningKeys({
      actionSigning: Redacted.make(`doctor-wrong-${options.actionSigningSecret}`),
      completion: Redacted.make(`doctor-wrong-${options.completionSecret}`)
    })
    const verifier = yield* makeVerifier
    const timeout = options.timeoutMillis ?? 10_000

    const post = (headers: Record<string, string>, body: Uint8Array) =>
      Effect.tryPromise(async (): Promise<Answer> => {
        const response = await fetch(options.endpoint, {
          method: "POST",
          headers,
          body,
          redirect: "manual",
          signal: AbortSignal.timeout(timeout)
        })
        const out: Record<string, string> = {}
        response.headers.forEach((value, name) => {
          out[name] = value
        })
        return { status: response.status, headers: out, body: new Uint8Array(await response.arrayBuffer()) }
      }).pipe(Effect.option)

    const handshakeBody = (nonce: string, workspaceId: string) => ({
      challenge: nonce,
      connectionId: doctorConnectionId,
      protocolVersion: 1,
      sentAt: new Date().toISOString(),
      type: "service.customer_action.handshake",
      workspaceId
    })

    /** A signed handshake: headers, body, bytes and nonce. */
    const signedHandshake = (signingKeys: SigningKeys, withRevision: boolean, workspaceId = options.workspaceId) =>
      Effect.gen(function* () {
        const nonce = yield* freshNonce
        const body = handshakeBody(nonce, workspaceId)
        const bytes = encodeBody(body)
        const headers = yield* sign({ purpose: "handshake_request", keys: signingKeys, body: bytes, nonce })
        return {
          nonce,
          body,
          bytes,
          headers: {
            ...headers,
            ...(withRevision ? { [headerNames.connectionRevision]: String(revision) } : {})
          } as Record<string, string>
        }
      })

    /** Whether the answer is a correctly signed, fresh, exact `handshake_ack` for `nonce`. */
    const validAck = (answer: Answer, nonce: string) =>
      Effect.gen(function* () {
        if (answer.status !== 200) return `answered HTTP ${answer.status}, expected 200`
        const verified = yield* verifier
          .verifyAndDecode(HandshakeAck, {
            purpose: "handshake_response",
            keys,
            headers: answer.headers,
            body: answer.body,
            nonceScope: "doctor:handshake_response"
          })
          .pipe(Effect.either)
        if (verified._tag === "Left") return `the acknowledgement is not valid (${verified.left._tag})`
        const ack = verified.right.body
        if (
          ack.challenge !== nonce ||
          ack.workspaceId !== options.workspaceId ||
          ack.connectionId !== doctorConnectionId
        ) {
          return "the acknowledgement does not echo challenge, connection and workspace"
        }
        proof = ack.paymentCapabilities ?? proof
        return "ok"
      })

    const handshake = (id: string, title: string, withRevision: boolean) =>
      Effect.gen(function* () {
        const request = yield* signedHandshake(keys, withRevision)
        const answer = yield* post(request.headers, request.bytes)
        if (answer._tag === "None") return add(id, title, false, "the endpoint could not be reached")
        const reason = yield* validAck(answer.value, request.nonce)
        add(id, title, reason === "ok", reason)
      })
    yield* handshake(
      "handshake_revision",
      `A signed handshake for revision ${revision} is acknowledged correctly`,
      true
    )
    yield* handshake(
      "handshake_without_revision",
      "A handshake without the revision header is acknowledged (backends without Payment)",
      false
    )

    const refused = (
      id: string,
      title: string,
      build: Effect.Effect<{ readonly headers: Record<string, string>; readonly bytes: Uint8Array }, never, Crypto>
    ) =>
      Effect.gen(function* () {
        const request = yield* build
        const answer = yield* post(request.headers, request.bytes)
        if (answer._tag === "None") return add(id, title, false, "the endpoint could not be reached")
        const ok = answer.value.status >= 400 && answer.value.status < 500
        add(id, title, ok, ok ? "ok" : `answered HTTP ${answer.value.status}, expected a refusal`)
      })
    // Only `connectionId` changes, a field the endpoint echoes and has nothing to compare with: only
    // checking the signature over the raw bytes can catch it (a tampered workspace would also be
    // caught by a plain workspace comparison).
    yield* refused(
      "tamper_rejected",
      "A tampered body (connectionId changed after signing) is refused",
      Effect.map(signedHandshake(keys, true), (r) => ({
        headers: r.headers,
        bytes: encodeBody({ ...r.body, connectionId: tamperedConnectionId })
      }))
    )
    yield* refused(
      "workspace_mismatch_rejected",
      "A correctly signed handshake for another workspace is refused",
      signedHandshake(keys, true, otherWorkspaceId)
    )
    yield* refused(
      "stale_rejected",
      "A stale timestamp (10 minutes old) is refused",
      Effect.gen(function* () {
        const r = yield* signedHandshake(keys, true)
        const timestamp = formatTimestamp(Date.now() - 10 * 60_000)
        const signature = yield* computeSignature(
          keys.actionSigning,
          "handshake_request" as Purpose,
          timestamp,
          r.nonce,
          r.bytes
        )
        return {
          headers: { ...r.headers, [headerNames.timestamp]: timestamp, [headerNames.signature]: signature },
          bytes: r.bytes
        }
      })
    )
    yield* refused(
      "wrong_secret_rejected",
      "A message signed with another secret is refused",
      signedHandshake(wrongKeys, true)
    )
    // A replay: the exact same signed request twice; the second must be refused.
    const replay = yield* signedHandshake(keys, true)
    yield* post(replay.headers, replay.bytes)
    yield* refused("replay_rejected", "A replayed nonce is refused", Effect.succeed(replay))

    if (options.withExecution === true) {
      const actionRequestId = globalThis.crypto.randomUUID()
      const key = yield* deriveProviderIdempotencyKey(options.workspaceId, actionRequestId)
      const execution = (nonce: string) => ({
        type: "service.customer_action.execute",
        protocolVersion: 1,
        workspaceId: options.workspaceId,
        accountId: "accord_doctor",
        actionRequestId,
        action: {
          id: "00000000-0000-4000-8000-00000000d0c1",
          key: "accord_doctor_probe",
          operation: { family: "accord_doctor.probe" },
          safeTerms: { confirmation: "Installation check by accord customer doctor", label: "Doctor probe" }
        },
        actor: { authority: "installation_check", roleKey: "doctor", subjectId: "accord_doctor" },
        binding: {
          decisionId: "00000000-0000-4000-8000-00000000d0c2",
          journeyId: "00000000-0000-4000-8000-00000000d0c3",
          offerId: "00000000-0000-4000-8000-00000000d0c4",
          publishedVersionId: "00000000-0000-4000-8000-00000000d0c5"
        },
        providerIdempotencyKey: key,
        requestedAt: new Date().toISOString(),
        requestNonce: nonce
      })
      const deliver = (headerKey: string) =>
        Effect.gen(function* () {
          const nonce = yield* freshNonce
          const bytes = encodeBody(execution(nonce))
          const headers = yield* sign({ purpose: "dispatch_request", keys, body: bytes, nonce })
          const answer = yield* post({ ...headers, [headerNames.idempotencyKey]: headerKey }, bytes)
          if (answer._tag === "None") return { reason: "the endpoint could not be reached" } as const
          if (answer.value.status !== 202)
            return { reason: `answered HTTP ${answer.value.status}, expected 202` } as const
          const verified = yield* verifier
            .verifyAndDecode(Acknowledgement, {
              purpose: "dispatch_response",
              keys,
              headers: answer.value.headers,
              body: answer.value.body,
              nonceScope: "doctor:dispatch_response"
            })
            .pipe(Effect.either)
          if (verified._tag === "Left")
            return { reason: `the acknowledgement is not valid (${verified.left._tag})` } as const
          const ack = verified.right.body
          if (
            ack.actionRequestId !== actionRequestId ||
            ack.providerIdempotencyKey !== key ||
            ack.requestNonce !== nonce ||
            ack.workspaceId !== options.workspaceId
          ) {
            return { reason: "the acknowledgement does not echo every binding" } as const
          }
          return { reason: "ok", state: ack.state } as const
        })
      const first = yield* deliver(key)
      add(
        "execution_acknowledged",
        "A signed execution gets a signed acknowledgement (202)",
        first.reason === "ok",
        first.reason === "ok" ? `ok (${first.state})` : first.reason
      )
      const second = yield* deliver(key)
      const same = first.reason === "ok" && second.reason === "ok" && second.state === first.state
      // Only the answers are visible from here: whether the backend ran the duplicate is not.
      add(
        "duplicate_idempotent",
        "A duplicate execution (same key, fresh nonce) gets the original acknowledgement state (a second run inside the backend is not visible to the doctor)",
        same,
        same
          ? "ok (same acknowledgement state; not a proof of a single run)"
          : second.reason === "ok"
            ? "the duplicate got another state"
            : second.reason
      )
      const mismatch = yield* deliver("pva_" + "0".repeat(64))
      const refusedMismatch = mismatch.reason !== "ok"
      add(
        "key_mismatch_rejected",
        "An execution whose idempotency header differs from the body is refused",
        refusedMismatch,
        refusedMismatch ? "ok" : "it was acknowledged"
      )
    }
    if (options.payments !== undefined) {
      yield* runPaymentChecks(options.payments, {
        endpoint: options.endpoint,
        workspaceId: options.workspaceId,
        keys,
        connectorSecrets: [options.actionSigningSecret, options.completionSecret],
        proof,
        revision,
        verifier,
        post: (headers, body) => post(headers, body),
        add: (id, title, status, reason, section) =>
          checks.push({ id, title, ok: status !== "failed", status, section, reason })
      })
    }
    return { ok: checks.every((c) => c.ok), checks }
  })

const sectionTitles: Record<CheckSection, string> = {
  handshake: "Handshake and handler",
  installation: "Installation checks before offering payment capabilities",
  payment_tests: "Payment test cases (provider test data only)"
}

/**
 * The checklist as text lines (✓ passed, ✗ failed, ? not verified with why), by section: the
 * payment test cases apart from the handshake results.
 */
export const formatReport = (report: DoctorReport): string => {
  const sections = [...new Set(report.checks.map((c) => c.section ?? "handshake"))]
  const line = (c: DoctorCheck) => {
    const status = c.status ?? (c.ok ? "passed" : "failed")
    return status === "passed"
      ? `✓ ${c.title}`
      : status === "failed"
        ? `✗ ${c.title} — ${c.reason}`
        : `? ${c.title} — not verified: ${c.reason}`
  }
  const body =
    sections.length === 1 && sections[0] === "handshake"
      ? report.checks.map(line)
      : sections.flatMap((section) => [
          `${sectionTitles[section]}:`,
          ...report.checks.filter((c) => (c.section ?? "handshake") === section).map((c) => `  ${line(c)}`)
        ])
  const unverified = report.checks.filter((c) => c.status === "not_verified").length
  return [
    ...body,
    report.ok
      ? unverified > 0
        ? `no check failed; ${unverified} not verified`
        : "all checks passed"
      : "some checks failed"
  ].join("\n")
}
