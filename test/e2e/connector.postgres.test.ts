// The connector end to end on PostgreSQL (DATABASE_URL).
import { suite } from "./connector.ts"

suite("postgres")
