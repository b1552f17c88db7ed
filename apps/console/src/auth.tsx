import { createContext, useContext, type ReactNode } from 'react';
import type { AdminClient, AdminKey } from './api/client';

/**
 * The admin key lives in sessionStorage: it survives a reload of the tab but not closing it, and no other tab
 * or later visit sees it. It is only ever sent as `Authorization: Bearer`.
 */
const STORAGE_KEY = 'agent-runtime.console.admin-key';

export const keyStorage = {
  read: (): string | null => sessionStorage.getItem(STORAGE_KEY),
  write: (key: string): void => sessionStorage.setItem(STORAGE_KEY, key),
  clear: (): void => sessionStorage.removeItem(STORAGE_KEY),
};

export interface Operator {
  client: AdminClient;
  /** What the key may see, from GET /v1/admin/me. */
  key: AdminKey;
  signOut: () => void;
}

const OperatorContext = createContext<Operator | null>(null);

export function OperatorProvider({ value, children }: { value: Operator; children: ReactNode }) {
  return <OperatorContext.Provider value={value}>{children}</OperatorContext.Provider>;
}

/** The signed-in operator; the views are rendered only after sign-in, so it is always there. */
export function useOperator(): Operator {
  const operator = useContext(OperatorContext);
  if (!operator) throw new Error('useOperator outside OperatorProvider');
  return operator;
}
