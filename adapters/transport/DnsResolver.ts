/**
 * The `Resolver` on the system resolver (`node:dns` `lookup`, as connections use it), all
 * addresses, IPv4 and IPv6, in the resolver's order. Runs on Node, Bun and Deno (Node compatibility).
 */
import { lookup } from "node:dns/promises"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Resolver, ResolveFailed } from "../../core/connector/Endpoint.ts"

export const layer: Layer.Layer<Resolver> = Layer.succeed(Resolver, {
  resolve: (host) =>
    Effect.tryPromise({
      try: () => lookup(host, { all: true, verbatim: true }),
      catch: () => new ResolveFailed()
    }).pipe(Effect.map((entries) => entries.map((entry) => entry.address)))
})
