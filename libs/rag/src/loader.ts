import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, extname, join, relative, sep } from 'node:path';
import { parse, stringify } from 'yaml';
import { RagIngestError } from './rag.errors';

export const SUPPORTED_EXTENSIONS = ['.md', '.markdown', '.txt', '.json', '.yaml', '.yml'] as const;

export interface LoadedDocument {
  /** Path relative to the ingested directory, with forward slashes: the document's identity in a namespace. */
  source: string;
  title: string;
  text: string;
  contentHash: string;
  format: 'markdown' | 'text' | 'json' | 'yaml';
}

/** Every supported file under `dir` (recursively, hidden entries skipped), sorted by path. */
export function loadDirectory(dir: string): LoadedDocument[] {
  if (!existsSync(dir)) throw new RagIngestError('RAG_DIRECTORY_NOT_FOUND', `directory not found: ${dir}`);
  if (!statSync(dir).isDirectory()) {
    throw new RagIngestError('RAG_NOT_A_DIRECTORY', `not a directory: ${dir}`);
  }
  return listFiles(dir)
    .sort()
    .map((file) => loadFile(file, relative(dir, file).split(sep).join('/')));
}

function listFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...listFiles(full));
    else if (
      entry.isFile() &&
      (SUPPORTED_EXTENSIONS as readonly string[]).includes(extname(entry.name).toLowerCase())
    ) {
      files.push(full);
    }
  }
  return files;
}

export function loadFile(path: string, source: string): LoadedDocument {
  const raw = readFileSync(path, 'utf8');
  const extension = extname(path).toLowerCase();
  const fallbackTitle = basename(path, extname(path)).replace(/[-_]+/g, ' ');
  let format: LoadedDocument['format'];
  let text: string;
  let title: string;
  if (extension === '.json' || extension === '.yaml' || extension === '.yml') {
    format = extension === '.json' ? 'json' : 'yaml';
    // Structured files are indexed as readable YAML text, so keys and values are both searchable.
    let value: unknown;
    try {
      value = format === 'json' ? JSON.parse(raw) : parse(raw);
    } catch (error) {
      throw new RagIngestError(
        'RAG_INVALID_DOCUMENT',
        `cannot parse ${path}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    text = typeof value === 'string' ? value : stringify(value).trim();
    const declared = value && typeof value === 'object' ? (value as { title?: unknown }).title : undefined;
    title = typeof declared === 'string' && declared.trim() !== '' ? declared.trim() : fallbackTitle;
  } else {
    format = extension === '.txt' ? 'text' : 'markdown';
    text = raw;
    const heading = format === 'markdown' ? /^#\s+(.+)$/m.exec(raw) : null;
    title = heading ? heading[1].trim() : fallbackTitle;
  }
  return { source, title, text, format, contentHash: createHash('sha256').update(raw).digest('hex') };
}
