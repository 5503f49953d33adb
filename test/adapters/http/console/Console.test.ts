/**
 * The console's routes over real HTTP on loopback, without a browser: every asset with its type and
 * the security headers, a CSP with no `unsafe-inline` or `unsafe-eval`, an HTML page with no inline
 * script, style or event handler, a script that parses, and no workspace data served without a key.
 * The browser walk is `Console.browser.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { consoleHtml } from "../../../../adapters/http/console/Shell.ts"
import { consoleScript } from "../../../../adapters/http/console/Script.ts"
import { contentSecurityPolicy, securityHeaders } from "../../../../adapters/http/routes/Console.ts"
import { request, startServer } from "../../../support/http.ts"

const assets = [
  ["/console", "text/html; charset=utf-8"],
  ["/console/console.js", "text/javascript; charset=utf-8"],
  ["/console/console.css", "text/css; charset=utf-8"],
  ["/console/icon.svg", "image/svg+xml"]
] as const

describe("admin console routes", () => {
  it.scopedLive("serves each asset with its type, the CSP and the security headers", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      for (const [path, type] of assets) {
        const reply = yield* request(url + path)
        assert.strictEqual(reply.status, 200, path)
        assert.strictEqual(reply.headers.get("content-type"), type, path)
        for (const [name, value] of Object.entries(securityHeaders)) {
          assert.strictEqual(reply.headers.get(name), value, `${path} ${name}`)
        }
      }
    })
  )

  it("the CSP allows only this origin's script, style and API, and no framing", () => {
    const directives = new Map(
      contentSecurityPolicy.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1).join(" ")])
    )
    assert.strictEqual(directives.get("default-src"), "'none'")
    assert.strictEqual(directives.get("script-src"), "'self'")
    assert.strictEqual(directives.get("style-src"), "'self'")
    assert.strictEqual(directives.get("connect-src"), "'self'")
    assert.strictEqual(directives.get("frame-ancestors"), "'none'")
    assert.strictEqual(directives.get("form-action"), "'none'")
    assert.notInclude(contentSecurityPolicy, "unsafe-")
  })

  it("the page has no inline script, style or event handler", () => {
    const scripts = [...consoleHtml.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])
    assert.deepStrictEqual(scripts, ['<script type="module" src="/console/console.js">'])
    assert.notMatch(consoleHtml, /<script[^>]*>[^<]+<\/script>/)
    assert.notMatch(consoleHtml, /<style|\sstyle=|\son[a-z]+=/i)
  })

  it("the script parses, keeps the key in sessionStorage only and builds no HTML from text", () => {
    // It has no import or export, so the Function constructor parses it without running it.
    assert.doesNotThrow(() => new Function(consoleScript))
    assert.include(consoleScript, "sessionStorage")
    assert.notInclude(consoleScript, "localStorage")
    assert.notInclude(consoleScript, "document.cookie")
    assert.notMatch(consoleScript, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/)
  })

  it("the navigation links every screen the script renders, each named for what it holds", () => {
    const linked = [...consoleHtml.matchAll(/data-screen="([a-z]+)">([^<]+)</g)].map((m) => [m[1], m[2]])
    const rendered = [...consoleScript.matchAll(/^ {2}([a-z]+): \{ title: "([^"]+)"/gm)].map((m) => [m[1], m[2]])
    assert.deepStrictEqual(linked, rendered)
    assert.includeDeepMembers(linked, [
      ["catalog", "Catalog"],
      ["connector", "Action connector"],
      ["sessions", "Runtime sessions"],
      ["approvals", "Approvals"],
      ["erasures", "Erasures"]
    ])
    assert.notInclude(consoleHtml, "Payment backend")
  })

  it("charts are SVG built node by node: no library, no markup, nothing fetched but the admin API", () => {
    assert.include(consoleScript, "document.createElementNS(svgNs, tag)")
    assert.notMatch(consoleScript, /^\s*import\s|import\(/m)
    // one network call in the whole script, to the admin API
    assert.deepStrictEqual(
      [...consoleScript.matchAll(/fetch\(([a-zA-Z]+)/g)].map((m) => m[1]),
      ["adminBase"]
    )
    assert.notMatch(consoleScript, /DOMParser|createContextualFragment|setHTMLUnsafe/)
  })

  it.scopedLive("another method on the page is refused with 405", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const reply = yield* request(url + "/console", { method: "POST" })
      assert.strictEqual(reply.status, 405)
      assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
    })
  )
})
