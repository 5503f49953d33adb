/**
 * Authenticated encryption of stored secrets and continuations (docs/decisions.md, "Secret
 * handling"): AES-256-GCM under the master key, a fresh 96-bit IV per message, and associated data
 * that binds a ciphertext to its place (e.g. `connector-secret:{connectionId}:{revision}`), so a
 * ciphertext copied to another row fails to open.
 *
 * Sealed form: `v1.` + base64url(iv ‖ ciphertext ‖ tag).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"

/**
 * A sealed value could not be opened: wrong key, wrong associated data, or tampered.
 */
export class OpenFailed extends Schema.TaggedError<OpenFailed>()("OpenFailed", {}) {
  override get message(): string {
    return "sealed value could not be opened (wrong key, wrong binding, or tampered)"
  }
}

/**
 * Seals and opens text bound to its associated data (the row it belongs to), so a sealed value
 * cannot be moved to another row.
 */
export interface CipherService {
  /** Seals the text, bound to `associatedData`. */
  readonly seal: (plaintext: string, associatedData: string) => Effect.Effect<string>
  /** Opens a sealed value with the same associated data; fails when either was changed. */
  readonly open: (sealed: string, associatedData: string) => Effect.Effect<string, OpenFailed>
}

/** The service tag of the cipher that seals connector secrets and stored continuations. */
export class Cipher extends Context.Tag("@accord/core/Cipher")<Cipher, CipherService>() {}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

const toBase64Url = (bytes: Uint8Array): string => {
  let binary = ""
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!)
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")
}

const fromBase64Url = (text: string): Uint8Array | undefined => {
  try {
    const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"))
    return Uint8Array.from(binary, (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
}

/**
 * AES-256-GCM over WebCrypto (global on Node, Bun and Deno). `masterKey` must be 32 bytes.
 */
export const makeAesGcm = (masterKey: Redacted.Redacted<Uint8Array>): Effect.Effect<CipherService> =>
  Effect.gen(function* () {
    const subtle = globalThis.crypto.subtle
    const raw = Redacted.value(masterKey)
    if (raw.length !== 32) return yield* Effect.dieMessage("the master key must be 32 bytes")
    const key = yield* Effect.promise(() =>
      subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"])
    )
    return {
      seal: (plaintext, associatedData) =>
        Effect.promise(async () => {
          const iv = globalThis.crypto.getRandomValues(new Uint8Array(12))
          const sealed = new Uint8Array(
            await subtle.encrypt(
              { name: "AES-GCM", iv, additionalData: encoder.encode(associatedData) },
              key,
              encoder.encode(plaintext)
            )
          )
          const out = new Uint8Array(iv.length + sealed.length)
          out.set(iv)
          out.set(sealed, iv.length)
          return "v1." + toBase64Url(out)
        }),
      open: (sealed, associatedData) => {
        const bytes = sealed.startsWith("v1.") ? fromBase64Url(sealed.slice(3)) : undefined
        if (bytes === undefined || bytes.length < 12 + 16) return Effect.fail(new OpenFailed())
        return Effect.tryPromise({
          try: () =>
            subtle.decrypt(
              { name: "AES-GCM", iv: bytes.subarray(0, 12), additionalData: encoder.encode(associatedData) },
              key,
              bytes.subarray(12)
            ),
          catch: () => new OpenFailed()
        }).pipe(Effect.map((plain) => decoder.decode(plain)))
      }
    }
  })

/** Provides the `Cipher` as AES-256-GCM under the 32-byte master key. */
export const layerAesGcm = (masterKey: Redacted.Redacted<Uint8Array>): Layer.Layer<Cipher> =>
  Layer.effect(Cipher, makeAesGcm(masterKey))
