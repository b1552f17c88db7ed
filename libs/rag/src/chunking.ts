import { RagIngestError } from './rag.errors';

export interface ChunkingOptions {
  chunkSize: number;
  chunkOverlap: number;
}

/** chunk_overlap must be smaller than chunk_size (the reference's ValueError), both positive integers. */
export function validateChunking({ chunkSize, chunkOverlap }: ChunkingOptions): void {
  if (!Number.isInteger(chunkSize) || chunkSize <= 0) {
    throw new RagIngestError(
      'RAG_INVALID_CHUNKING',
      `chunk_size must be a positive integer, got ${chunkSize}`,
    );
  }
  if (!Number.isInteger(chunkOverlap) || chunkOverlap < 0) {
    throw new RagIngestError(
      'RAG_INVALID_CHUNKING',
      `chunk_overlap must be a non-negative integer, got ${chunkOverlap}`,
    );
  }
  if (chunkOverlap >= chunkSize) {
    throw new RagIngestError(
      'RAG_INVALID_CHUNKING',
      `chunk_overlap (${chunkOverlap}) must be smaller than chunk_size (${chunkSize})`,
    );
  }
}

/**
 * Character chunks of at most `chunkSize`, each starting `chunkOverlap` characters before the previous one
 * ended. A cut prefers a paragraph break, then a sentence or line end, then a space, in the second half of
 * the window, so chunks rarely split a word.
 */
export function chunkText(text: string, options: ChunkingOptions): string[] {
  validateChunking(options);
  const { chunkSize, chunkOverlap } = options;
  const normalized = text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  const chunks: string[] = [];
  let start = 0;
  while (start < normalized.length) {
    let end = Math.min(start + chunkSize, normalized.length);
    if (end < normalized.length) end = breakPoint(normalized, start, end);
    const chunk = normalized.slice(start, end).trim();
    if (chunk !== '') chunks.push(chunk);
    if (end >= normalized.length) break;
    let next = Math.max(end - chunkOverlap, start + 1);
    // Start the overlap at a word boundary, unless that would skip past the cut.
    if (next > 0 && /\S/.test(normalized[next - 1]) && /\S/.test(normalized[next])) {
      const space = normalized.slice(next, end).search(/\s/);
      if (space !== -1) next += space + 1;
    }
    start = next;
  }
  return chunks;
}

function breakPoint(text: string, start: number, end: number): number {
  const window = text.slice(start, end);
  const minimum = Math.floor(window.length / 2);
  for (const separator of [/\n\n/g, /[.!?]\s|\n/g, /\s/g]) {
    let last = -1;
    for (const match of window.matchAll(separator)) {
      if (match.index >= minimum) last = match.index + match[0].length;
    }
    if (last > 0) return start + last;
  }
  return end;
}
