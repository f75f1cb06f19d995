// The skill content scan lives with the agent (services/agent/skills/scan.ts), which also scans
// what the agent writes itself (skill_manage); the operator scans GitOps Skills with it.
export { scanContent, type Finding } from '../../services/agent/skills/scan.js';
