/**
 * The one error every storage port may fail with: the store could not be read or written.
 * Carries no statement parameters or row values (no raw values in errors).
 */
import * as Schema from "effect/Schema"

export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  operation: Schema.String,
  message: Schema.String
}) {}
