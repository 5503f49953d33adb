/**
 * The admin console, served by the service itself: `GET /console` (the page),
 * `GET /console/console.js`, `GET /console/console.css` and `GET /console/icon.svg`. The three are
 * strings compiled into the server (`adapters/http/console/`), so the console is served the same way
 * on Node, Bun and Deno, with no file system and no build step. The page calls the administrative
 * routes with the key the administrator signs in with; these routes need no key, since they serve no
 * workspace data.
 *
 * Every answer carries the same headers: a Content Security Policy that allows only this origin's
 * script, style and API (no `unsafe-inline`, no `eval`, Trusted Types for every HTML sink), no
 * framing, no MIME sniffing, no referrer and no caching.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { consoleHtml, consoleIcon } from "../console/Shell.ts"
import { consoleScript } from "../console/Script.ts"
import { consoleCss } from "../console/Style.ts"

/**
 * The Content Security Policy of every console answer.
 */
export const contentSecurityPolicy: string = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'"
].join("; ")

/**
 * The headers of every console answer.
 */
export const securityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "no-store"
}

const asset = (body: string, contentType: string) =>
  Effect.succeed(HttpServerResponse.text(body, { contentType, headers: securityHeaders }))

/** The page. */
export const page = asset(consoleHtml, "text/html; charset=utf-8")
/** The page's script. */
export const script = asset(consoleScript, "text/javascript; charset=utf-8")
/** The page's style sheet. */
export const style = asset(consoleCss, "text/css; charset=utf-8")
/** The page's icon. */
export const icon = asset(consoleIcon, "image/svg+xml")
