// The customer kit and the real server through a service outage, on PostgreSQL (DATABASE_URL).
import { suite } from "./outage.ts"

suite("postgres")
