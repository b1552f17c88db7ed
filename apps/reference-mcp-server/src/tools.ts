import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ZodRawShapeCompat } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod/v3';
import { ExecutionRecord, ReferenceStore, ToolOutcome } from './store';

export const SERVER_NAME = 'reference-mcp-server';
export const SERVER_VERSION = '0.1.0';

const msisdn = z
  .string()
  .min(8)
  .max(20)
  .describe('Customer phone number (MSISDN), with or without the country code 55.');
const orderId = z.string().min(1).max(40).describe('Order identifier, e.g. 100231.');

/** Arguments every transactional tool takes; the server is the final authority on confirmation. */
const transactional = {
  confirmed: z
    .boolean()
    .optional()
    .describe('Must be the literal boolean true: the customer explicitly confirmed this operation.'),
  confirmation: z.boolean().optional().describe('Alias of confirmed.'),
  idempotency_key: z
    .string()
    .min(8)
    .max(200)
    .optional()
    .describe('Repeating a key returns the first outcome instead of acting again.'),
};

/** A structured result: JSON text for any client, structuredContent for clients that read it. */
export function toCallToolResult(outcome: ToolOutcome, extra: Record<string, unknown> = {}): CallToolResult {
  const body = outcome.ok
    ? { ok: true, ...outcome.data, ...extra }
    : { ok: false, error: outcome.code, message: outcome.message, ...(outcome.details ?? {}), ...extra };
  return {
    content: [{ type: 'text', text: JSON.stringify(body) }],
    structuredContent: body,
    isError: !outcome.ok,
  };
}

function executed(record: ExecutionRecord): CallToolResult {
  return toCallToolResult(record.outcome, { idempotent_replay: record.replayed });
}

const CONFIRMATION_REQUIRED: ToolOutcome = {
  ok: false,
  code: 'confirmation_required',
  message: 'Operação transacional: envie confirmed: true somente depois da confirmação explícita do cliente.',
};

function isConfirmed(args: { confirmed?: boolean; confirmation?: boolean }): boolean {
  return args.confirmed === true || args.confirmation === true;
}

interface ToolDefinition<S extends z.ZodRawShape> {
  description: string;
  inputSchema: S;
  annotations: ToolAnnotations;
}

/**
 * registerTool for one tool: the SDK validates a call against the shape, and the handler gets the arguments
 * parsed by the same shape, typed. The shape goes to the SDK as its plain `ZodRawShapeCompat` (a generic `S`
 * leaves its callback type unresolved), and zod comes from `zod/v3`, the declarations the SDK's types name:
 * checking the root entry's copy of them against those is too deep for the type checker.
 */
function register<S extends z.ZodRawShape>(
  server: McpServer,
  name: string,
  definition: ToolDefinition<S>,
  handler: (args: z.infer<z.ZodObject<S>>) => Promise<CallToolResult>,
): void {
  const schema = z.object(definition.inputSchema);
  const inputSchema: ZodRawShapeCompat = definition.inputSchema;
  server.registerTool<ZodRawShapeCompat, ZodRawShapeCompat>(
    name,
    { ...definition, inputSchema },
    (args: unknown) => handler(schema.parse(args)),
  );
}

