/**
 * `accord customer doctor` against the customer kit on loopback (every check passes) and against
 * deliberately careless endpoints that answer correctly signed acknowledgements while skipping a
 * check (verifying nothing; comparing only the workspace; verifying the signature but not the
 * workspace): each fails exactly the checks it should. Also the service's secret rules and the
 * CLI's exit codes.
 */
import { execFile } from "node:child_process"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { promisify } from "node:util"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { type CustomerKit, makeCustomerKit } from "../../../adapters/customer/Kit.ts"
import { runDoctor } from "../../../adapters/doctor/CustomerDoctor.ts"
import { HandshakeRequest } from "../../../core/protocol/messages/Handshake.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import { encodeBody, importSigningKeys, sign } from "../../../core/protocol/Signing.ts"
import { verifyAndDecode } from "../../../core/protocol/Verification.ts"
import { secrets, storageLayer, workspaceId } from "../../support/customer.ts"
import { nodeArgs } from "../../../scripts/entrypoint.ts"

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/connector`
}
const close = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })

let kit: CustomerKit
let kitServer: Server
let kitUrl = ""
const careless: Record<
  "verifiesNothing" | "comparesWorkspaceOnly" | "skipsWorkspace",
  { server: Server; url: string }
> = {} as any

/**
 * An endpoint that answers any handshake for which `accepts` resolves true with a correctly signed
 * `handshake_ack` echoing the request, and everything else with 401.
 */
const ackEndpoint = async (accepts: (raw: Uint8Array, headers: Record<string, string>) => Promise<boolean>) => {
  const keys = await Effect.runPromise(Effect.provide(importSigningKeys(secrets), NodeCrypto.layer))
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const raw = new Uint8Array(Buffer.concat(chunks))
      if (!(await accepts(raw, req.headers as Record<string, string>))) return void res.writeHead(401).end()
      const body = JSON.parse(Buffer.from(raw).toString())
      const ack = encodeBody({
        challenge: body.challenge,
        connectionId: body.connectionId,
        protocolVersion: 1,
        status: "ready",
        type: "service.customer_action.handshake_ack",
        workspaceId: body.workspaceId
      })
      const headers = await Effect.runPromise(
        Effect.provide(sign({ purpose: "handshake_response", keys, body: ack }), NodeCrypto.layer)
      )
      res.writeHead(200, headers).end(ack)
    })
  })
  return { server, url: await listen(server) }
}

beforeAll(async () => {
  kit = await makeCustomerKit({
    workspaceId,
    secrets,
    serviceUrl: "http://127.0.0.1:1",
    allowInsecureServiceUrl: true,
    storage: storageLayer(),
    precheck: async () => "unsupported_operation",
    executor: {
      execute: async () => ({
        outcome: "failed",
        providerReference: "none",
        evidence: { entitlement: "", reasonCode: "no", source: "customer_server_event" }
      }),
      lookup: async () => undefined
    }
  })
  kitServer = createServer(kit.nodeHandler)
  kitUrl = await listen(kitServer)
  const keys = await Effect.runPromise(Effect.provide(importSigningKeys(secrets), NodeCrypto.layer))
  careless.verifiesNothing = await ackEndpoint(async () => true)
  // Refuses another workspace, checks no signature: what the old workspace-tampering check could not tell apart.
  careless.comparesWorkspaceOnly = await ackEndpoint(
    async (raw) => JSON.parse(Buffer.from(raw).toString()).workspaceId === workspaceId
  )
  // Verifies version, time, nonce and signature like the kit, then never compares the workspace.
  const nonces = MemoryNonceStore.context()
  careless.skipsWorkspace = await ackEndpoint((raw, headers) =>
    Effect.runPromise(
      verifyAndDecode(HandshakeRequest, {
        purpose: "handshake_request",
        keys,
        headers,
        body: raw,
        nonceScope: "careless"
      }).pipe(
        Effect.provide(NodeCrypto.layer),
        Effect.provide(nonces),
        Effect.match({ onFailure: () => false, onSuccess: () => true })
      )
    )
  )
})
afterAll(async () => {
  await close(kitServer)
  for (const endpoint of Object.values(careless)) await close(endpoint.server)
  await kit.dispose()
})

const options = (endpoint: string) => ({
  endpoint,
  workspaceId,
  actionSigningSecret: Redacted.value(secrets.actionSigning),
  completionSecret: Redacted.value(secrets.completion)
})

describe("customer doctor", () => {
  it.live("every check passes against the customer kit, execution included", () =>
    Effect.gen(function* () {
      const report = yield* Effect.promise(() => runDoctor({ ...options(kitUrl), withExecution: true }))
      assert.deepStrictEqual(
        report.checks.filter((c) => !c.ok),
        []
      )
      assert.deepStrictEqual(
        report.checks.map((c) => c.id),
        [
          "secrets_length",
          "secrets_whitespace",
          "secrets_distinct",
          "handshake_revision",
          "handshake_without_revision",
          "tamper_rejected",
          "workspace_mismatch_rejected",
          "stale_rejected",
          "wrong_secret_rejected",
          "replay_rejected",
          "execution_acknowledged",
          "duplicate_idempotent",
          "key_mismatch_rejected"
        ]
      )
      assert.isTrue(report.ok)
    })
  )

  const failedChecks = (endpoint: string) =>
    Effect.map(
      Effect.promise(() => runDoctor(options(endpoint))),
      (report) => {
        assert.isFalse(report.ok)
        return report.checks.filter((c) => !c.ok).map((c) => c.id)
      }
    )

  it.live("an endpoint that verifies nothing fails the refusal checks", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* failedChecks(careless.verifiesNothing.url), [
        "tamper_rejected",
        "workspace_mismatch_rejected",
        "stale_rejected",
        "wrong_secret_rejected",
        "replay_rejected"
      ])
    })
  )

  it.live("tamper_rejected: an endpoint that compares the workspace but checks no signature fails it", () =>
    Effect.gen(function* () {
      const failed = yield* failedChecks(careless.comparesWorkspaceOnly.url)
      assert.include(failed, "tamper_rejected")
      assert.notInclude(failed, "workspace_mismatch_rejected")
    })
  )

  it.live("workspace_mismatch_rejected: an endpoint that verifies signatures but not the workspace fails only it", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* failedChecks(careless.skipsWorkspace.url), ["workspace_mismatch_rejected"])
    })
  )

  it.live(
    "the service's secret rules: short, long, padded and equal secrets fail their checks and never appear in the report",
    () =>
      Effect.gen(function* () {
        const run = (actionSigningSecret: string, completionSecret: string) =>
          Effect.map(
            Effect.promise(() => runDoctor({ ...options(kitUrl), actionSigningSecret, completionSecret })),
            (report) => {
              assert.notInclude(JSON.stringify(report), actionSigningSecret)
              assert.notInclude(JSON.stringify(report), completionSecret)
              return Object.fromEntries(
                report.checks.filter((c) => c.id.startsWith("secrets_")).map((c) => [c.id, c.ok])
              )
            }
          )
        const ok = Redacted.value(secrets.completion)
        assert.deepStrictEqual(yield* run("short-secret", "short-secret"), {
          secrets_length: false,
          secrets_whitespace: true,
          secrets_distinct: false
        })
        // 32 code points, but 64 UTF-16 units: the rule counts code points, like the service.
        assert.deepStrictEqual(yield* run("🔑".repeat(32), ok), {
          secrets_length: true,
          secrets_whitespace: true,
          secrets_distinct: true
        })
        assert.deepStrictEqual(yield* run("🔑".repeat(31), ok), {
          secrets_length: false,
          secrets_whitespace: true,
          secrets_distinct: true
        })
        assert.deepStrictEqual(yield* run("a".repeat(513), ok), {
          secrets_length: false,
          secrets_whitespace: true,
          secrets_distinct: true
        })
        assert.deepStrictEqual(yield* run(`${"a".repeat(40)}\n`, ok), {
          secrets_length: true,
          secrets_whitespace: false,
          secrets_distinct: true
        })
        assert.deepStrictEqual(yield* run(` ${"a".repeat(40)}`, ok), {
          secrets_length: true,
          secrets_whitespace: false,
          secrets_distinct: true
        })
      })
  )

  it.live(
    "the CLI exits 0 with a JSON report, 1 when a check fails, 2 on a bad ACCORD_CONNECTION_REVISION",
    () =>
      Effect.gen(function* () {
        const run = (endpoint: string, env: Record<string, string> = {}) =>
          promisify(execFile)(
            process.execPath,
            [...nodeArgs("runtimes/cli/main.ts"), "customer", "doctor", "--endpoint", endpoint, "--json"],
            {
              env: {
                ...process.env,
                ACCORD_WORKSPACE_ID: workspaceId,
                ACCORD_ACTION_SIGNING_SECRET: Redacted.value(secrets.actionSigning),
                ACCORD_COMPLETION_SECRET: Redacted.value(secrets.completion),
                ...env
              }
            }
          ).then(
            (r) => ({ code: 0, stdout: r.stdout }),
            (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout })
          )
        const good = yield* Effect.promise(() => run(kitUrl))
        assert.strictEqual(good.code, 0)
        assert.isTrue(JSON.parse(good.stdout).ok)
        assert.notInclude(good.stdout, Redacted.value(secrets.actionSigning))
        const bad = yield* Effect.promise(() => run(careless.verifiesNothing.url))
        assert.strictEqual(bad.code, 1)
        // The kit runs at revision 0: a doctor configured for revision 1 sees it refuse the handshake.
        const otherRevision = yield* Effect.promise(() => run(kitUrl, { ACCORD_CONNECTION_REVISION: "1" }))
        assert.strictEqual(otherRevision.code, 1)
        const failed = JSON.parse(otherRevision.stdout)
          .checks.filter((c: { ok: boolean }) => !c.ok)
          .map((c: { id: string }) => c.id)
        assert.deepStrictEqual(failed, ["handshake_revision"])
        const usage = yield* Effect.promise(() => run(kitUrl, { ACCORD_CONNECTION_REVISION: "one" }))
        assert.strictEqual(usage.code, 2)
      }),
    60_000
  )
})
