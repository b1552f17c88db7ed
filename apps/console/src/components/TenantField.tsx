import { useOperator } from '../auth';

interface Props {
  value: string | undefined;
  onChange: (tenant: string | undefined) => void;
  /** Id prefix, for forms that appear together on one page. */
  id?: string;
}

/**
 * The tenant filter as the key allows it: free text (optional) for a global key, a choice among the key's
 * tenants for a key that serves several, and a fixed label for a key that serves one.
 */
export function TenantField({ value, onChange, id = 'filter-tenant' }: Props) {
  const { key } = useOperator();
  if (key.tenants === null) {
    return (
      <div className="field">
        <label htmlFor={id}>Tenant</label>
        <input
          id={id}
          value={value ?? ''}
          placeholder="all tenants"
          onChange={(event) => onChange(event.target.value.trim() || undefined)}
        />
      </div>
    );
  }
  if (key.tenants.length === 1) {
    return (
      <div className="field">
        <span className="label">Tenant</span>
        <span className="fixed-value">{value ?? key.tenants[0]}</span>
      </div>
    );
  }
  return (
    <div className="field">
      <label htmlFor={id}>Tenant</label>
      <select id={id} value={value ?? key.tenants[0]} onChange={(event) => onChange(event.target.value)}>
        {key.tenants.map((tenant) => (
          <option key={tenant} value={tenant}>
            {tenant}
          </option>
        ))}
      </select>
    </div>
  );
}
