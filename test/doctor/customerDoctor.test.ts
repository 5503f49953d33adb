/**
 * `accord customer doctor` against the customer kit on loopback (every check passes) and against
 * an endpoint that answers correctly signed acknowledgements without verifying anything (the
 * refusal checks fail), and the CLI's exit codes.
 */
import { execFile } from "node:child_process"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { promisify } from "node:util"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import { type CustomerKit, makeCustomerKit } from "../../adapters/customer/Kit.ts"
import { runDoctor } from "../../adapters/doctor/CustomerDoctor.ts"
import { encodeBody, importSigningKeys, sign } from "../../core/Signing.ts"
import { secrets, storageLayer, workspaceId } from "../customer/support.ts"

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/connector`
}
const close = (server: Server) => new Promise<void>((resolve) => {
  server.closeAllConnections()
  server.close(() => resolve())
})

let kit: CustomerKit
let kitServer: Server
let kitUrl = ""
let careless: Server
let carelessUrl = ""

beforeAll(async () => {
  kit = await makeCustomerKit({
    workspaceId,
    secrets,
    serviceUrl: "http://127.0.0.1:1",
    allowInsecureServiceUrl: true,
    storage: storageLayer(),
    precheck: async () => "unsupported_operation",
    executor: {
      execute: async () => ({ outcome: "failed", providerReference: "none", evidence: { entitlement: "", reasonCode: "no", source: "customer_server_event" } }),
      lookup: async () => undefined
    }
  })
  kitServer = createServer(kit.nodeHandler)
  kitUrl = await listen(kitServer)
  // Signs a fitting handshake_ack for anything it receives, verifying nothing.
  const keys = await Effect.runPromise(Effect.provide(importSigningKeys(secrets), NodeCrypto.layer))
  careless = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString())
      const ack = encodeBody({
        challenge: body.challenge,
        connectionId: body.connectionId,
        protocolVersion: 1,
        status: "ready",
        type: "service.customer_action.handshake_ack",
        workspaceId: body.workspaceId
      })
      const headers = await Effect.runPromise(Effect.provide(sign({ purpose: "handshake_response", keys, body: ack }), NodeCrypto.layer))
      res.writeHead(200, headers).end(ack)
    })
  })
  carelessUrl = await listen(careless)
})
afterAll(async () => {
  await close(kitServer)
  await close(careless)
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
    Effect.gen(function*() {
      const report = yield* Effect.promise(() => runDoctor({ ...options(kitUrl), withExecution: true }))
      assert.deepStrictEqual(report.checks.filter((c) => !c.ok), [])
      assert.deepStrictEqual(report.checks.map((c) => c.id), [
        "secrets_length",
        "secrets_distinct",
        "handshake_revision",
        "handshake_without_revision",
        "tamper_rejected",
        "stale_rejected",
        "wrong_secret_rejected",
        "replay_rejected",
        "execution_acknowledged",
        "duplicate_idempotent",
        "key_mismatch_rejected"
      ])
      assert.isTrue(report.ok)
    }))

  it.live("an endpoint that verifies nothing fails the refusal checks", () =>
    Effect.gen(function*() {
      const report = yield* Effect.promise(() => runDoctor(options(carelessUrl)))
      const failed = report.checks.filter((c) => !c.ok).map((c) => c.id)
      assert.deepStrictEqual(failed, ["tamper_rejected", "stale_rejected", "wrong_secret_rejected", "replay_rejected"])
      assert.isFalse(report.ok)
    }))

  it.live("short or equal secrets fail their checks and never appear in the report", () =>
    Effect.gen(function*() {
      const report = yield* Effect.promise(() => runDoctor({ ...options(kitUrl), actionSigningSecret: "short-secret", completionSecret: "short-secret" }))
      assert.isFalse(report.checks.find((c) => c.id === "secrets_length")!.ok)
      assert.isFalse(report.checks.find((c) => c.id === "secrets_distinct")!.ok)
      assert.notInclude(JSON.stringify(report), "short-secret")
    }))

  it.live("the CLI exits 0 with a JSON report, 1 when a check fails", () =>
    Effect.gen(function*() {
      const run = (endpoint: string) =>
        promisify(execFile)(process.execPath, ["--import", "tsx", "runtimes/cli/main.ts", "customer", "doctor", "--endpoint", endpoint, "--json"], {
          env: {
            ...process.env,
            ACCORD_WORKSPACE_ID: workspaceId,
            ACCORD_ACTION_SIGNING_SECRET: Redacted.value(secrets.actionSigning),
            ACCORD_COMPLETION_SECRET: Redacted.value(secrets.completion)
          }
        }).then((r) => ({ code: 0, stdout: r.stdout }), (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }))
      const good = yield* Effect.promise(() => run(kitUrl))
      assert.strictEqual(good.code, 0)
      assert.isTrue(JSON.parse(good.stdout).ok)
      assert.notInclude(good.stdout, Redacted.value(secrets.actionSigning))
      const bad = yield* Effect.promise(() => run(carelessUrl))
      assert.strictEqual(bad.code, 1)
    }), 60_000)
})
