/**
 * The table of unsafe payloads (spec "Data that must never be sent"): each row a `properties`
 * object the service must refuse with 422 `unsafe_property` at one path, never echoing the
 * offending text. Shared by the unit tests of the screen and the end-to-end tests of the route.
 */
import { freeTextMaxChars, redactedKey } from "../../../core/ingest/Safety.ts"
import type { Json } from "./support.ts"

/** Every string value anywhere in `value`. */
export const stringsIn = (value: unknown): Array<string> =>
  typeof value === "string"
    ? [value]
    : Array.isArray(value)
    ? value.flatMap(stringsIn)
    : typeof value === "object" && value !== null
    ? Object.values(value).flatMap(stringsIn)
    : []

/** [label, properties, path of the refusal, the offending text that must never be echoed] */
export const unsafePayloads: ReadonlyArray<readonly [string, Json, string, string]> = [
  // secret names
  ["password", { password: "hunter2!" }, "properties.password", "hunter2!"],
  ["passwd", { passwd: "s3cr3t-value" }, "properties.passwd", "s3cr3t-value"],
  ["secret", { secret: "shh-value" }, "properties.secret", "shh-value"],
  ["token", { token: "abc123def" }, "properties.token", "abc123def"],
  ["access_token", { access_token: "at-value-1" }, "properties.access_token", "at-value-1"],
  ["refresh_token", { refresh_token: "rt-value-1" }, "properties.refresh_token", "rt-value-1"],
  ["accessToken (camelCase)", { accessToken: "at-value-2" }, "properties.accessToken", "at-value-2"],
  ["api_key", { api_key: "key-value-1" }, "properties.api_key", "key-value-1"],
  ["apikey", { apikey: "key-value-2" }, "properties.apikey", "key-value-2"],
  ["X-Api-Key", { "X-Api-Key": "key-value-3" }, "properties.X-Api-Key", "key-value-3"],
  ["authorization", { authorization: "opaque-auth" }, "properties.authorization", "opaque-auth"],
  ["auth_header", { auth_header: "opaque-header" }, "properties.auth_header", "opaque-header"],
  ["cookie", { cookie: "sid=abc" }, "properties.cookie", "sid=abc"],
  ["session", { session: "sess-value" }, "properties.session", "sess-value"],
  ["session_id", { session_id: "sess-id-value" }, "properties.session_id", "sess-id-value"],
  ["signature", { signature: "sig-value" }, "properties.signature", "sig-value"],
  ["private_key", { private_key: "pk-material" }, "properties.private_key", "pk-material"],
  ["client_secret", { client_secret: "cs-material" }, "properties.client_secret", "cs-material"],
  ["invite_link", { invite_link: "join-me-here" }, "properties.invite_link", "join-me-here"],
  ["invite_url", { invite_url: "https://app.example.com/i/abc" }, "properties.invite_url", "https://app.example.com/i/abc"],
  ["webhook_url", { webhook_url: "https://example.com/in" }, "properties.webhook_url", "https://example.com/in"],
  ["destination_secret", { destination_secret: "dest-secret" }, "properties.destination_secret", "dest-secret"],
  ["credentials object", { credentials: { user: "svc", pass: "pw-value" } }, "properties.credentials", "pw-value"],
  ["password as a number", { password: 12345678 }, "properties.password", "12345678"],
  ["nested token", { integration: { provider: "hubspot", oauth_token: "tok-nested" } }, "properties.integration.oauth_token", "tok-nested"],
  // secret values
  ["Stripe live secret key", { provider_key: "sk_live_4eC39HqLyjWDarjtT1zdp7dc" }, "properties.provider_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"],
  ["Stripe test secret key", { k: "sk_test_4eC39HqLyjWDarjtT1zdp7dc" }, "properties.k", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"],
  ["Stripe restricted key", { k: "rk_live_51H8abcdefghijkl" }, "properties.k", "rk_live_51H8abcdefghijkl"],
  ["Stripe publishable key", { k: "pk_live_51H8abcdefghijkl" }, "properties.k", "pk_live_51H8abcdefghijkl"],
  ["webhook signing secret", { k: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }, "properties.k", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
  ["payment client secret", { k: "pi_3MtwBwLkdIwHu7ix28a3tqPa_secret_YrKJUKribcBjcG8HVhfZluoGH" }, "properties.k", "pi_3MtwBwLkdIwHu7ix28a3tqPa_secret_YrKJUKribcBjcG8HVhfZluoGH"],
  ["JWT", { k: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U" }, "properties.k", "eyJhbGciOiJIUzI1NiJ9"],
  ["Bearer header value", { k: "Bearer abcdefghijklmnop" }, "properties.k", "abcdefghijklmnop"],
  ["Basic header value", { k: "Basic dXNlcjpwYXNzd29yZA==" }, "properties.k", "dXNlcjpwYXNzd29yZA=="],
  ["AWS access key", { k: "AKIAIOSFODNN7EXAMPLE" }, "properties.k", "AKIAIOSFODNN7EXAMPLE"],
  ["GitHub token", { k: "ghp_1234567890abcdefghijABCDEFGHIJ123456" }, "properties.k", "ghp_1234567890abcdefghijABCDEFGHIJ123456"],
  ["Slack token", { k: "xoxb-123456789012-abcdefghijkl" }, "properties.k", "xoxb-123456789012-abcdefghijkl"],
  ["Accord ingest key", { k: "acc_ingest_Zx8mQ2pL9vT4wB7nK1sD5fG3hJ6" }, "properties.k", "acc_ingest_Zx8mQ2pL9vT4wB7nK1sD5fG3hJ6"],
  ["PEM private key", { k: "-----BEGIN RSA PRIVATE KEY-----" }, "properties.k", "BEGIN RSA PRIVATE KEY"],
  ["long hex", { k: "a3f5c9e2b1d4f6a8c0e2b4d6f8a0c2e4" }, "properties.k", "a3f5c9e2b1d4f6a8c0e2b4d6f8a0c2e4"],
  ["long base64", { k: "Xk9aB3dF7hJ2kL5mN8pQ1rS4tU6vW9yZ0aB3cD" }, "properties.k", "Xk9aB3dF7hJ2kL5mN8pQ1rS4tU6vW9yZ0aB3cD"],
  ["credentials in key=value form", { k: "user=svc&password=pw1" }, "properties.k", "pw1"],
  ["URL with credentials", { k: "postgres://svc:pw9@db.example.com/app" }, "properties.k", "pw9@db.example.com"],
  // links
  ["URL with a query string", { landing: "https://example.com/pricing?utm_source=x&email=a" }, "properties.landing", "utm_source"],
  ["URL with fragment parameters", { k: "https://app.example.com/cb#access_token=abc" }, "properties.k", "access_token=abc"],
  ["Slack webhook", { k: "https://hooks.slack.com/services/T000/B000/XXXX" }, "properties.k", "hooks.slack.com"],
  ["Discord webhook", { k: "https://discord.com/api/webhooks/123/abc" }, "properties.k", "discord.com"],
  ["webhook path", { k: "https://api.example.com/webhook/in-1" }, "properties.k", "api.example.com"],
  ["invite link", { k: "https://app.example.com/invite/abc123" }, "properties.k", "invite/abc123"],
  // personal data outside user
  ["e-mail value", { contact: "ada@example.com" }, "properties.contact", "ada@example.com"],
  ["e-mail in an array", { recipients: ["ok", "bob@example.org"] }, "properties.recipients.1", "bob@example.org"],
  ["email key", { email: "someone" }, "properties.email", "someone"],
  ["phone E.164", { k: "+15551234567" }, "properties.k", "+15551234567"],
  ["phone North American", { k: "(555) 123-4567" }, "properties.k", "123-4567"],
  ["phone international", { k: "+44 20 7946 0958" }, "properties.k", "7946 0958"],
  ["phone national", { k: "020 7946 0958" }, "properties.k", "7946 0958"],
  ["phone_number key as a number", { phone_number: 5551234567 }, "properties.phone_number", "5551234567"],
  ["first_name key", { first_name: "Ada" }, "properties.first_name", "Ada"],
  ["ip_address key", { ip_address: "host-1" }, "properties.ip_address", "host-1"],
  ["IPv4 value", { origin: "192.168.1.20" }, "properties.origin", "192.168.1.20"],
  ["e-mail as a property name", { "ada@example.com": 3 }, `properties.${redactedKey}`, "ada@example.com"],
  // free text
  ["free text by words", { k: "the customer said the export is too slow for them" }, "properties.k", "too slow"],
  ["free text by length", { k: "x".repeat(freeTextMaxChars + 1) }, "properties.k", "x".repeat(freeTextMaxChars + 1)],
  ["comment", { comment: "meh" }, "properties.comment", "meh"],
  ["notes", { notes: "call back" }, "properties.notes", "call back"],
  ["description", { description: "Annual deal" }, "properties.description", "Annual deal"],
  ["message", { message: "hi there" }, "properties.message", "hi there"],
  ["error_message", { error_message: "timeout" }, "properties.error_message", "timeout"],
  ["feedback", { feedback: "love it" }, "properties.feedback", "love it"],
  ["survey_response", { survey_response: "maybe" }, "properties.survey_response", "maybe"],
  ["transcript", { transcript: "agent: hi" }, "properties.transcript", "agent: hi"],
  ["summary", { summary: "angry user" }, "properties.summary", "angry user"],
  ["prompt", { prompt: "write a poem" }, "properties.prompt", "write a poem"],
  ["request body", { body: { a: 1 } }, "properties.body", "body"],
  ["stack trace", { stack_trace: "at f (x.js:1)" }, "properties.stack_trace", "x.js:1"],
  ["stack", { stack: "Error: x" }, "properties.stack", "Error: x"],
  ["log", { log: "GET /" }, "properties.log", "GET /"],
  ["free-text reason", { reason: "too expensive" }, "properties.reason", "too expensive"],
  // over the length bound, still unsafe (not merely too long)
  ["stack trace over 256 characters", { k: "Error: boom\n    at charge (billing.js:41:7)\n".repeat(8) }, "properties.k", "billing.js:41:7"],
  ["secret padded over 256 characters", { k: "sk_live_4eC39HqLyjWDarjtT1zdp7dc " + "x".repeat(300) }, "properties.k", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"]
]

/** [identifier field, an unsafe value for it, a phrase of the reason] */
export const unsafeIdentifiers: ReadonlyArray<readonly ["account_id" | "user_id" | "event_id", string, string]> = [
  ["account_id", "ada@example.com", "e-mail"],
  ["account_id", "(555) 123-4567", "phone"],
  ["account_id", "192.168.1.20", "IP address"],
  ["account_id", "the customer said the export is too slow for them", "free text"],
  ["user_id", "+15551234567", "phone"],
  ["user_id", "bob@example.org", "e-mail"],
  ["user_id", "Bearer abcdefghijklmnop", "Authorization"],
  ["event_id", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "API key"],
  ["event_id", "integration_connected:ada@example.com", "e-mail"],
  ["event_id", "https://app.example.com/invite/abc123", "invite"]
]
