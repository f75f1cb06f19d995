// Error text from an MCP server or its transport may carry the credentials the Profile sent
// (a header echoed back, a token in a URL). Before such text reaches the model or a log, the
// header values we sent and credential-shaped strings are masked.

const MASK = '[REDACTED]';

const PATTERNS: RegExp[] = [
  /\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{6,}/gi,
  /([?&](?:access_token|token|api[_-]?key|key|secret|password|auth|sig|signature)=)[^&#\s"']+/gi,
  /(\/\/)[^/@\s:]+:[^/@\s]+@/g,
  /\b(sk|pk|rk|ghp|gho|ghs|ghu|github_pat|xox[abpr]|glpat|tvly)[-_][A-Za-z0-9_-]{8,}/g,
];

/** `text` with every value of `secrets` (at least 4 characters) and credential-shaped strings masked. */
export function redactCredentials(text: string, secrets: readonly string[] = []): string {
  let out = text;
  // "Bearer <token>": the token alone is masked too (a server may echo just that).
  const values = secrets.flatMap((v) => [v, v.replace(/^\S+\s+/, '')]);
  for (const s of [...new Set(values)].filter((v) => v.length >= 4).sort((a, b) => b.length - a.length)) out = out.split(s).join(MASK);
  out = out.replace(PATTERNS[0]!, (_m, scheme: string) => `${scheme} ${MASK}`);
  out = out.replace(PATTERNS[1]!, (_m, key: string) => `${key}${MASK}`);
  out = out.replace(PATTERNS[2]!, (_m, slashes: string) => `${slashes}${MASK}@`);
  return out.replace(PATTERNS[3]!, MASK);
}
