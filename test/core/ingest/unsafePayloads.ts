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
  [
    "invite_url",
    { invite_url: "https://app.example.com/i/abc" },
    "properties.invite_url",
    "https://app.example.com/i/abc"
  ],
  ["webhook_url", { webhook_url: "https://example.com/in" }, "properties.webhook_url", "https://example.com/in"],
  ["destination_secret", { destination_secret: "dest-secret" }, "properties.destination_secret", "dest-secret"],
  ["credentials object", { credentials: { user: "svc", pass: "pw-value" } }, "properties.credentials", "pw-value"],
  ["password as a number", { password: 12345678 }, "properties.password", "12345678"],
  [
    "nested token",
    { integration: { provider: "hubspot", oauth_token: "tok-nested" } },
    "properties.integration.oauth_token",
    "tok-nested"
  ],
  // secret values
  [
    "Stripe live secret key",
    { provider_key: "sk_live_4eC39HqLyjWDarjtT1zdp7dc" },
    "properties.provider_key",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
  ],
  [
    "Stripe test secret key",
    { k: "sk_test_4eC39HqLyjWDarjtT1zdp7dc" },
    "properties.k",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
  ],
  ["Stripe restricted key", { k: "rk_live_51H8abcdefghijkl" }, "properties.k", "rk_live_51H8abcdefghijkl"],
  ["Stripe publishable key", { k: "pk_live_51H8abcdefghijkl" }, "properties.k", "pk_live_51H8abcdefghijkl"],
  [
    "webhook signing secret",
    { k: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
    "properties.k",
    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
  ],
  [
    "payment client secret",
    { k: "pi_3MtwBwLkdIwHu7ix28a3tqPa_secret_YrKJUKribcBjcG8HVhfZluoGH" },
    "properties.k",
    "pi_3MtwBwLkdIwHu7ix28a3tqPa_secret_YrKJUKribcBjcG8HVhfZluoGH"
  ],
  [
    "JWT",
    { k: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U" },
    "properties.k",
    "eyJhbGciOiJIUzI1NiJ9"
  ],
  ["Bearer header value", { k: "Bearer abcdefghijklmnop" }, "properties.k", "abcdefghijklmnop"],
  ["Basic header value", { k: "Basic dXNlcjpwYXNzd29yZA==" }, "properties.k", "dXNlcjpwYXNzd29yZA=="],
  ["AWS access key", { k: "AKIAIOSFODNN7EXAMPLE" }, "properties.k", "AKIAIOSFODNN7EXAMPLE"],
  [
    "GitHub token",
    { k: "ghp_1234567890abcdefghijABCDEFGHIJ123456" },
    "properties.k",
    "ghp_1234567890abcdefghijABCDEFGHIJ123456"
  ],
  ["Slack token", { k: "xoxb-123456789012-abcdefghijkl" }, "properties.k", "xoxb-123456789012-abcdefghijkl"],
  [
    "Accord ingest key",
    { k: "acc_ingest_Zx8mQ2pL9vT4wB7nK1sD5fG3hJ6" },
    "properties.k",
    "acc_ingest_Zx8mQ2pL9vT4wB7nK1sD5fG3hJ6"
  ],
  ["PEM private key", { k: "-----BEGIN RSA PRIVATE KEY-----" }, "properties.k", "BEGIN RSA PRIVATE KEY"],
  ["long hex", { k: "a3f5c9e2b1d4f6a8c0e2b4d6f8a0c2e4" }, "properties.k", "a3f5c9e2b1d4f6a8c0e2b4d6f8a0c2e4"],
  [
    "long base64",
    { k: "Xk9aB3dF7hJ2kL5mN8pQ1rS4tU6vW9yZ0aB3cD" },
    "properties.k",
    "Xk9aB3dF7hJ2kL5mN8pQ1rS4tU6vW9yZ0aB3cD"
  ],
  ["credentials in key=value form", { k: "user=svc&password=pw1" }, "properties.k", "pw1"],
  ["URL with credentials", { k: "postgres://svc:pw9@db.example.com/app" }, "properties.k", "pw9@db.example.com"],
  // links
  [
    "URL with a query string",
    { landing: "https://example.com/pricing?utm_source=x&email=a" },
    "properties.landing",
    "utm_source"
  ],
  [
    "URL with fragment parameters",
    { k: "https://app.example.com/cb#access_token=abc" },
    "properties.k",
    "access_token=abc"
  ],
  ["Slack webhook", { k: "https://hooks.slack.com/services/T000/B000/XXXX" }, "properties.k", "hooks.slack.com"],
  ["Discord webhook", { k: "https://discord.com/api/webhooks/123/abc" }, "properties.k", "discord.com"],
  ["webhook path", { k: "https://api.example.com/webhook/in-1" }, "properties.k", "api.example.com"],
  [
    "webhook on a hooks host",
    { k: "https://hooks.example.com/services/T000/B000/XXXX" },
    "properties.k",
    "hooks.example.com"
  ],
  ["webhook host without a scheme", { k: "webhooks.example.net/in/abc" }, "properties.k", "webhooks.example.net"],
  [
    "Slack-form webhook path elsewhere",
    { k: "https://relay.example.org/services/T01ABC/B02DEF/x9Yz8WvU" },
    "properties.k",
    "relay.example.org"
  ],
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
  [
    "stack trace over 256 characters",
    { k: "Error: boom\n    at charge (billing.js:41:7)\n".repeat(8) },
    "properties.k",
    "billing.js:41:7"
  ],
  [
    "secret padded over 256 characters",
    { k: "sk_live_4eC39HqLyjWDarjtT1zdp7dc " + "x".repeat(300) },
    "properties.k",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
  ],
  // payment card numbers (Luhn-valid), with spaces or dashes, as strings or numbers
  ["Visa card", { k: "4111111111111111" }, "properties.k", "4111111111111111"],
  ["Visa card with spaces", { k: "4242 4242 4242 4242" }, "properties.k", "4242 4242 4242 4242"],
  ["Visa card with dashes", { k: "4012-8888-8888-1881" }, "properties.k", "4012-8888-8888-1881"],
  ["Mastercard", { k: "5555555555554444" }, "properties.k", "5555555555554444"],
  ["Mastercard 2-series", { k: "2223 0031 2200 3222" }, "properties.k", "2223 0031 2200 3222"],
  ["Amex", { k: "3782 822463 10005" }, "properties.k", "3782 822463 10005"],
  ["Discover", { k: "6011111111111117" }, "properties.k", "6011111111111117"],
  ["JCB", { k: "3530111333300000" }, "properties.k", "3530111333300000"],
  ["Diners", { k: "30569309025904" }, "properties.k", "30569309025904"],
  ["UnionPay", { k: "6200000000000005" }, "properties.k", "6200000000000005"],
  ["card in a phrase", { k: "paid with 5105105105105100" }, "properties.k", "5105105105105100"],
  ["card as a JSON number", { k: 4000056655665556 }, "properties.k", "4000056655665556"],
  [
    "card nested in an array",
    { items: [{ ref: "4111-1111-1111-1111" }] },
    "properties.items.0.ref",
    "4111-1111-1111-1111"
  ],
  // bank account numbers (IBAN with a valid checksum)
  ["IBAN DE", { k: "DE89370400440532013000" }, "properties.k", "DE89370400440532013000"],
  ["IBAN GB in groups", { k: "GB82 WEST 1234 5698 7654 32" }, "properties.k", "GB82 WEST 1234 5698 7654 32"],
  ["IBAN FR", { k: "FR1420041010050500013M02606" }, "properties.k", "FR1420041010050500013M02606"],
  ["IBAN NL", { k: "NL91ABNA0417164300" }, "properties.k", "NL91ABNA0417164300"],
  ["IBAN ES", { k: "ES9121000418450200051332" }, "properties.k", "ES9121000418450200051332"],
  ["IBAN IT", { k: "IT60X0542811101000000123456" }, "properties.k", "IT60X0542811101000000123456"],
  ["IBAN CH", { k: "CH9300762011623852957" }, "properties.k", "CH9300762011623852957"],
  ["IBAN BE", { k: "BE68539007547034" }, "properties.k", "BE68539007547034"],
  [
    "IBAN PL in a phrase",
    { k: "refund to PL61109010140000071219812874" },
    "properties.k",
    "PL61109010140000071219812874"
  ],
  [
    "IBAN AT nested",
    { payout: { target: "AT611904300234573201" } },
    "properties.payout.target",
    "AT611904300234573201"
  ],
  // IP addresses
  ["IPv4 private", { k: "10.0.0.1" }, "properties.k", "10.0.0.1"],
  ["IPv4 public", { k: "203.0.113.7" }, "properties.k", "203.0.113.7"],
  ["IPv4 in a phrase", { k: "from 8.8.4.4 today" }, "properties.k", "8.8.4.4"],
  ["IPv6 compressed", { k: "2001:db8::1" }, "properties.k", "2001:db8::1"],
  [
    "IPv6 full",
    { k: "2001:0db8:85a3:0000:0000:8a2e:0370:7334" },
    "properties.k",
    "2001:0db8:85a3:0000:0000:8a2e:0370:7334"
  ],
  ["IPv6 link-local with zone", { k: "fe80::1ff:fe23:4567:890a%eth0" }, "properties.k", "fe80::1ff:fe23:4567:890a"],
  ["IPv6 loopback", { k: "::1" }, "properties.k", "::1"],
  ["IPv4-mapped IPv6", { k: "::ffff:192.0.2.128" }, "properties.k", "::ffff:192.0.2.128"],
  ["ip key", { client_ip: "edge-7" }, "properties.client_ip", "edge-7"],
  // phone numbers
  ["phone FR international", { k: "+33 6 12 34 56 78" }, "properties.k", "+33 6 12 34 56 78"],
  ["phone DE international", { k: "+49 30 1234567" }, "properties.k", "+49 30 1234567"],
  ["phone US dashed", { k: "+1-555-123-4567" }, "properties.k", "+1-555-123-4567"],
  ["phone US dotted", { k: "555.123.4567" }, "properties.k", "555.123.4567"],
  ["phone FR national", { k: "06 12 34 56 78" }, "properties.k", "06 12 34 56 78"],
  ["phone IN international", { k: "+91 98765 43210" }, "properties.k", "+91 98765 43210"],
  ["phone UK mobile E.164", { k: "+447911123456" }, "properties.k", "+447911123456"],
  ["mobile key", { mobile: "ask-reception" }, "properties.mobile", "ask-reception"],
  // password-like keys, any casing or separator, and abbreviations
  ["userPassword", { userPassword: "val-aa1" }, "properties.userPassword", "val-aa1"],
  ["USER_PASSWORD", { USER_PASSWORD: "val-aa2" }, "properties.USER_PASSWORD", "val-aa2"],
  ["user-password", { "user-password": "val-aa3" }, "properties.user-password", "val-aa3"],
  ["User Password (spaced)", { "User Password": "val-aa4" }, "properties.User Password", "val-aa4"],
  ["PassWord", { PassWord: "val-aa5" }, "properties.PassWord", "val-aa5"],
  ["newPwd", { newPwd: "val-aa6" }, "properties.newPwd", "val-aa6"],
  ["db_pass", { db_pass: "val-aa7" }, "properties.db_pass", "val-aa7"],
  ["PIN", { PIN: "val-aa8" }, "properties.PIN", "val-aa8"],
  ["pin_code", { pin_code: "val-aa9" }, "properties.pin_code", "val-aa9"],
  ["passcode", { passcode: "val-ab1" }, "properties.passcode", "val-ab1"],
  ["confirm_password", { confirm_password: "val-ab2" }, "properties.confirm_password", "val-ab2"],
  ["oldPasswd", { oldPasswd: "val-ab3" }, "properties.oldPasswd", "val-ab3"],
  ["wifi-pass", { "wifi-pass": "val-ab4" }, "properties.wifi-pass", "val-ab4"],
  ["secretKey", { secretKey: "val-ab5" }, "properties.secretKey", "val-ab5"],
  ["API_KEY", { API_KEY: "val-ab6" }, "properties.API_KEY", "val-ab6"],
  ["x-auth-token", { "x-auth-token": "val-ab7" }, "properties.x-auth-token", "val-ab7"],
  ["sessionToken", { sessionToken: "val-ab8" }, "properties.sessionToken", "val-ab8"],
  ["csrf_token", { csrf_token: "val-ab9" }, "properties.csrf_token", "val-ab9"],
  ["otp", { otp: "val-ac1" }, "properties.otp", "val-ac1"],
  ["password nested in an array", { accounts: [{ pwd: "val-ac2" }] }, "properties.accounts.0.pwd", "val-ac2"],
  // provider token prefixes at any length
  ["short Stripe live key", { k: "sk_live_abc" }, "properties.k", "sk_live_abc"],
  ["short Stripe test key", { k: "sk_test_51" }, "properties.k", "sk_test_51"],
  ["short restricted key", { k: "rk_test_abc" }, "properties.k", "rk_test_abc"],
  ["short webhook secret", { k: "whsec_abc" }, "properties.k", "whsec_abc"],
  ["short GitHub token", { k: "ghp_abcd" }, "properties.k", "ghp_abcd"],
  [
    "GitHub OAuth token",
    { k: "gho_16C7e42F292c6912E7710c838347Ae178B4a" },
    "properties.k",
    "gho_16C7e42F292c6912E7710c838347Ae178B4a"
  ],
  ["GitHub fine-grained token", { k: "github_pat_11ABC" }, "properties.k", "github_pat_11ABC"],
  ["short Slack bot token", { k: "xoxb-1" }, "properties.k", "xoxb-1"],
  ["Slack user token", { k: "xoxp-123-456" }, "properties.k", "xoxp-123-456"],
  ["short AWS key", { k: "AKIAABCDEFGHIJKL" }, "properties.k", "AKIAABCDEFGHIJKL"],
  ["Google API key", { k: "AIzaSyA-1234567890abc" }, "properties.k", "AIzaSyA-1234567890abc"],
  ["JWT header alone", { k: "eyJhbGciOiJIUzI1NiJ9" }, "properties.k", "eyJhbGciOiJIUzI1NiJ9"],
  ["Bearer with a short token", { k: "Bearer abc123" }, "properties.k", "abc123"],
  ["GitLab token", { k: "glpat-abcdefgh12" }, "properties.k", "glpat-abcdefgh12"],
  ["Hugging Face token", { k: "hf_abcdefghijklmnopqrstu" }, "properties.k", "hf_abcdefghijklmnopqrstu"],
  ["Google OAuth token", { k: "ya29.a0AfH6SMBx" }, "properties.k", "ya29.a0AfH6SMBx"],
  ["secret value as a property name", { sk_live_abcdef: true }, `properties.${redactedKey}`, "sk_live_abcdef"],
  // high-entropy token-like strings
  [
    "base64 token",
    { k: "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg" },
    "properties.k",
    "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg"
  ],
  [
    "SHA-1 hex",
    { k: "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
    "properties.k",
    "da39a3ee5e6b4b0d3255bfef95601890afd80709"
  ],
  [
    "base64url token",
    { k: "q8Wz_3nR-Lp0Xy7Tb2Vc9Mk4Jd6Hf1Ga5Se8Ru" },
    "properties.k",
    "q8Wz_3nR-Lp0Xy7Tb2Vc9Mk4Jd6Hf1Ga5Se8Ru"
  ],
  // stack traces, multi-line or single-frame
  ["JavaScript frame", { k: "at foo (file.js:1:2)" }, "properties.k", "file.js:1:2"],
  [
    "Node frame with a path",
    { k: "at Object.<anonymous> (/app/index.js:10:15)" },
    "properties.k",
    "/app/index.js:10:15"
  ],
  ["Python frame", { k: 'File "x.py", line 3, in main' }, "properties.k", "x.py"],
  ["Python traceback header", { k: "Traceback (most recent call last):" }, "properties.k", "Traceback"],
  ["Java frame", { k: "at com.acme.Foo.bar(Foo.java:42)" }, "properties.k", "Foo.java:42"],
  [
    "Java trace multi-line",
    { k: "java.lang.NullPointerException\n\tat com.acme.Foo.bar(Foo.java:42)" },
    "properties.k",
    "NullPointerException"
  ],
  ["Go panic", { k: "goroutine 1 [running]:" }, "properties.k", "goroutine"],
  ["Ruby frame", { k: "app.rb:12:in `block in run'" }, "properties.k", "app.rb:12"],
  ["error with a line break", { k: "TypeError: x is undefined\nsomewhere" }, "properties.k", "TypeError"],
  ["two log lines", { k: "GET /a 200\nGET /b 500" }, "properties.k", "GET /b 500"],
  [
    "stack trace nested",
    { failure: { detail_code: "at run (worker.ts:7:3)" } },
    "properties.failure.detail_code",
    "worker.ts:7:3"
  ],
  // webhook and invite URLs, even without a query string
  ["Slack webhook without a scheme", { k: "hooks.slack.com/services/T0/B0/X1" }, "properties.k", "hooks.slack.com"],
  ["Discord app webhook", { k: "https://discordapp.com/api/webhooks/1/a" }, "properties.k", "discordapp.com"],
  ["Teams webhook", { k: "https://acme.webhook.office.com/webhookb2/abc" }, "properties.k", "acme.webhook.office.com"],
  ["Zapier webhook", { k: "https://hooks.zapier.com/hooks/catch/1/a" }, "properties.k", "hooks.zapier.com"],
  ["Discord invite", { k: "https://discord.gg/abc123" }, "properties.k", "discord.gg"],
  ["Discord invite without a scheme", { k: "discord.gg/xyz789" }, "properties.k", "xyz789"],
  ["WhatsApp group invite", { k: "https://chat.whatsapp.com/AbCdEf" }, "properties.k", "AbCdEf"],
  ["Telegram invite", { k: "https://t.me/joinchat/AAAA" }, "properties.k", "joinchat"],
  ["Slack shared invite", { k: "https://join.slack.com/t/acme/shared_invite/zt-1" }, "properties.k", "join.slack.com"],
  ["Zoom meeting link", { k: "https://zoom.us/j/123456789" }, "properties.k", "123456789"],
  ["join path", { k: "https://app.example.com/join/team-abc" }, "properties.k", "team-abc"],
  ["invite path without a scheme", { k: "www.example.com/invite/abc" }, "properties.k", "www.example.com"],
  ["accept-invite path", { k: "https://app.example.com/accept-invite/xyz" }, "properties.k", "accept-invite"],
  ["magic link path", { k: "https://app.example.com/magic-link/xyz" }, "properties.k", "magic-link"],
  ["Telegram bot URL", { k: "https://api.telegram.org/bot123:ABC/sendMessage" }, "properties.k", "api.telegram.org"],
  ["IFTTT webhook", { k: "https://maker.ifttt.com/trigger/e/with/key/abc" }, "properties.k", "maker.ifttt.com"],
  ["webhook.site", { k: "https://webhook.site/abc" }, "properties.k", "webhook.site"],
  // cookies and Authorization-like values
  ["Authorization header line", { k: "Authorization: Bearer x" }, "properties.k", "Authorization: Bearer"],
  ["Cookie header line", { k: "Cookie: sid=abc" }, "properties.k", "sid=abc"],
  ["PHP session cookie", { k: "PHPSESSID=abc123" }, "properties.k", "PHPSESSID"],
  ["Java session cookie", { k: "JSESSIONID=ABC" }, "properties.k", "JSESSIONID"],
  ["cookie with attributes", { k: "theme=x; Path=/; HttpOnly" }, "properties.k", "theme=x"],
  ["Set-Cookie header line", { k: "Set-Cookie: a=b" }, "properties.k", "Set-Cookie"],
  ["API key header line", { k: "x-api-key: abc" }, "properties.k", "x-api-key"],
  ["Digest credentials", { k: 'Digest username="u", realm="r"' }, "properties.k", "username"],
  ["AWS signature credentials", { k: "AWS4-HMAC-SHA256 Credential=AKID/2026" }, "properties.k", "AWS4-HMAC-SHA256"],
  ["Cookie key", { Cookie: "a=b" }, "properties.Cookie", "a=b"],
  ["set-cookie key", { "set-cookie": "a=b" }, "properties.set-cookie", "a=b"],
  ["authHeader key", { authHeader: "opaque-2" }, "properties.authHeader", "opaque-2"],
  // free text by key and by shape
  ["remarks", { remarks: "short one" }, "properties.remarks", "short one"],
  ["userComment", { userComment: "fine" }, "properties.userComment", "fine"],
  ["Support Message", { "Support Message": "help me" }, "properties.Support Message", "help me"],
  ["chatMessages", { chatMessages: ["hello there"] }, "properties.chatMessages", "hello there"],
  ["ai_summary", { ai_summary: "user upset" }, "properties.ai_summary", "user upset"],
  ["customerNotes", { customerNotes: "vip" }, "properties.customerNotes", "vip"],
  ["conversation", { conversation: "a: hi" }, "properties.conversation", "a: hi"],
  ["instructions", { instructions: "do it" }, "properties.instructions", "do it"],
  ["review_text", { review_text: "great" }, "properties.review_text", "great"],
  ["question", { question: "why so slow" }, "properties.question", "why so slow"],
  [
    "sentence by shape",
    { k: "I cannot find the export button anywhere, please help me" },
    "properties.k",
    "export button"
  ],
  [
    "request by shape",
    { k: "Please call me back tomorrow morning about the invoice issue" },
    "properties.k",
    "call me back"
  ],
  [
    "free text nested",
    { a: { b: "we are moving to a competitor because the price went up" } },
    "properties.a.b",
    "competitor"
  ],
  // unsafe names are never echoed
  ["card number as a property name", { "4111111111111111": 1 }, `properties.${redactedKey}`, "4111111111111111"],
  ["IP address as a property name", { "192.168.0.1": 2 }, `properties.${redactedKey}`, "192.168.0.1"],
  [
    "phone number as a nested property name",
    { by_contact: { "+15551234567": 1 } },
    `properties.by_contact.${redactedKey}`,
    "+15551234567"
  ]
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

/** [path, fields of the event besides a valid checkout, the offending text]: envelope strings outside properties. */
export const unsafeEnvelope: ReadonlyArray<readonly [string, Readonly<Record<string, unknown>>, string]> = [
  [
    "user.name",
    { user_id: "u_1", user: { name: "sk_live_4eC39HqLyjWDarjtT1zdp7dc" } },
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
  ],
  ["user.name", { user_id: "u_1", user: { name: "+15551234567" } }, "+15551234567"],
  ["user.name", { user_id: "u_1", user: { name: "4111 1111 1111 1111" } }, "4111 1111 1111 1111"],
  ["event_name", { event_name: "sk_live_abc123" }, "sk_live_abc123"],
  ["event_name", { event_name: "ghp_abcdef123" }, "ghp_abcdef123"],
  ["semantic_type", { semantic_type: "whsec_abc" }, "whsec_abc"],
  ["event_kind", { event_kind: "sk_test_abc" }, "sk_test_abc"],
  ["event_id", { event_id: "checkout_completed:4111111111111111" }, "4111111111111111"],
  ["account_id", { account_id: "DE89370400440532013000" }, "DE89370400440532013000"],
  ["account_id", { account_id: "2001:db8::1" }, "2001:db8::1"],
  ["user_id", { user_id: "10.0.0.1" }, "10.0.0.1"]
]

/** [label, properties]: values the screen must let through (its false-positive guards). */
export const safePayloads: ReadonlyArray<readonly [string, Json]> = [
  ["ISO timestamp", { at: "2026-11-21T09:30:00.000Z" }],
  ["ISO timestamp with offset", { at: "2026-11-21T09:30:00+01:00" }],
  ["date", { day: "2026-11-21" }],
  ["time of day", { at: "09:30:00" }],
  ["UUID", { id: "550e8400-e29b-41d4-a716-446655440000" }],
  ["uppercase UUID", { id: "550E8400-E29B-41D4-A716-446655440000" }],
  ["ULID", { id: "01HZX3K5Q8N7R2M4P6T9V1W3Y5" }],
  ["price", { price: "49.99" }],
  ["price with currency", { price: "EUR 49.99" }],
  ["price with a symbol", { price: "$1,299.00" }],
  ["price in cents", { amount_cents: 4999 }],
  ["currency code", { currency: "USD" }],
  ["plan name", { plan_label: "Pro" }],
  ["plan name with spaces", { plan_label: "Enterprise Annual" }],
  ["plan code", { plan: "pro_annual_2024" }],
  ["version", { version: "1.2.3" }],
  ["short version", { version: "v2" }],
  ["pre-release version", { version: "v10.4.1-beta.2" }],
  ["release candidate", { version: "2.0.0-rc.1" }],
  ["version range", { sdk: "^1.2.0" }],
  ["build number", { build: "10.0.19045.1234" }],
  ["checkout event id", { source_event: "checkout_completed:cs_test_a1b2c3" }],
  ["lower_snake code", { reason_code: "too_expensive" }],
  ["small count", { seat_count: 3 }],
  ["zero", { errors: 0 }],
  ["boolean", { is_in_trial: true }],
  ["null", { coupon: null }],
  ["region", { region: "eu-west-1" }],
  ["country code", { country: "DE" }],
  ["language tag", { locale: "en-US" }],
  ["time zone", { tz: "Europe/Berlin" }],
  ["duration", { period: "PT1H30M" }],
  ["percentage", { discount: "12.5%" }],
  ["size", { storage: "1.5 GB" }],
  ["subscription id", { subscription: "sub_1MowQVLkdIwHu7ixeRlqHVzs" }],
  ["invoice id", { invoice: "in_1MtHbELkdIwHu7ixl4OzzPMv" }],
  ["customer id", { customer: "cus_NffrFeUfNV2Hib" }],
  ["price id", { price_id: "price_1MoBy5LkdIwHu7ixZhnattbh" }],
  ["checkout session id", { checkout: "cs_live_a1J3sZzJ5x1yJ6eO7m0vQ9y3H9ZcXw2RkL0T1pY4nB8uV6dS2fE" }],
  ["short git sha", { commit: "9fceb02" }],
  ["epoch milliseconds as a string", { at_ms: "1732400000000" }],
  ["epoch milliseconds as a number", { at_ms: 1732400000000 }],
  ["epoch seconds", { at_s: 1732400000 }],
  ["large byte count", { bytes: 2500000000000 }],
  ["compact timestamp", { stamp: "20261121093000" }],
  ["ratio", { ratio: 0.25 }],
  ["URL without a query", { docs: "https://example.com/pricing" }],
  ["URL with a path", { docs: "https://docs.example.com/guide/setup" }],
  ["services page", { docs: "https://www.example.com/services/consulting" }],
  ["host that only starts with hook letters", { docs: "https://hookah.example.com/menu" }],
  ["app path", { screen: "/settings/billing" }],
  ["SKU", { sku: "SKU-12345" }],
  ["order number", { order: "ORD-2026-000123" }],
  ["invoice number", { invoice_number: "INV-0042" }],
  ["promo code", { promo: "SUMMER2026" }],
  ["media type", { format: "application/json" }],
  ["file name", { file: "report.pdf" }],
  ["short label", { label: "Upgrade to Pro for more seats" }],
  ["emoji", { badge: "🚀" }],
  ["non-Latin label", { size: "Größe M" }],
  ["color", { color: "#ff0000" }],
  ["feature key", { feature_key: "advanced_reports" }],
  ["described token count", { input_tokens: 1500 }],
  ["password flag", { password_set: true }],
  ["module name with colons", { module: "billing::invoices" }],
  ["ratio label", { aspect: "16:9" }],
  ["meter key", { metric_key: "api_requests" }]
]
