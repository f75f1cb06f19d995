// The `/ask` slash command, registered globally for the application (PUT-less: one POST, which
// Discord treats as an upsert by name): `POST /applications/{application id}/commands` with the
// bot token. Global commands may take a few minutes to appear in clients.
import type { DiscordRest } from './rest.js';

/** CHAT_INPUT command `/ask` with one required string option `prompt`; usable in guilds and DMs. */
export const askCommand = {
  name: 'ask',
  type: 1,
  description: 'Ask the agent something',
  options: [{ type: 3, name: 'prompt', description: 'What to ask', required: true, max_length: 6_000 }],
  contexts: [0, 1, 2],
  integration_types: [0],
} as const;

/** Creates (or updates) `/ask`; returns the command's id. */
export async function registerAskCommand(rest: DiscordRest, applicationId: string, signal?: AbortSignal): Promise<string> {
  const res = await rest.request<{ id: string }>('POST', `/applications/${encodeURIComponent(applicationId)}/commands`, { body: askCommand, ...(signal ? { signal } : {}) });
  return res.id;
}
