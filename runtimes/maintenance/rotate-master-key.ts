/**
 * `npm run rotate-master-key` (see `RotateMasterKey.ts` and docs/guide-operations.md, "Rotating the master key").
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { main } from "./RotateMasterKey.ts"

NodeRuntime.runMain(main, { disableErrorReporting: true, disablePrettyLogger: true })
