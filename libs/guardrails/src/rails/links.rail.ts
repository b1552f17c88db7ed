import { z } from 'zod';
import { RailAction, RailEvaluation } from '../rail.types';
import { defineRail } from './rail-definition';

/** A link or image of an answer, where it is in the text and what replaces it when its host is not allowed. */
export interface AnswerLink {
  kind: 'image' | 'link' | 'url';
  url: string;
  start: number;
  end: number;
  /** What stays of it when it goes: a link's label, nothing of an image, a marker for a bare URL. */
  replacement: string;
}

const LINK_FORMS: readonly {
  kind: AnswerLink['kind'];
  pattern: RegExp;
  keep: (m: RegExpMatchArray) => string;
}[] = [
  // markdown image ![alt](url "title") and reference-free autolinked images in HTML
  { kind: 'image', pattern: /!\[[^\]\n]*\]\(\s*<?([^)\s>]+)[^)]*\)/g, keep: () => '' },
  { kind: 'image', pattern: /<img\b[^>]*?\bsrc\s*=\s*["']?([^"'\s>]+)[^>]*>/gi, keep: () => '' },
  { kind: 'link', pattern: /\[([^\]\n]*)\]\(\s*<?([^)\s>]+)[^)]*\)/g, keep: (m) => m[1] },
  { kind: 'link', pattern: /<a\b[^>]*?\bhref\s*=\s*["']?([^"'\s>]+)[^>]*>([^<]*)<\/a>/gi, keep: (m) => m[2] },
  {
    kind: 'url',
    pattern: /\b(?:https?:\/\/|www\.)[^\s<>()"'`\]]+[^\s<>()"'`\].,;:!?]/gi,
    keep: () => '[link removed]',
  },
];

/** Every link and image of the answer, never overlapping, in text order. */
export function answerLinks(text: string): AnswerLink[] {
  const found: AnswerLink[] = [];
  const overlaps = (start: number, end: number) => found.some((l) => start < l.end && end > l.start);
  for (const form of LINK_FORMS) {
    for (const match of text.matchAll(form.pattern)) {
      const start = match.index ?? 0;
      const end = start + match[0].length;
      if (overlaps(start, end)) continue;
      const url = form.kind === 'link' && match[0].startsWith('[') ? match[2] : (match[1] ?? match[0]);
      found.push({ kind: form.kind, url, start, end, replacement: form.keep(match) });
    }
  }
  return found.sort((a, b) => a.start - b.start);
}

/** The host a link points to (IDN hosts as punycode, so look-alike letters never pass for a listed host). */
function hostOf(url: string): string | null {
  try {
    const parsed = new URL(/^www\./i.test(url) ? `https://${url}` : url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.hostname.toLowerCase() : null;
  } catch {
    return null;
  }
}

/** A host is allowed when it is a listed host or one of its subdomains. */
function isAllowed(host: string | null, allowed: readonly string[]): boolean {
  return host !== null && allowed.some((entry) => host === entry || host.endsWith(`.${entry}`));
}

export interface LinkPolicy {
  allowedHosts: readonly string[];
  /** `block`: every image goes (an image is fetched when shown: a query string can carry data out). */
  images: 'block' | 'allowed_hosts';
}

/**
 * The links and images an answer may not carry: those to hosts off the allow-list (any other scheme too:
 * `javascript:`, `data:`), and every image unless images may come from the allowed hosts. Pure over the text, so
 * it can run over a sliding window of a streamed answer.
 */
export function unlistedLinks(text: string, policy: LinkPolicy): AnswerLink[] {
  return answerLinks(text).filter(
    (link) =>
      (link.kind === 'image' && policy.images === 'block') ||
      !isAllowed(hostOf(link.url), policy.allowedHosts),
  );
}

/** The answer without its unlisted links: a link keeps its label, an image goes, a bare URL leaves a marker. */
export function withoutLinks(text: string, links: readonly AnswerLink[]): string {
  let out = '';
  let cursor = 0;
  for (const link of links) {
    out += text.slice(cursor, link.start) + link.replacement;
    cursor = link.end;
  }
  return out + text.slice(cursor);
}

const host = z
  .string()
  .trim()
  .toLowerCase()
  .regex(
    /^(?:[a-z0-9-]+\.)+[a-z0-9-]+$/,
    'expected a host name (example.com); its subdomains are allowed too',
  );

/** LINK_OUT: links and images of an answer to hosts off the tenant's allow-list are removed (sanitize). */
export const linksRail = defineRail({
  code: 'LINK_OUT',
  stages: ['output'],
  params: z
    .object({
      /** Hosts (and their subdomains) every tenant's answers may link to. */
      allowed_hosts: z.array(host).default([]),
      /** `block` removes every image; `allowed_hosts` keeps images from the allowed hosts. */
      images: z.enum(['block', 'allowed_hosts']).default('block'),
      /** More hosts per tenant_id. */
      tenants: z
        .record(
          z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
          z.object({ allowed_hosts: z.array(host) }).strict(),
        )
        .default({}),
    })
    .strict(),
  usesLlm: () => false,
  create: (params) => ({
    code: 'LINK_OUT',
    evaluate: ({ text, state }): Promise<RailEvaluation> => {
      const tenant =
        state.tenant_id && Object.hasOwn(params.tenants, state.tenant_id) ? state.tenant_id : null;
      const policy: LinkPolicy = {
        allowedHosts: [...params.allowed_hosts, ...(tenant ? params.tenants[tenant].allowed_hosts : [])],
        images: params.images,
      };
      const unlisted = unlistedLinks(text, policy);
      if (unlisted.length === 0) {
        return Promise.resolve({ action: RailAction.ALLOW, reason: 'no unlisted link', metadata: {} });
      }
      return Promise.resolve({
        action: RailAction.SANITIZE,
        reason: `removed ${unlisted.length} link(s) or image(s) to hosts off the allow-list`,
        sanitize: (current) => withoutLinks(current, unlistedLinks(current, policy)),
        metadata: {
          kinds: [...new Set(unlisted.map((l) => l.kind))],
          hosts: [...new Set(unlisted.map((l) => hostOf(l.url) ?? l.url.slice(0, 40)))],
        },
      });
    },
  }),
});
