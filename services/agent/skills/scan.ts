// An injection scan of skill content, after Hermes' context-file scanner: instructions to ignore
// the system prompt, hidden HTML comments, reads of secret files, exfiltration with curl/wget,
// and invisible or bidirectional Unicode. Findings name the file and the pattern, never quote
// more than a short excerpt.

interface Pattern { id: string; re: RegExp; what: string }

const patterns: Pattern[] = [
  { id: 'ignore-instructions', re: /\b(ignore|disregard|forget)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|system)\b[^.\n]{0,20}\b(instructions|prompts?|rules|messages)\b/i, what: 'asks to ignore earlier instructions' },
  { id: 'role-override', re: /\byou are now\b|\bnew system prompt\b|\bact as (the )?system\b/i, what: 'tries to replace the agent\'s role' },
  { id: 'hidden-comment', re: /<!--[\s\S]{0,2000}?\b(ignore|instruction|system|secret|token|password|curl|exfiltrat)[\s\S]{0,2000}?-->/i, what: 'hides instructions in an HTML comment' },
  { id: 'secret-file-read', re: /\b(cat|less|head|tail|cp|scp|base64)\s+[^\n]{0,40}(~\/\.ssh|\/etc\/shadow|\.env\b|\.aws\/credentials|\.kube\/config|id_rsa|\.netrc)/i, what: 'reads a secret file' },
  { id: 'exfiltration', re: /\b(curl|wget|nc|ncat)\b[^\n]{0,120}(\$\{?[A-Z_]*(KEY|TOKEN|SECRET|PASSWORD)[A-Z_]*\}?|--data[^\n]{0,40}(env|printenv|\/etc\/passwd))/i, what: 'sends secrets to a remote host' },
  { id: 'pipe-to-shell', re: /\b(curl|wget)\b[^\n|]{0,200}\|\s*(sudo\s+)?(ba|z)?sh\b/i, what: 'pipes a download into a shell' },
  { id: 'invisible-unicode', re: /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/, what: 'contains invisible or bidirectional Unicode characters' },
];

export interface Finding { file: string; id: string; message: string }

/** Scans each named text; returns one finding per (file, pattern). */
export function scanContent(texts: { file: string; text: string }[]): Finding[] {
  const out: Finding[] = [];
  for (const { file, text } of texts) {
    for (const p of patterns) {
      const m = p.re.exec(text);
      if (m) out.push({ file, id: p.id, message: `${file}: ${p.what} (${p.id}${p.id === 'invisible-unicode' ? '' : `: "${m[0].slice(0, 60).replace(/\s+/g, ' ')}"`})` });
    }
  }
  return out;
}
