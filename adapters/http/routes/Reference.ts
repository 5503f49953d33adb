/**
 * The API reference: `GET /openapi.json` (the OpenAPI 3.1 document generated from the `HttpApi`
 * declaration, `api/Api.ts`) and `GET /reference` (the same document rendered on the server as one
 * HTML page, with its style sheet at `/reference/reference.css`). Both are built once, at start,
 * and need no key: they describe the API, never a workspace's data.
 *
 * The page carries no script and no inline style; its Content Security Policy allows only this
 * origin's style sheet.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Api from "../api/Api.ts"
import * as ServiceApi from "../api/ServiceApi.ts"
import { renderReference } from "../reference/Render.ts"
import { referenceCss } from "../reference/Style.ts"

/**
 * The Content Security Policy of the reference page and its style sheet.
 */
export const contentSecurityPolicy: string = [
  "default-src 'none'",
  "style-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'"
].join("; ")

const securityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "no-store"
}

const documentText = JSON.stringify(Api.document)
const page = renderReference(Api.document as never, {
  stylesheet: ServiceApi.referenceStyle.path,
  documentPath: ServiceApi.openApiDocument.path
})

/** `GET /openapi.json`: the document. */
export const openApiDocument = Effect.succeed(
  HttpServerResponse.text(documentText, { contentType: "application/json", headers: { "cache-control": "no-store" } })
)

/** `GET /reference`: the page. */
export const reference = Effect.succeed(
  HttpServerResponse.text(page, { contentType: "text/html; charset=utf-8", headers: securityHeaders })
)

/** `GET /reference/reference.css`: the page's style sheet. */
export const referenceStyle = Effect.succeed(
  HttpServerResponse.text(referenceCss, { contentType: "text/css; charset=utf-8", headers: securityHeaders })
)
