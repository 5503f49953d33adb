import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import {
  classifyAddress,
  isAllowedAddress,
  layerResolverMemory,
  validateEndpoint
} from "../../../core/connector/Endpoint.ts"

const resolver = layerResolverMemory({
  "pay.example.com": ["93.184.216.34"],
  "dual.example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
  "mixed.example.com": ["93.184.216.34", "10.0.0.7"],
  "rebind.example.com": ["127.0.0.1"],
  "v6private.example.com": ["fd12:3456::1"],
  localhost: ["127.0.0.1", "::1"]
})

const secure = { allowInsecure: false }
const insecure = { allowInsecure: true }

const outcome = (url: string, policy = secure) =>
  validateEndpoint(url, policy).pipe(
    Effect.match({ onFailure: (e) => e.problem, onSuccess: () => "ok" }),
    Effect.provide(resolver)
  )

// [url, expected under the default policy, expected in insecure mode]
const table: ReadonlyArray<readonly [string, string, string]> = [
  ["https://pay.example.com/connector", "ok", "ok"],
  ["https://pay.example.com:8443/hooks/accord", "ok", "ok"],
  ["https://dual.example.com/", "ok", "ok"],
  ["https://93.184.216.34/connector", "ok", "ok"],
  ["https://[2606:4700:4700::1111]/connector", "ok", "ok"],
  ["https://PAY.EXAMPLE.COM/connector", "ok", "ok"],
  ["http://pay.example.com/connector", "not_https", "ok"],
  ["ftp://pay.example.com/connector", "not_https", "not_https"],
  ["javascript:alert(1)", "not_https", "not_https"],
  ["//pay.example.com/connector", "invalid_url", "invalid_url"],
  ["pay.example.com/connector", "invalid_url", "invalid_url"],
  ["", "invalid_url", "invalid_url"],
  ["https://user:pass@pay.example.com/", "credentials", "credentials"],
  ["https://user@pay.example.com/", "credentials", "credentials"],
  ["https://:pass@pay.example.com/", "credentials", "credentials"],
  ["https://@pay.example.com/", "credentials", "credentials"],
  ["https://pay.example.com/connector?token=1", "query", "query"],
  ["https://pay.example.com/connector?", "query", "query"],
  ["https://pay.example.com/connector#frag", "fragment", "fragment"],
  ["https://pay.example.com/connector#", "fragment", "fragment"],
  ["https://unknown.example.com/", "unresolvable", "unresolvable"],
  ["https://mixed.example.com/", "private_address", "private_address"],
  ["https://rebind.example.com/", "private_address", "ok"],
  ["https://v6private.example.com/", "private_address", "private_address"],
  ["https://localhost/", "private_address", "ok"],
  ["https://127.0.0.1/", "private_address", "ok"],
  ["http://127.0.0.1:8080/connector", "not_https", "ok"],
  ["https://127.255.255.254/", "private_address", "ok"],
  ["https://2130706433/", "private_address", "ok"],
  ["https://0177.0.0.1/", "private_address", "ok"],
  ["https://0x7f.0.0.1/", "private_address", "ok"],
  ["https://0x7f000001/", "private_address", "ok"],
  ["https://127.1/", "private_address", "ok"],
  ["https://0/", "private_address", "private_address"],
  ["https://0.0.0.0/", "private_address", "private_address"],
  ["https://10.0.0.1/", "private_address", "private_address"],
  ["https://012.0.0.1/", "private_address", "private_address"],
  ["https://167772161/", "private_address", "private_address"],
  ["https://172.16.0.1/", "private_address", "private_address"],
  ["https://172.31.255.255/", "private_address", "private_address"],
  ["https://172.32.0.1/", "ok", "ok"],
  ["https://192.168.1.1/", "private_address", "private_address"],
  ["https://169.254.169.254/latest/meta-data", "private_address", "private_address"],
  ["https://100.64.0.1/", "private_address", "private_address"],
  ["https://100.127.255.255/", "private_address", "private_address"],
  ["https://100.128.0.1/", "ok", "ok"],
  ["https://192.0.0.8/", "private_address", "private_address"],
  ["https://192.0.2.10/", "private_address", "private_address"],
  ["https://198.18.0.1/", "private_address", "private_address"],
  ["https://198.51.100.1/", "private_address", "private_address"],
  ["https://203.0.113.1/", "private_address", "private_address"],
  ["https://224.0.0.1/", "private_address", "private_address"],
  ["https://240.0.0.1/", "private_address", "private_address"],
  ["https://255.255.255.255/", "private_address", "private_address"],
  ["https://[::1]/", "private_address", "ok"],
  ["https://[::]/", "private_address", "private_address"],
  ["https://[::ffff:127.0.0.1]/", "private_address", "ok"],
  ["https://[::ffff:7f00:1]/", "private_address", "ok"],
  ["https://[::ffff:10.0.0.1]/", "private_address", "private_address"],
  ["https://[::ffff:169.254.169.254]/", "private_address", "private_address"],
  ["https://[::10.0.0.1]/", "private_address", "private_address"],
  ["https://[64:ff9b::10.0.0.1]/", "private_address", "private_address"],
  ["https://[64:ff9b::93.184.216.34]/", "ok", "ok"],
  ["https://[64:ff9b:1::1]/", "private_address", "private_address"],
  ["https://[2002:c0a8:0101::1]/", "private_address", "private_address"],
  ["https://[2002:5db8:d822::1]/", "ok", "ok"],
  ["https://[2001::1]/", "private_address", "private_address"],
  ["https://[2001:db8::1]/", "private_address", "private_address"],
  ["https://[fe80::1]/", "private_address", "private_address"],
  ["https://[fc00::1]/", "private_address", "private_address"],
  ["https://[fd00:ec2::254]/", "private_address", "private_address"],
  ["https://[fec0::1]/", "private_address", "private_address"],
  ["https://[ff02::1]/", "private_address", "private_address"],
  ["https://[100::1]/", "private_address", "private_address"]
]

