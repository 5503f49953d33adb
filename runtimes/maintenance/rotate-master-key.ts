/**
 * `npm run rotate-master-key` (see `RotateMasterKey.ts` and the README's last sections).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { main } from "./RotateMasterKey.ts"

NodeRuntime.runMain(main, { disableErrorReporting: true, disablePrettyLogger: true })
