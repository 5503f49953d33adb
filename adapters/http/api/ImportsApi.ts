/**
 * Bulk import of the Direct API: `PUT /api/events/imports/{importId}` takes newline-delimited JSON
 * (one event per line, gzip accepted), streamed into the import job `importId`;
 * `GET /api/events/imports/{importId}` reads the job's committed progress while it runs. An
 * `ingest` key, as for `POST /api/events/ingest`. Served by `routes/Imports.ts`; bodies are the
 * Direct API's snake_case.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { ApiKey, declaring, notFound, problem, queryParam, Timestamp } from "./Common.ts"

/** The import id path parameter: chosen by the client, so that sending the file again resumes it. */
export const ImportId = Schema.String.annotations({
  description:
    "the import's id, chosen by the client (1-128 of A-Z a-z 0-9 . _ : -); the same id resumes the same import",
  examples: ["history-2024.ndjson"]
})

/** An import job as answered. */
export const ImportStatus = Schema.Struct({
  import_id: Schema.String,
  state: Schema.Literal("running", "completed", "failed").annotations({
    description:
      "running: taking lines (or waiting for the next part); completed: the last part was read; failed: stopped (send again to resume)"
  }),
  lines_committed: Schema.Number.annotations({
    description: "lines of the file whose outcome is stored: the point a resumed upload continues from"
  }),
  bytes_committed: Schema.Number.annotations({ description: "uncompressed bytes of those lines" }),
  accepted: Schema.Number,
  duplicates: Schema.Number.annotations({
    description: "events whose event_id was already stored (nothing stored twice)"
  }),
  refused: Schema.Number,
  errors: Schema.Array(
    Schema.Struct({
      line: Schema.Number.annotations({ description: "1-based line number in the file" }),
      code: Schema.String.annotations({
        description:
          "the ingest route's code: invalid_event, unsafe_property, not_revenue_relevant, batch_not_accepted, malformed_json, duplicate_key, unstorable_text, content_too_large, event_id_conflict, unit_changed"
      }),
      path: Schema.optional(Schema.String)
    })
  ).annotations({ description: "the first 100 refused lines (never their content)" }),
  failure: Schema.NullOr(Schema.String).annotations({ description: "why a failed import stopped" }),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({
  examples: [
    {
      import_id: "history-2024.ndjson",
      state: "completed" as const,
      lines_committed: 3,
      bytes_committed: 402,
      accepted: 1,
      duplicates: 1,
      refused: 1,
      errors: [{ line: 2, code: "unsafe_property", path: "properties.email" }],
      failure: null,
      created_at: "2026-11-22T10:15:30.000Z",
      updated_at: "2026-11-22T10:15:31.000Z"
    }
  ]
})

const keyProblems = [
  problem(401, ["unauthorized"], "a valid API key is required (Authorization: Bearer)", {
    description: "No key, or an unknown or revoked key"
  }),
  problem(403, ["forbidden"], "this route needs a key with scope ingest", {
    description: "A key without the ingest scope"
  }),
  problem(400, ["invalid_path"], "the import id must be 1-128 of A-Z a-z 0-9 . _ : -", {
    description: "An import id outside the allowed characters"
  })
] as const

export const putImport = HttpApiEndpoint.put("putImport", "/api/events/imports/:importId")
  .setPath(Schema.Struct({ importId: ImportId }))
  .setUrlParams(
    Schema.Struct({
      from_line: queryParam(
        Schema.String.annotations({
          description:
            "how many lines of the file precede this body (default 0); at most the import's lines_committed, whose lines in the body are skipped"
        })
      ),
      last: queryParam(
        Schema.Literal("true", "false").annotations({
          description: "whether this body ends the file (default true): the import is then completed"
        })
      )
    })
  )
  .addSuccess(ImportStatus.annotations({ description: "Every line of the body read and its outcome committed" }), {
    status: 202
  })
  .addError(keyProblems[0])
  .addError(keyProblems[1])
  .addError(keyProblems[2])
  .addError(
    problem(400, ["unreadable_body", "invalid_query"], "the request body could not be read", {
      description:
        "A body that broke off or did not decompress (what was committed stays: send it again to resume), or an invalid from_line or last"
    })
  )
  .addError(
    problem(
      413,
      ["content_too_large"],
      "the uncompressed request body exceeds ACCORD_IMPORT_MAX_BYTES (1073741824 by default)",
      {
        description: "An uncompressed body over ACCORD_IMPORT_MAX_BYTES (what was committed stays)"
      }
    )
  )
  .addError(
    problem(
      415,
      ["unsupported_media_type"],
      "the request body must be application/x-ndjson, gzip or identity encoded",
      {
        description: "A body that is not newline-delimited JSON, or an encoding other than gzip"
      }
    )
  )
  .pipe(declaring("ImportOffsetConflict", "StorageError"))
  .annotate(OpenApi.Summary, "Import events in bulk (NDJSON, resumable)")

export const getImport = HttpApiEndpoint.get("getImport", "/api/events/imports/:importId")
  .setPath(Schema.Struct({ importId: ImportId }))
  .addSuccess(ImportStatus.annotations({ description: "The import's committed progress" }))
  .addError(keyProblems[0])
  .addError(keyProblems[1])
  .addError(keyProblems[2])
  .addError(notFound("import"))
  .pipe(declaring("StorageError"))
  .annotate(OpenApi.Summary, "Read an import's progress")

export const group = HttpApiGroup.make("imports")
  .add(putImport)
  .add(getImport)
  .middleware(ApiKey)
  .annotate(OpenApi.Title, "Direct API bulk import")
  .annotate(
    OpenApi.Description,
    "Historical events in bulk, with an ingest key: one NDJSON upload per import (or its parts), each line checked by the ingest route's rules, written in batches, idempotent by event_id, resumable."
  )
