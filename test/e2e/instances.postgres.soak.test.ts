/**
 * Many instances on one PostgreSQL: two real server processes
 * (`runtimes/node/main.ts`) share one database; 500 actions are taken in through both, alternately,
 * and one server is SIGKILLed while the run goes on (an intake that fails on it is sent to the
 * other under the same `Idempotency-Key`). The survivor takes over the killed instance's leased
 * dispatches when their leases run out. Afterwards: every action taken in once and `verified`, and
 * the customer's operation ran exactly once per key (the leases, `FOR UPDATE SKIP LOCKED`, guard it).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { intakeInput, secrets, workspaceId } from "../core/connector/dispatch/support.ts"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../support/postgres.ts"
import { createHostTable, freePort, kill, query, startKit, startServer } from "./crashloopProcesses.ts"
import { admin, connect, type Service } from "./support.ts"

const actions = 500
const killAfter = 150

warnIfSkipped("many instances")

const serviceAt = (port: number): Service => {
  const base = `http://127.0.0.1:${port}`
  return { base, port, ws: `${base}/api/admin/v1/workspaces/${workspaceId}` }
}

describe.skipIf(databaseUrl === undefined)("two server instances on one PostgreSQL", () => {
  it.live(
    `${actions} actions through both, one SIGKILLed after ${killAfter}: each taken in once, verified, executed once per key`,
    () =>
      Effect.gen(function* () {
        const serverDb = Redacted.value(yield* freshSchemaUrl(databaseUrl!))
        const kitDb = Redacted.value(yield* freshSchemaUrl(databaseUrl!))
        const result = yield* Effect.promise(async () => {
          await createHostTable(kitDb)
          const [portA, portB, kitPort] = [await freePort(), await freePort(), await freePort()]
          const [a, b] = [serviceAt(portA), serviceAt(portB)]
          // Both start at once: the migration lock lets one migrate while the other waits.
          const [serverA, serverB] = await Promise.all([startServer(serverDb, portA), startServer(serverDb, portB)])
          // The kit completes to the instance that stays up (a load balancer's job in production).
          const kit = await startKit(kitDb, kitPort, b.base)
          try {
            await Effect.runPromise(connect(a, `http://127.0.0.1:${kitPort}/connector`, secrets))
            let next = 0
            let killed: Promise<void> | undefined
            const intake = async () => {
              while (next < actions) {
                const i = next++
                if (i === killAfter) killed = kill(serverA)
                const input = intakeInput(`acct_instances_${i}`)
                const body = JSON.stringify({
                  ...input,
                  action: {
                    ...input.action,
                    operation: {
                      ...input.action.operation,
                      trialRef: { entityKey: `sub_${i}`, entityKind: "subscription", version: 3 }
                    }
                  }
                })
                // Alternately through A and B; a failure on one goes to the other, same key.
                for (let attempt = 0; ; attempt++) {
                  const service = (i + attempt) % 2 === 0 ? a : b
                  const status = await fetch(`${service.ws}/action-requests`, {
                    method: "POST",
                    headers: { ...admin, "idempotency-key": `instances-${i}` },
                    body
                  }).then(
                    (r) => r.status,
                    () => 0
                  )
                  if (status === 202) break
                  if (status !== 0 && status < 500) throw new Error(`intake ${i} answered ${status}`)
                }
              }
            }
            await Promise.all(Array.from({ length: 8 }, intake))
            await killed
            let states: Array<{ state: string; n: string }> = []
            const started = performance.now()
            while (performance.now() - started < 90_000) {
              states = await query(serverDb, "SELECT state, count(*) AS n FROM accord_actions GROUP BY state")
              if (Number(states.find((s) => s.state === "verified")?.n ?? 0) === actions) break
              await new Promise((resolve) => setTimeout(resolve, 200))
            }
            const executions = await query<{ key: string; n: string }>(
              kitDb,
              "SELECT key, count(*) AS n FROM host_executions GROUP BY key"
            )
            return { states, executions }
          } finally {
            await Promise.all([kill(serverA), kill(serverB), kill(kit)])
          }
        })
        assert.deepStrictEqual(
          result.states.map((s) => [s.state, Number(s.n)]),
          [["verified", actions]]
        )
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
