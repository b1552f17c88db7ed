import { Pool, PoolClient } from 'pg';
import { DELIVERIES, INVOICES, LINES, ORDERS, PAYMENTS, PLANS, SERVICES } from './seed';

/** A tool's answer: data, or a business error the model can explain to the customer. */
export type ToolOutcome =
  | { ok: true; data: Record<string, unknown> }
  | { ok: false; code: string; message: string; details?: Record<string, unknown> };

export interface ExecutionRecord {
  outcome: ToolOutcome;
  replayed: boolean;
}

/** Order statuses a customer may still cancel. */
const CANCELLABLE = new Set(['processing', 'awaiting_payment']);

/**
 * The reference server's data, in its own Postgres schema. Every transactional tool runs in one database
 * transaction together with its idempotency record, so a repeated idempotency_key returns the first
 * outcome and never acts twice, also when two calls race.
 */
export class ReferenceStore {
  constructor(
    private readonly pool: Pool,
    readonly schema: string,
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name "${schema}"`);
  }

  private t(table: string): string {
    return `"${this.schema}".${table}`;
  }

  /** Creates the schema and tables and inserts the seed rows that are missing; `reset` starts from scratch. */
  async setUp(reset: boolean): Promise<void> {
    const client = await this.pool.connect();
    try {
      // Two servers starting on one database must not race on CREATE TABLE.
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [`reference_mcp:${this.schema}`]);
      try {
        if (reset) await client.query(`DROP SCHEMA IF EXISTS "${this.schema}" CASCADE`);
        await client.query(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`);
        for (const ddl of this.ddl()) await client.query(ddl);
        await this.seed(client);
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [`reference_mcp:${this.schema}`]);
      }
    } finally {
      client.release();
    }
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  private ddl(): string[] {
    return [
      `CREATE TABLE IF NOT EXISTS ${this.t('plans')} (
        plan_id text PRIMARY KEY, name text NOT NULL, monthly_fee numeric(10,2) NOT NULL,
        data_gb integer NOT NULL, voice text NOT NULL, roaming boolean NOT NULL, benefits jsonb NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${this.t('lines')} (
        msisdn text PRIMARY KEY, customer_name text NOT NULL, plan_id text NOT NULL REFERENCES ${this.t('plans')},
        asset_id text NOT NULL, status text NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${this.t('line_services')} (
        msisdn text NOT NULL REFERENCES ${this.t('lines')}, service_id text NOT NULL, name text NOT NULL,
        monthly_fee numeric(10,2) NOT NULL, status text NOT NULL, activated_at date NOT NULL,
        PRIMARY KEY (msisdn, service_id))`,
      `CREATE TABLE IF NOT EXISTS ${this.t('invoices')} (
        invoice_id text PRIMARY KEY, msisdn text NOT NULL REFERENCES ${this.t('lines')},
        reference_month text NOT NULL, amount numeric(10,2) NOT NULL, due_date date NOT NULL,
        status text NOT NULL, items jsonb NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${this.t('payments')} (
        payment_id text PRIMARY KEY, msisdn text NOT NULL REFERENCES ${this.t('lines')}, invoice_id text,
        amount numeric(10,2) NOT NULL, paid_at date NOT NULL, method text NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${this.t('orders')} (
        order_id text PRIMARY KEY, customer_id text NOT NULL, status text NOT NULL,
        total numeric(10,2) NOT NULL, items jsonb NOT NULL, created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(), cancelled_at timestamptz, cancel_reason text)`,
      `CREATE TABLE IF NOT EXISTS ${this.t('deliveries')} (
        order_id text PRIMARY KEY REFERENCES ${this.t('orders')}, carrier text NOT NULL, tracking_code text,
        status text NOT NULL, estimated_date date, last_event text NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${this.t('service_requests')} (
        request_id text PRIMARY KEY, order_id text NOT NULL REFERENCES ${this.t('orders')},
        kind text NOT NULL, reason text NOT NULL, status text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now())`,
      `CREATE SEQUENCE IF NOT EXISTS ${this.t('service_request_seq')} START 5001`,
      `CREATE TABLE IF NOT EXISTS ${this.t('tool_executions')} (
        idempotency_key text PRIMARY KEY, tool_name text NOT NULL, arguments jsonb NOT NULL,
        outcome jsonb, executed_at timestamptz NOT NULL DEFAULT now(), replays integer NOT NULL DEFAULT 0)`,
    ];
  }

  private async seed(client: PoolClient): Promise<void> {
    for (const p of PLANS) {
      await client.query(
        `INSERT INTO ${this.t('plans')} VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT DO NOTHING`,
        [p.plan_id, p.name, p.monthly_fee, p.data_gb, p.voice, p.roaming, JSON.stringify(p.benefits)],
      );
    }
    for (const l of LINES) {
      await client.query(`INSERT INTO ${this.t('lines')} VALUES ($1,$2,$3,$4,$5) ON CONFLICT DO NOTHING`, [
        l.msisdn,
        l.customer_name,
        l.plan_id,
        l.asset_id,
        l.status,
      ]);
    }
    for (const s of SERVICES) {
      await client.query(
        `INSERT INTO ${this.t('line_services')} VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT DO NOTHING`,
        [s.msisdn, s.service_id, s.name, s.monthly_fee, s.status, s.activated_at],
      );
    }
    for (const i of INVOICES) {
      await client.query(
        `INSERT INTO ${this.t('invoices')} VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT DO NOTHING`,
        [i.invoice_id, i.msisdn, i.reference_month, i.amount, i.due_date, i.status, JSON.stringify(i.items)],
      );
    }
    for (const p of PAYMENTS) {
      await client.query(
        `INSERT INTO ${this.t('payments')} VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT DO NOTHING`,
        [p.payment_id, p.msisdn, p.invoice_id, p.amount, p.paid_at, p.method],
      );
    }
    for (const o of ORDERS) {
      await client.query(
        `INSERT INTO ${this.t('orders')} (order_id, customer_id, status, total, items, created_at)
         VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT DO NOTHING`,
        [o.order_id, o.customer_id, o.status, o.total, JSON.stringify(o.items), o.created_at],
      );
    }
    for (const d of DELIVERIES) {
      await client.query(
        `INSERT INTO ${this.t('deliveries')} VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT DO NOTHING`,
        [d.order_id, d.carrier, d.tracking_code, d.status, d.estimated_date, d.last_event],
      );
    }
  }

  // ---- telecom (read-only) ----

  async invoice(msisdn: string, invoiceId: string | undefined): Promise<ToolOutcome> {
    const line = await this.line(msisdn);
    if (!line) return notFound('line', msisdn);
    const { rows } = await this.pool.query<Record<string, unknown>>(
      `SELECT invoice_id, reference_month, amount::float8 AS amount, to_char(due_date, 'YYYY-MM-DD') AS due_date,
              status, items
         FROM ${this.t('invoices')}
        WHERE msisdn = $1 AND ($2::text IS NULL OR invoice_id = $2)
        ORDER BY reference_month DESC LIMIT 1`,
      [line.msisdn, invoiceId ?? null],
    );
    if (rows.length === 0) return notFound('invoice', invoiceId ?? line.msisdn);
    return {
      ok: true,
      data: { msisdn: line.msisdn, customer_name: line.customer_name, currency: 'BRL', invoice: rows[0] },
    };
  }

  async payments(msisdn: string): Promise<ToolOutcome> {
    const line = await this.line(msisdn);
    if (!line) return notFound('line', msisdn);
    const { rows } = await this.pool.query<Record<string, unknown>>(
      `SELECT payment_id, invoice_id, amount::float8 AS amount, to_char(paid_at, 'YYYY-MM-DD') AS paid_at, method
         FROM ${this.t('payments')} WHERE msisdn = $1 ORDER BY paid_at DESC`,
      [line.msisdn],
    );
    return { ok: true, data: { msisdn: line.msisdn, currency: 'BRL', payments: rows } };
  }

  async plan(msisdn: string, assetId: string | undefined): Promise<ToolOutcome> {
    const line = await this.line(msisdn);
    if (!line || (assetId !== undefined && assetId !== line.asset_id)) {
      return notFound('line', assetId ?? msisdn);
    }
    const { rows } = await this.pool.query<Record<string, unknown>>(
      `SELECT plan_id, name, monthly_fee::float8 AS monthly_fee, data_gb, voice, roaming, benefits
         FROM ${this.t('plans')} WHERE plan_id = $1`,
      [line.plan_id],
    );
    return {
      ok: true,
      data: { msisdn: line.msisdn, asset_id: line.asset_id, currency: 'BRL', plan: rows[0] ?? null },
    };
  }

  async services(msisdn: string): Promise<ToolOutcome> {
    const line = await this.line(msisdn);
    if (!line) return notFound('line', msisdn);
    const { rows } = await this.pool.query<Record<string, unknown>>(
      `SELECT service_id, name, monthly_fee::float8 AS monthly_fee, status,
              to_char(activated_at, 'YYYY-MM-DD') AS activated_at
         FROM ${this.t('line_services')} WHERE msisdn = $1 ORDER BY service_id`,
      [line.msisdn],
    );
    return { ok: true, data: { msisdn: line.msisdn, currency: 'BRL', services: rows } };
  }

  private async line(
    msisdn: string,
  ): Promise<{ msisdn: string; customer_name: string; plan_id: string; asset_id: string } | null> {
    const { rows } = await this.pool.query<{
      msisdn: string;
      customer_name: string;
      plan_id: string;
      asset_id: string;
    }>(`SELECT msisdn, customer_name, plan_id, asset_id FROM ${this.t('lines')} WHERE msisdn = ANY($1)`, [
      msisdnCandidates(msisdn),
    ]);
    return rows[0] ?? null;
  }

  // ---- retail (read-only) ----

  async order(orderId: string, customerId: string | undefined): Promise<ToolOutcome> {
    const row = await this.orderRow(this.pool, orderId, false);
    if (!row || (customerId !== undefined && row.customer_id !== customerId)) {
      return notFound('order', orderId);
    }
    return { ok: true, data: { currency: 'BRL', order: row } };
  }

  async delivery(orderId: string): Promise<ToolOutcome> {
    const { rows } = await this.pool.query<Record<string, unknown>>(
      `SELECT order_id, carrier, tracking_code, status, to_char(estimated_date, 'YYYY-MM-DD') AS estimated_date,
              last_event
         FROM ${this.t('deliveries')} WHERE order_id = $1`,
      [normalizeOrderId(orderId)],
    );
    if (rows.length === 0) return notFound('order', orderId);
    return { ok: true, data: { delivery: rows[0] } };
  }

  /** Side-effect-free: whether cancelar_pedido would accept the order now. */
  async validateCancellation(orderId: string): Promise<ToolOutcome> {
    const row = await this.orderRow(this.pool, orderId, false);
    if (!row) {
      return {
        ok: true,
        data: {
          order_id: orderId,
          eligible: false,
          reason: 'order_not_found',
          message: 'Pedido não encontrado.',
        },
      };
    }
    const eligible = CANCELLABLE.has(String(row.status));
    return {
      ok: true,
      data: {
        order_id: row.order_id,
        status: row.status,
        eligible,
        reason: eligible ? 'order_not_dispatched' : `order_${String(row.status)}`,
        message: eligible
          ? 'O pedido ainda não foi despachado e pode ser cancelado.'
          : cancellationRefusal(String(row.status)),
        total: row.total,
      },
    };
  }

  // ---- retail (transactional) ----

  /**
   * Runs `work` once per idempotency key: a repeated key returns the stored outcome with `replayed: true`.
   * The claim row and the work share one transaction, so a concurrent duplicate waits for the first and
   * then reads its outcome.
   */
  async executeOnce(
    toolName: string,
    idempotencyKey: string | undefined,
    args: Record<string, unknown>,
    work: (client: PoolClient) => Promise<ToolOutcome>,
  ): Promise<ExecutionRecord> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      if (idempotencyKey !== undefined) {
        const claimed = await client.query(
          `INSERT INTO ${this.t('tool_executions')} (idempotency_key, tool_name, arguments)
           VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING idempotency_key`,
          [idempotencyKey, toolName, JSON.stringify(args)],
        );
        if (claimed.rowCount === 0) {
          const { rows } = await client.query<{ tool_name: string; outcome: ToolOutcome | null }>(
            `UPDATE ${this.t('tool_executions')} SET replays = replays + 1
              WHERE idempotency_key = $1 RETURNING tool_name, outcome`,
            [idempotencyKey],
          );
          await client.query('COMMIT');
          const stored = rows[0];
          if (stored.tool_name !== toolName) {
            return {
              outcome: {
                ok: false,
                code: 'idempotency_key_conflict',
                message: `idempotency_key was already used by ${stored.tool_name}`,
              },
              replayed: true,
            };
          }
          return {
            outcome: stored.outcome ?? { ok: false, code: 'in_progress', message: 'execution in progress' },
            replayed: true,
          };
        }
      }
      const outcome = await work(client);
      if (idempotencyKey !== undefined) {
        await client.query(
          `UPDATE ${this.t('tool_executions')} SET outcome = $2 WHERE idempotency_key = $1`,
          [idempotencyKey, JSON.stringify(outcome)],
        );
      }
      await client.query('COMMIT');
      return { outcome, replayed: false };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async cancelOrder(client: PoolClient, orderId: string, reason: string | undefined): Promise<ToolOutcome> {
    const row = await this.orderRow(client, orderId, true);
    if (!row) return notFound('order', orderId);
    const status = String(row.status);
    if (!CANCELLABLE.has(status)) {
      return {
        ok: false,
        code: 'not_cancellable',
        message: cancellationRefusal(status),
        details: { status },
      };
    }
    const { rows } = await client.query<{ cancelled_at: string }>(
      `UPDATE ${this.t('orders')} SET status = 'cancelled', cancelled_at = now(), updated_at = now(),
              cancel_reason = $2
        WHERE order_id = $1 RETURNING to_char(cancelled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS cancelled_at`,
      [row.order_id, reason ?? 'solicitado pelo cliente'],
    );
    await client.query(
      `UPDATE ${this.t('deliveries')} SET status = 'cancelled', last_event = 'Pedido cancelado' WHERE order_id = $1`,
      [row.order_id],
    );
    return {
      ok: true,
      data: {
        order_id: row.order_id,
        previous_status: status,
        status: 'cancelled',
        cancelled_at: rows[0].cancelled_at,
        refund: { amount: row.total, currency: 'BRL', method: 'estorno no meio de pagamento original' },
        protocol: `CAN-${String(row.order_id)}`,
      },
    };
  }

  async openServiceRequest(
    client: PoolClient,
    kind: 'exchange' | 'return',
    orderId: string,
    reason: string,
  ): Promise<ToolOutcome> {
    const row = await this.orderRow(client, orderId, true);
    if (!row) return notFound('order', orderId);
    if (row.status !== 'delivered') {
      return {
        ok: false,
        code: 'not_eligible',
        message: `${kind === 'exchange' ? 'Troca' : 'Devolução'} disponível apenas para pedidos entregues (status atual: ${String(row.status)}).`,
        details: { status: row.status },
      };
    }
    const open = await client.query(
      `SELECT request_id FROM ${this.t('service_requests')} WHERE order_id = $1 AND kind = $2 AND status = 'opened'`,
      [row.order_id, kind],
    );
    if ((open.rowCount ?? 0) > 0) {
      return {
        ok: false,
        code: 'already_open',
        message: `Já existe uma solicitação aberta para este pedido.`,
        details: { request_id: (open.rows[0] as { request_id: string }).request_id },
      };
    }
    const { rows } = await client.query<{ request_id: string }>(
      `INSERT INTO ${this.t('service_requests')} (request_id, order_id, kind, reason, status)
       VALUES ($1 || nextval('${this.t('service_request_seq')}')::text, $2, $3, $4, 'opened') RETURNING request_id`,
      [kind === 'exchange' ? 'TRC-' : 'DEV-', row.order_id, kind, reason],
    );
    return {
      ok: true,
      data: {
        request_id: rows[0].request_id,
        order_id: row.order_id,
        kind,
        status: 'opened',
        next_steps:
          kind === 'exchange'
            ? 'Você receberá por e-mail a etiqueta de postagem para enviar o produto; o novo item segue após a conferência.'
            : 'Você receberá por e-mail a etiqueta de postagem; o reembolso é feito após a conferência do produto.',
      },
    };
  }

  private async orderRow(
    runner: Pool | PoolClient,
    orderId: string,
    lock: boolean,
  ): Promise<Record<string, unknown> | null> {
    const { rows } = await runner.query<Record<string, unknown>>(
      `SELECT order_id, customer_id, status, total::float8 AS total, items,
              to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS created_at,
              to_char(cancelled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS cancelled_at
         FROM ${this.t('orders')} WHERE order_id = $1${lock ? ' FOR UPDATE' : ''}`,
      [normalizeOrderId(orderId)],
    );
    return rows[0] ?? null;
  }

  /** Test and operator helper: the current status of an order. */
  async orderStatus(orderId: string): Promise<string | null> {
    const row = await this.orderRow(this.pool, orderId, false);
    return row ? String(row.status) : null;
  }
}

