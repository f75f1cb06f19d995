// The text of a reply as Slack shows it (chat.postMessage / chat.update `text`, read as mrkdwn).
// Models write Markdown; Slack's mrkdwn differs (`*bold*`, `~strike~`, `<url|label>`, no headings),
// so **bold** and [label](url) reached Slack users as literal asterisks and brackets. Here:
//   - `&`, `<` and `>` are escaped everywhere, as Slack asks: `<!channel>`, `<!here>`, `<@U…>` or
//     `<https://…|label>` in the text are shown as written and notify nobody (Discord's replies do the
//     same with allowed_mentions: none);
//   - outside code: **x** and __x__ → *x*, ~~x~~ → ~x~, [label](https://…) → <https://…|label>,
//     a `# heading` line → *heading*;
//   - code blocks and inline code are kept as written (escaped only), since Slack renders them as code.

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Markdown prose (no code) → mrkdwn, escaped. */
function prose(s: string): string {
  return escape(s)
    .replace(/^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/gm, (_m, heading: string) => `*${heading.replace(/\*\*|__/g, '')}*`)
    .replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g, (_m, label: string, url: string) => `<${url}|${label.replace(/\|/g, '¦')}>`)
    .replace(/\*\*(?=\S)([^*\n]+?)(?<=\S)\*\*/g, '*$1*')
    .replace(/(?<![\w_])__(?=\S)([^_\n]+?)(?<=\S)__(?![\w_])/g, '*$1*')
    .replace(/~~(?=\S)([^~\n]+?)(?<=\S)~~/g, '~$1~');
}

/** A reply's text as sent to Slack: Markdown written as mrkdwn, Slack's markup characters escaped. */
export function slackText(text: string): string {
  // Odd indexes are code: a fenced block or an inline code span.
  return text.split(/(```[\s\S]*?```|`[^`\n]+`)/g).map((part, i) => (i % 2 === 1 ? escape(part) : prose(part))).join('');
}
