// A fetched page as text the model can read: HTML through Mozilla's Readability (the main
// article, without navigation and chrome) and Turndown (Markdown), PDFs through unpdf (text per
// page), plain text, Markdown and JSON as they are. Anything else is refused with its type.
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';
import { extractText, getDocumentProxy } from 'unpdf';
import type { FetchedPage } from './fetch.js';

export interface PageText {
  title?: string;
  content: string;
  kind: 'html' | 'pdf' | 'text';
}

export class UnsupportedContent extends Error {
  override name = 'UnsupportedContent';
}

const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
turndown.remove(['script', 'style', 'noscript', 'iframe', 'svg', 'form']);

function charsetOf(contentType: string): string {
  return /charset="?([\w-]+)"?/i.exec(contentType)?.[1]?.toLowerCase() ?? 'utf-8';
}

function decode(page: FetchedPage): string {
  try {
    return new TextDecoder(charsetOf(page.contentType), { fatal: false }).decode(page.body);
  } catch {
    return new TextDecoder('utf-8').decode(page.body);
  }
}

/** Readability's article, or null when it finds none (or fails on odd markup). */
function readArticle(document: unknown): { title?: string | null; content?: string | null } | null {
  try {
    return new Readability(document as ConstructorParameters<typeof Readability>[0], { charThreshold: 200 }).parse();
  } catch {
    return null;
  }
}

/** The main content of an HTML page as Markdown; the whole body when Readability finds no article. */
export function htmlToMarkdown(html: string): { title?: string; markdown: string } {
  const { document } = parseHTML(html);
  const title = document.title?.trim() || undefined;
  const article = readArticle(document);
  const source = article?.content ?? parseHTML(html).document.body?.innerHTML ?? '';
  const markdown = turndown.turndown(source).replace(/\n{3,}/g, '\n\n').trim();
  const t = article?.title?.trim() || title;
  return { ...(t ? { title: t } : {}), markdown };
}

async function pdfToText(body: Buffer): Promise<string> {
  const pdf = await getDocumentProxy(new Uint8Array(body));
  const { text } = await extractText(pdf, { mergePages: false });
  return (Array.isArray(text) ? text : [text]).map((p, i) => `--- page ${i + 1} ---\n${p.trim()}`).join('\n\n');
}

const isPdf = (page: FetchedPage) => /application\/pdf/i.test(page.contentType) || page.body.subarray(0, 5).toString('latin1') === '%PDF-';

export async function pageText(page: FetchedPage): Promise<PageText> {
  const type = page.contentType.split(';')[0]!.trim().toLowerCase();
  if (isPdf(page)) {
    if (page.truncated) throw new UnsupportedContent('the PDF is larger than the download limit (HERMES_WEB_MAX_BYTES)');
    return { kind: 'pdf', content: await pdfToText(page.body) };
  }
  if (type === 'text/html' || type === 'application/xhtml+xml' || (!type && /^\s*</.test(decode(page)))) {
    const { title, markdown } = htmlToMarkdown(decode(page));
    return { kind: 'html', content: markdown, ...(title ? { title } : {}) };
  }
  if (type.startsWith('text/') || type === 'application/json' || type.endsWith('+json') || type === 'application/xml' || type.endsWith('+xml')) {
    return { kind: 'text', content: decode(page) };
  }
  throw new UnsupportedContent(`content of type "${type || 'unknown'}" cannot be read as text`);
}