/** "#100231", "PED-100231" and "100231" name the same order. */
export function normalizeOrderId(orderId: string): string {
  const digits = /(\d{4,})/.exec(orderId);
  return digits ? digits[1] : orderId.trim();
}

/** Accepts the number with or without the country code 55 and any punctuation. */
function msisdnCandidates(msisdn: string): string[] {
  const digits = msisdn.replace(/\D/g, '');
  return digits.startsWith('55') ? [digits, digits.slice(2)] : [digits, `55${digits}`];
}

function notFound(kind: 'line' | 'invoice' | 'order', id: string): ToolOutcome {
  const label = { line: 'Linha', invoice: 'Fatura', order: 'Pedido' }[kind];
  return { ok: false, code: `${kind}_not_found`, message: `${label} ${id} não encontrado(a).` };
}

function cancellationRefusal(status: string): string {
  switch (status) {
    case 'shipped':
      return 'O pedido já foi despachado e não pode mais ser cancelado; após a entrega você pode solicitar a devolução.';
    case 'delivered':
      return 'O pedido já foi entregue; em vez do cancelamento, é possível solicitar a devolução.';
    case 'cancelled':
      return 'O pedido já está cancelado.';
    default:
      return `O pedido está com status ${status} e não pode ser cancelado.`;
  }
}
