import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import { REPO_ROOT } from './repo-root';

/** A private copy of config/ whose product_agent reads a knowledge namespace of its own. */
export interface KnowledgeConfig {
  configDir: string;
  namespace: string;
  /** The namespace's documents: the shipped product knowledge, which a test may add to. */
  knowledgeDir: string;
  /** Deletes what the app ingested into the namespace, then the copy. */
  remove(dataSource: DataSource | undefined): Promise<void>;
}

/**
 * A private copy of config/ whose product_agent reads the shipped product documents under a namespace of its own
 * (`<prefix>_<unique>`), so test files running side by side never share ingested rows.
 */
export function productKnowledgeConfig(prefix: string): KnowledgeConfig {
  const namespace = `${prefix}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const configDir = mkdtempSync(join(tmpdir(), `${prefix}-config-`));
  cpSync(join(REPO_ROOT, 'config'), configDir, { recursive: true });
  const agentsPath = join(configDir, 'agents.yaml');
  writeFileSync(
    agentsPath,
    readFileSync(agentsPath, 'utf8').replace('rag_namespace: product', `rag_namespace: ${namespace}`),
  );
  const knowledgeDir = join(configDir, 'knowledge', namespace);
  renameSync(join(configDir, 'knowledge', 'product'), knowledgeDir);
  return {
    configDir,
    namespace,
    knowledgeDir,
    remove: async (dataSource) => {
      await dataSource
        ?.query('DELETE FROM rag_documents WHERE namespace = $1', [namespace])
        .catch(() => undefined);
      rmSync(configDir, { recursive: true, force: true });
    },
  };
}
