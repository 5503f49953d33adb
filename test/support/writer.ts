/**
 * A child process for the crash test: opens the storage named by its arguments, runs the
 * migrations, then claims nonces `crash-0`, `crash-1`, … one transaction at a time, printing each
 * index only after its commit returned. The test kills it with SIGKILL mid-stream.
 *
 *   tsx test/support/writer.ts pglite <dataDir>
 *   tsx test/support/writer.ts postgres <url>
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Database from "../../adapters/sql/Database.ts"
import * as Migrations from "../../adapters/sql/Migrations.ts"
import * as SqlNonceStore from "../../adapters/sql/NonceStore.ts"
import { migrations } from "../../adapters/sql/schema/Migrations.ts"
import { NonceStore } from "../../core/ports/NonceStore.ts"

const [kind, where] = process.argv.slice(2)
const client = kind === "postgres" ? Database.layerPg(Redacted.make(where!)) : Database.layerPglite(where!)

const program = Effect.gen(function* () {
  yield* Migrations.run(migrations)
  const store = yield* NonceStore
  for (let i = 0; ; i++) {
    yield* store.claim({ scope: "crash", nonce: `crash-${i}`, now: 0, expiresAt: Number.MAX_SAFE_INTEGER })
    process.stdout.write(`${i}\n`)
  }
})

Effect.runPromise(program.pipe(Effect.provide(SqlNonceStore.layer.pipe(Layer.provideMerge(client))))).catch((error) => {
  console.error(error)
  process.exit(1)
})
