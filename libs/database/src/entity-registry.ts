import type { EntitySchema, MixedList } from 'typeorm';

type EntityClass = MixedList<string | EntitySchema | (new (...args: never[]) => unknown)>;

/**
 * Feature modules register the entities they own here (via DatabaseModule.forFeature) before the
 * DataSource is built, so libs/database never imports a feature lib.
 */
const registered = new Set<unknown>();

export function registerEntities(entities: readonly unknown[]): void {
  for (const entity of entities) registered.add(entity);
}

export function registeredEntities(): EntityClass {
  return [...registered] as EntityClass;
}
