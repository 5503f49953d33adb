// Bulk import over HTTP against the real server on PostgreSQL (DATABASE_URL).
import { suite } from "./imports.ts"

suite("postgres")