/** One MCP server instance with the ten reference tools over `store`. */
export function createReferenceMcpServer(store: ReferenceStore): McpServer {
  const server = new McpServer({ name: SERVER_NAME, version: SERVER_VERSION });
  const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true } as const;
  const write = { readOnlyHint: false, destructiveHint: true, idempotentHint: true } as const;

  register(
    server,
    'consultar_fatura',
    {
      description:
        "Returns the customer's invoice (amount, due date, status, items); the latest when no invoice_id.",
      inputSchema: {
        msisdn,
        invoice_id: z.string().min(1).max(40).optional().describe('Invoice identifier.'),
      },
      annotations: readOnly,
    },
    async (args) => toCallToolResult(await store.invoice(args.msisdn, args.invoice_id)),
  );
  register(
    server,
    'consultar_pagamentos',
    {
      description: 'Lists the payments received for a phone number.',
      inputSchema: { msisdn },
      annotations: readOnly,
    },
    async (args) => toCallToolResult(await store.payments(args.msisdn)),
  );
  register(
    server,
    'consultar_plano',
    {
      description:
        "Returns the line's current plan: monthly fee, data allowance, voice, roaming and benefits.",
      inputSchema: {
        msisdn,
        asset_id: z.string().min(1).max(40).optional().describe('Line or asset identifier.'),
      },
      annotations: readOnly,
    },
    async (args) => toCallToolResult(await store.plan(args.msisdn, args.asset_id)),
  );
  register(
    server,
    'listar_servicos',
    {
      description: 'Lists the value-added services active on the line, with their monthly fees.',
      inputSchema: { msisdn },
      annotations: readOnly,
    },
    async (args) => toCallToolResult(await store.services(args.msisdn)),
  );
  register(
    server,
    'consultar_pedido',
    {
      description: 'Returns an order: status, items, total and dates.',
      inputSchema: { order_id: orderId, customer_id: z.string().min(1).max(40).optional() },
      annotations: readOnly,
    },
    async (args) => toCallToolResult(await store.order(args.order_id, args.customer_id)),
  );
  register(
    server,
    'consultar_entrega',
    {
      description: 'Returns the delivery status, carrier, tracking code and estimated date of an order.',
      inputSchema: { order_id: orderId },
      annotations: readOnly,
    },
    async (args) => toCallToolResult(await store.delivery(args.order_id)),
  );
  register(
    server,
    'validar_cancelamento_pedido',
    {
      description: 'Side-effect-free: whether an order can still be cancelled ({eligible, reason, message}).',
      inputSchema: { order_id: orderId },
      annotations: readOnly,
    },
    async (args) => toCallToolResult(await store.validateCancellation(args.order_id)),
  );
  register(
    server,
    'cancelar_pedido',
    {
      description:
        'Cancels an order that was not dispatched yet. Transactional: refuses without confirmed: true; ' +
        'idempotent per idempotency_key.',
      inputSchema: { order_id: orderId, reason: z.string().max(500).optional(), ...transactional },
      annotations: write,
    },
    async (args) => {
      if (!isConfirmed(args)) return toCallToolResult(CONFIRMATION_REQUIRED);
      return executed(
        await store.executeOnce(
          'cancelar_pedido',
          args.idempotency_key,
          { order_id: args.order_id },
          (client) => store.cancelOrder(client, args.order_id, args.reason),
        ),
      );
    },
  );
  register(
    server,
    'solicitar_troca',
    {
      description:
        'Opens an exchange request for a delivered order. Transactional: refuses without confirmed: true; ' +
        'idempotent per idempotency_key.',
      inputSchema: { order_id: orderId, reason: z.string().min(1).max(500), ...transactional },
      annotations: write,
    },
    async (args) => {
      if (!isConfirmed(args)) return toCallToolResult(CONFIRMATION_REQUIRED);
      return executed(
        await store.executeOnce(
          'solicitar_troca',
          args.idempotency_key,
          { order_id: args.order_id, reason: args.reason },
          (client) => store.openServiceRequest(client, 'exchange', args.order_id, args.reason),
        ),
      );
    },
  );
  register(
    server,
    'solicitar_devolucao',
    {
      description:
        'Opens a return request for a delivered order. Transactional: refuses without confirmed: true; ' +
        'idempotent per idempotency_key.',
      inputSchema: { order_id: orderId, reason: z.string().min(1).max(500), ...transactional },
      annotations: write,
    },
    async (args) => {
      if (!isConfirmed(args)) return toCallToolResult(CONFIRMATION_REQUIRED);
      return executed(
        await store.executeOnce(
          'solicitar_devolucao',
          args.idempotency_key,
          { order_id: args.order_id, reason: args.reason },
          (client) => store.openServiceRequest(client, 'return', args.order_id, args.reason),
        ),
      );
    },
  );
  return server;
}
