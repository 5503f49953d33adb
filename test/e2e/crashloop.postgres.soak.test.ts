/**
 * Crash loop: the real server process (`runtimes/node/main.ts`) and the real
 * customer kit process (`crashloopKit.ts`), each on its own PostgreSQL schema, are SIGKILLed at
 * random — the server, the kit or both — and started again on the same port and storage while
 * actions are taken in (each `POST /action-requests` retried under its `Idempotency-Key` until it is
 * answered) and dispatched, executed and completed. Afterwards: every action taken in exactly once,
 * every one `verified` within 60 s of the last kill (the kit's execution leases are 15 s, renewed by
 * the heartbeat while an execution runs, so a killed kit's work is taken up again within a lease),
 * and the customer's operation ran exactly once per key.
 *
 * The 60 s also hold the dispatcher's retry backoff: each delivery refused while the kit is down
 * doubles the wait before the next (1 s, 2 s, … `retrySchedule`), so after long outages (slow
 * restarts on a loaded machine) an action's next attempt can be past the bound. The kit's first
 * acknowledgement after it is back makes those deliveries due at once (`unreachableReasons`,
 * `ActionLedger.expediteRetries`), so recovery waits for the restart, not for the longest backoff.
 * The failure message lists the actions still waiting and why.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { intakeInput, secrets, workspaceId } from "../core/connector/dispatch/support.ts"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../support/postgres.ts"
import {
  createHostTable,
  freePort,
  kill,
  query,
  type Running,
  seeded,
  startKit,
  startServer
} from "./crashloopProcesses.ts"
import { admin, connect, type Service } from "./support.ts"

const actions = 200
const kills = 4
const seed = Number(process.env["ACCORD_CRASHLOOP_SEED"] ?? 20)

warnIfSkipped("crash loop")

describe.skipIf(databaseUrl === undefined)("crash loop: server and kit SIGKILLed at random (PostgreSQL)", () => {
  it.live(
    `${actions} actions, ${kills} kills: each taken in once, executed once per key, all verified within 60 s of the last kill (seed ${seed})`,
    () =>
      Effect.gen(function* () {
        const serverDb = Redacted.value(yield* freshSchemaUrl(databaseUrl!))
        const kitDb = Redacted.value(yield* freshSchemaUrl(databaseUrl!))
        const random = seeded(seed)
        const result = yield* Effect.promise(async () => {
          await createHostTable(kitDb)
          const [serverPort, kitPort] = [await freePort(), await freePort()]
          const base = `http://127.0.0.1:${serverPort}`
          const service: Service = { base, port: serverPort, ws: `${base}/api/admin/v1/workspaces/${workspaceId}` }
          const processes: { server: Running; kit: Running } = {
            server: await startServer(serverDb, serverPort),
            kit: await startKit(kitDb, kitPort, base)
          }
          try {
            await Effect.runPromise(connect(service, `http://127.0.0.1:${kitPort}/connector`, secrets))

            // Intake: retried under the same key until answered, whatever is down.
            let next = 0
            const intake = async () => {
              while (next < actions) {
                const i = next++
                const base = intakeInput(`acct_crash_${i}`)
                const body = JSON.stringify({
                  ...base,
                  action: {
                    ...base.action,
                    operation: {
                      ...base.action.operation,
                      trialRef: { entityKey: `sub_${i}`, entityKind: "subscription", version: 3 }
                    }
                  }
                })
                for (;;) {
                  const status = await fetch(`${service.ws}/action-requests`, {
                    method: "POST",
                    headers: { ...admin, "idempotency-key": `crashloop-${i}` },
                    body
                  }).then(
                    (r) => r.status,
                    () => 0
                  )
                  if (status === 202) break
                  if (status !== 0 && status < 500) throw new Error(`intake ${i} answered ${status}`)
                  await new Promise((resolve) => setTimeout(resolve, 100))
                }
                await new Promise((resolve) => setTimeout(resolve, 20 + random() * 40))
              }
            }
            const intakes = Promise.all(Array.from({ length: 4 }, intake))

            // The kills: server, kit or both, at random moments; each restarted at once.
            let lastKill = 0
            for (let k = 0; k < kills; k++) {
              await new Promise((resolve) => setTimeout(resolve, 500 + random() * 1_500))
              const roll = random()
              const victims: Array<"server" | "kit"> =
                roll < 0.4 ? ["server"] : roll < 0.8 ? ["kit"] : ["server", "kit"]
              await Promise.all(victims.map((v) => kill(processes[v])))
              lastKill = performance.now()
              for (const v of victims) {
                processes[v] =
                  v === "server" ? await startServer(serverDb, serverPort) : await startKit(kitDb, kitPort, base)
              }
            }
            await intakes

            // Recovery: every action final (verified) within 60 s of the last kill.
            let states: Array<{ state: string; n: string }> = []
            for (;;) {
              states = await query(serverDb, "SELECT state, count(*) AS n FROM accord_actions GROUP BY state")
              const verified = Number(states.find((s) => s.state === "verified")?.n ?? 0)
              if (verified === actions || performance.now() - lastKill > 60_000) break
              await new Promise((resolve) => setTimeout(resolve, 200))
            }
            const recoveryMillis = performance.now() - lastKill
            const executions = await query<{ key: string; n: string }>(
              kitDb,
              "SELECT key, count(*) AS n FROM host_executions GROUP BY key"
            )
            const waiting = await query(
              serverDb,
              `SELECT a.state, o.attempts, o.last_error, o.completed_at IS NOT NULL AS done,
              o.next_attempt_at - (extract(epoch from now()) * 1000)::int8 AS due_in, o.lease_expires_at - (extract(epoch from now()) * 1000)::int8 AS lease_in
            FROM accord_actions a LEFT JOIN accord_outbox o ON o.payload->>'actionRequestId' = a.action_request_id AND o.kind = 'service.dispatch'
            WHERE a.state <> 'verified'`
            )
            return { states, recoveryMillis, executions, waiting }
          } finally {
            await Promise.all([kill(processes.server), kill(processes.kit)])
          }
        })

        assert.deepStrictEqual(
          result.states.map((s) => [s.state, Number(s.n)]),
          [["verified", actions]],
          `seed ${seed}; waiting: ${JSON.stringify(result.waiting)}`
        )
        assert.isAtMost(result.recoveryMillis, 60_000)
        assert.strictEqual(result.executions.length, actions, "one key per action executed")
        assert.deepStrictEqual(
          result.executions.filter((e) => Number(e.n) !== 1),
          [],
          "executions per key: exactly one"
        )
      }).pipe(Effect.scoped),
    240_000
  )
})
