// hack/test.sh's EXIT trap: node --import tsx test/support/kube/reap.ts [<run id>]
// Kills the test-plane processes of that run (whatever their owners) and of dead owners, and
// says what it killed on stderr. See reaper.ts.
import { describeReaped, reapTestPlane } from './reaper.js';

const run = process.argv[2] || undefined;
const reaped = await reapTestPlane({ run });
if (reaped.length > 0) process.stderr.write(`[test-plane] killed ${reaped.length} leftover processes: ${describeReaped(reaped)}\n`);
