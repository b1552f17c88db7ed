import { InitialSchema1764460800000 } from './1764460800000-initial-schema';

/** Every migration, in order. Listed explicitly so compiled and test builds load the same set. */
export const ALL_MIGRATIONS = [InitialSchema1764460800000];
