export * from './rag.module';
export * from './rag.service';
export * from './chunking';
export * from './rag.errors';
export { RagStore } from './rag.store';
export { loadDirectory, SUPPORTED_EXTENSIONS } from './loader';
export * from './rag.entities';
