/**
 * `npm run rotate-master-key`: re-encrypts every stored secret under a new master key in one
 * transaction (`adapters/sql/MasterKeyRotation.ts`). Reads the same configuration as the server
 * (`DATABASE_URL` or `ACCORD_DATA_DIR`), the current key as the server does (`ACCORD_MASTER_KEY`,
 * else the key file in the data directory) and the new key from `ACCORD_NEW_MASTER_KEY` (base64 of
 * 32 bytes). Stop every server first; start them again with the new key.
 *
 * When the current key came from the key file, the file is replaced by the new key once the
 * transaction has committed; otherwise the operator sets `ACCORD_MASTER_KEY` to the new key.
 */
import { existsSync } from "node:fs"
import { chmod, rename, writeFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as AccordConfig from "../../adapters/config/AccordConfig.ts"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import * as Database from "../../adapters/sql/Database.ts"
import * as MasterKeyRotation from "../../adapters/sql/MasterKeyRotation.ts"
import { makeAesGcm } from "../../core/protocol/Cipher.ts"

/**
 * The command could not run or refused; `reason` is one line without secrets.
 */
export class RotationCommandError extends Data.TaggedError("RotationCommandError")<{ readonly reason: string }> {
  override get message(): string {
    return this.reason
  }
}

const fail = (reason: string) => Effect.fail(new RotationCommandError({ reason }))

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((byte, i) => byte === b[i])

/**
 * Runs the rotation from the current `ConfigProvider`; returns the lines to print.
 */
export const run: Effect.Effect<ReadonlyArray<string>, RotationCommandError> = Effect.gen(function* () {
  const config = yield* AccordConfig.load.pipe(Effect.catchAll((error) => fail(error.problems.join("; "))))
  const newKeyText = yield* Config.option(Config.redacted("ACCORD_NEW_MASTER_KEY")).pipe(
    Effect.catchAll(() => Effect.succeed(Option.none<Redacted.Redacted<string>>()))
  )
  if (Option.isNone(newKeyText)) return yield* fail("ACCORD_NEW_MASTER_KEY must be set (base64 of 32 bytes)")
  const newKey = AccordConfig.decodeBase64(Redacted.value(newKeyText.value))
  if (newKey === undefined || newKey.length !== 32)
    return yield* fail("ACCORD_NEW_MASTER_KEY must be base64 of exactly 32 bytes")

  const storage = Database.storageFrom(config)
  if (storage._tag === "Pglite" && storage.dataDir.startsWith("memory://")) {
    return yield* fail("ACCORD_DATA_DIR is in memory: there is nothing stored to rotate")
  }
  if (storage._tag === "Pglite" && Database.createsEmbeddedDatabase(storage))
    return yield* fail(`no embedded database in ${resolve(storage.dataDir)}`)
  const keyFile = join(resolve(config.dataDir), AccordConfig.masterKeyFile)
  // Without ACCORD_MASTER_KEY the current key is the file; never create one here.
  if (Option.isNone(config.masterKey) && !existsSync(keyFile)) {
    return yield* fail(`ACCORD_MASTER_KEY is not set and there is no key file at ${keyFile}`)
  }
  const oldKey = yield* AccordConfig.resolveMasterKey(config).pipe(
    Effect.provide(NodeCrypto.layer),
    Effect.catchAll((error) => fail(error.problems.join("; ")))
  )

  const summary = yield* MasterKeyRotation.rotate({
    oldCipher: yield* makeAesGcm(oldKey.key),
    newCipher: yield* makeAesGcm(Redacted.make(newKey)),
    sameKey: sameBytes(Redacted.value(oldKey.key), newKey)
  }).pipe(
    Effect.provide(Database.layer(storage)),
    Effect.catchAll((error) => fail(error._tag === "RotationRefused" ? error.message : `storage: ${error.message}`))
  )

  const lines = [
    `rotated: ${Database.describeStorage(storage)}`,
    ...Object.entries(summary).map(([table, count]) => `  ${table}: ${count} sealed again`)
  ]
  if (oldKey.source === "environment") {
    return [
      ...lines,
      "next: set ACCORD_MASTER_KEY to the value of ACCORD_NEW_MASTER_KEY on every host, then start the servers"
    ]
  }
  // The key file: replaced atomically (same directory, mode 0600) now that the database has moved.
  const replaced = yield* Effect.tryPromise(async () => {
    const temporary = `${keyFile}.new`
    await writeFile(temporary, btoa(String.fromCharCode(...newKey)) + "\n", { mode: 0o600 })
    await chmod(temporary, 0o600)
    await rename(temporary, keyFile)
  }).pipe(
    Effect.as(true),
    Effect.catchAll(() => Effect.succeed(false))
  )
  return [
    ...lines,
    replaced
      ? `key file: ${keyFile} now holds the new key`
      : `key file: could not write ${keyFile}; the database now needs the new key: set ACCORD_MASTER_KEY to it`
  ]
})

/**
 * The command's program: prints the lines, or one failure line and exits non-zero.
 */
export const main: Effect.Effect<void, RotationCommandError> = run.pipe(
  Effect.flatMap((lines) => Effect.forEach(lines, (line) => Console.log(line), { discard: true })),
  Effect.tapError((error) => Console.error(`rotate-master-key: ${error.message}`))
)