describe("endpoint validation", () => {
  it("has a table of at least 60 URLs", () => assert.isAtLeast(table.length, 60))
  for (const [url, expected, expectedInsecure] of table) {
    it.effect(`${url || "(empty)"} -> ${expected} / insecure ${expectedInsecure}`, () =>
      Effect.gen(function* () {
        assert.strictEqual(yield* outcome(url, secure), expected)
        assert.strictEqual(yield* outcome(url, insecure), expectedInsecure)
      })
    )
  }

  it.effect("a refusal never echoes the URL", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        validateEndpoint("https://user:s3cr3t@pay.example.com/", secure).pipe(Effect.provide(resolver))
      )
      assert.notInclude(JSON.stringify(error), "s3cr3t")
      assert.notInclude(error.detail, "pay.example.com")
    })
  )

  const octet = fc.integer({ min: 0, max: 255 })
  const privateV4 = fc
    .oneof(
      fc.tuple(fc.constant(10), octet, octet, octet),
      fc.tuple(fc.constant(127), octet, octet, octet),
      fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), octet, octet),
      fc.tuple(fc.constant(192), fc.constant(168), octet, octet),
      fc.tuple(fc.constant(169), fc.constant(254), octet, octet),
      fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), octet, octet),
      fc.tuple(fc.integer({ min: 224, max: 255 }), octet, octet, octet),
      fc.tuple(fc.constant(0), octet, octet, octet)
    )
    .map((parts) => parts.join("."))

  it.prop(
    "every private IPv4 address is refused, also as IPv4-mapped, NAT64 and decimal forms",
    [privateV4],
    ([ip]) => {
      const [a, b, c, d] = ip.split(".").map(Number) as [number, number, number, number]
      const hex = (x: number, y: number) => ((x << 8) | y).toString(16)
      for (const form of [
        ip,
        `::ffff:${ip}`,
        `::ffff:${hex(a, b)}:${hex(c, d)}`,
        `64:ff9b::${ip}`,
        `2002:${hex(a, b)}:${hex(c, d)}::1`
      ]) {
        assert.isFalse(isAllowedAddress(form, secure), form)
      }
      const decimal = ((a * 256 + b) * 256 + c) * 256 + d
      assert.strictEqual(new URL(`https://${decimal}/`).hostname, ip)
    }
  )

  it("classifies", () => {
    assert.strictEqual(classifyAddress("8.8.8.8"), "public")
    assert.strictEqual(classifyAddress("::1"), "loopback")
    assert.strictEqual(classifyAddress("fe80::1%eth0"), "invalid")
    assert.strictEqual(classifyAddress("1.2.3"), "invalid")
    assert.strictEqual(classifyAddress("not an ip"), "invalid")
  })
})
