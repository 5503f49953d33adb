import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { Cipher } from "../../core/protocol/Cipher.ts"
import * as SecretVault from "../../core/ports/SecretVault.ts"
import * as MemorySecretVault from "../memory/SecretVault.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

/**
 * The SecretVault contract (docs/decisions.md, "Secret handling": only ciphertext at rest, bound to
 * its reference).
 *
 * With `sqlLayer` (SQL variants) the suite runs on that store and inspects the raw `accord_secrets`
 * rows; without it (memory), the at-rest checks use a vault over `MemorySecretVault.makeTable`, whose rows are
 * visible, which is exactly what the memory layer is made of.
 */
export const suite = (
  name: string,
  layer: () => Layer.Layer<SecretVault.SecretVault | Cipher, unknown>,
  sqlLayer?: () => Layer.Layer<SecretVault.SecretVault | Cipher | SqlClient.SqlClient, unknown>
) =>
  describe(`SecretVault contract (${name})`, () => {
    onOneStore(sqlLayer ?? layer, (it) => {
      const plaintext = (get: Option.Option<Redacted.Redacted<string>>) => Option.map(get, Redacted.value)

      /**
       * A vault plus raw access to the sealed value at a reference: the SQL table when there is one,
       * otherwise a vault of our own over a visible memory table.
       */
      const atRest = Effect.gen(function* () {
        const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
        if (Option.isSome(sql)) {
          const client = sql.value
          return {
            vault: yield* SecretVault.SecretVault,
            sealed: (ref: string) =>
              Effect.map(client<{ sealed: string }>`SELECT sealed FROM accord_secrets WHERE ref = ${ref}`, (rows) =>
                rows.map((row) => row.sealed)
              ),
            copy: (from: string, to: string) =>
              Effect.asVoid(client`INSERT INTO accord_secrets (ref, sealed, created_at)
                SELECT ${to}, sealed, created_at FROM accord_secrets WHERE ref = ${from}`)
          }
        }
        const table = MemorySecretVault.makeTable()
        return {
          vault: yield* SecretVault.make(table),
          sealed: (ref: string) => Effect.sync(() => Option.toArray(Option.fromNullable(table.rows.get(ref)))),
          copy: (from: string, to: string) =>
            Effect.asVoid(Effect.flatMap(table.get(from), (v) => table.put(to, Option.getOrThrow(v), 0)))
        }
      })

      it.effect("a secret put is returned by get", () =>
        Effect.gen(function* () {
          const vault = yield* SecretVault.SecretVault
          const ref = uid("ref-")
          yield* vault.put(ref, Redacted.make("whsec_round-trip-✓"), 1_000)
          assert.deepStrictEqual(plaintext(yield* vault.get(ref)), Option.some("whsec_round-trip-✓"))
        })
      )

      it.effect("get of an unknown reference is none", () =>
        Effect.gen(function* () {
          const vault = yield* SecretVault.SecretVault
          assert.isTrue(Option.isNone(yield* vault.get(uid("ref-"))))
        })
      )

      it.effect("retire deletes the secret: true once, then false, and get is none", () =>
        Effect.gen(function* () {
          const vault = yield* SecretVault.SecretVault
          const ref = uid("ref-")
          const kept = uid("ref-")
          yield* vault.put(ref, Redacted.make("secret-to-retire"), 1_000)
          yield* vault.put(kept, Redacted.make("secret-to-keep"), 1_000)
          assert.isTrue(yield* vault.retire(ref))
          assert.isFalse(yield* vault.retire(ref))
          assert.isTrue(Option.isNone(yield* vault.get(ref)))
          assert.deepStrictEqual(plaintext(yield* vault.get(kept)), Option.some("secret-to-keep"))
        })
      )

      it.effect("only ciphertext is stored: the row never contains the plaintext and is sealed v1", () =>
        Effect.gen(function* () {
          const { sealed, vault } = yield* atRest
          const ref = uid("ref-")
          const secret = "whsec_" + "plaintext-marker-".repeat(3)
          yield* vault.put(ref, Redacted.make(secret), 1_000)
          const rows = yield* sealed(ref)
          assert.strictEqual(rows.length, 1)
          assert.isTrue(rows[0]!.startsWith("v1."))
          assert.notInclude(rows[0]!, secret)
          assert.notInclude(rows[0]!, "plaintext-marker")
          assert.notInclude(rows[0]!, globalThis.btoa(secret).slice(0, 12))
        })
      )

      it.effect("a ciphertext copied to another reference fails to open", () =>
        Effect.gen(function* () {
          const { copy, vault } = yield* atRest
          const ref = uid("ref-")
          const elsewhere = uid("ref-")
          yield* vault.put(ref, Redacted.make("bound-to-its-ref"), 1_000)
          yield* copy(ref, elsewhere)
          const exit = yield* Effect.exit(vault.get(elsewhere))
          assert.deepStrictEqual(
            Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error._tag : exit,
            "OpenFailed"
          )
          assert.deepStrictEqual(plaintext(yield* vault.get(ref)), Option.some("bound-to-its-ref"))
        })
      )

      it.effect("each store built from the layer is fresh: another store does not see this one's secrets", () =>
        Effect.gen(function* () {
          const vault = yield* SecretVault.SecretVault
          const ref = uid("ref-")
          yield* vault.put(ref, Redacted.make("only-in-the-first-store"), 1_000)
          const inOther = yield* Effect.flatMap(SecretVault.SecretVault, (other) => other.get(ref)).pipe(
            Effect.provide(Layer.suspend(layer))
          )
          assert.isTrue(Option.isNone(inOther))
        })
      )
    })
  })
