// Microsoft Teams: Bot Framework activities inbound (JWT against the OpenID metadata) and the
// connector REST API outbound (client-credentials token).
import type { PlatformSettings } from '../adapter.js';

export { BotFrameworkKeys, TEAMS_CLOCK_SKEW_SECONDS, hasBearerToken, verifyTeamsToken, type TeamsClaims, type TeamsVerified } from './auth.js';
export { activityTenant, checkActivityClaims, normaliseTeams, parseTeamsActivity, type TeamsActivity, type TeamsTarget } from './activity.js';
export {
  TEAMS_DEFAULT_TENANT, TEAMS_MAX_MESSAGE_CHARS, TEAMS_SCOPE, TeamsSender, TeamsTokens, retryAfterSeconds, teamsTargetSchema, type TeamsCredentials,
} from './send.js';

/** Secret keys read from the platform's `credentials.secretRef` (in `hermes dev`: the variables of the same names). */
export const TEAMS_KEYS = { appId: 'TEAMS_APP_ID', password: 'TEAMS_APP_PASSWORD', tenantId: 'TEAMS_TENANT_ID' } as const;

/** The one connector every reply goes to, when configured: the agent's `apiUrl`, else the install's (may be unset: the activity's serviceUrl). */
export const teamsApiUrl = (settings: PlatformSettings, installDefault: string | undefined) => settings.apiUrl ?? installDefault;
