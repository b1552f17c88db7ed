/**
 * The reference data set: two telecom lines (plans, services, invoices, payments) and a handful of retail
 * orders in every state a cancellation, exchange or return can meet. Inserted with ON CONFLICT DO NOTHING,
 * so a restart keeps whatever the tools changed.
 */
export interface SeedPlan {
  plan_id: string;
  name: string;
  monthly_fee: number;
  data_gb: number;
  voice: string;
  roaming: boolean;
  benefits: string[];
}

export interface SeedLine {
  msisdn: string;
  customer_name: string;
  plan_id: string;
  asset_id: string;
  status: string;
}

export interface SeedService {
  msisdn: string;
  service_id: string;
  name: string;
  monthly_fee: number;
  status: string;
  activated_at: string;
}

export interface SeedInvoice {
  invoice_id: string;
  msisdn: string;
  reference_month: string;
  amount: number;
  due_date: string;
  status: string;
  items: { description: string; amount: number }[];
}

export interface SeedPayment {
  payment_id: string;
  msisdn: string;
  invoice_id: string;
  amount: number;
  paid_at: string;
  method: string;
}

export interface SeedOrder {
  order_id: string;
  customer_id: string;
  status: string;
  total: number;
  items: { sku: string; description: string; quantity: number; unit_price: number }[];
  created_at: string;
}

export interface SeedDelivery {
  order_id: string;
  carrier: string;
  tracking_code: string | null;
  status: string;
  estimated_date: string | null;
  last_event: string;
}

export const PLANS: SeedPlan[] = [
  {
    plan_id: 'CTRL30',
    name: 'Controle 30GB',
    monthly_fee: 79.9,
    data_gb: 30,
    voice: 'ilimitado para todo o Brasil',
    roaming: false,
    benefits: ['WhatsApp sem descontar da franquia', 'Deezer Premium'],
  },
  {
    plan_id: 'POS50',
    name: 'Pós 50GB',
    monthly_fee: 149.9,
    data_gb: 50,
    voice: 'ilimitado para todo o Brasil',
    roaming: true,
    benefits: ['Roaming nas Américas', 'Apps de redes sociais sem descontar', 'Antivírus'],
  },
];

export const LINES: SeedLine[] = [
  {
    msisdn: '5511999990001',
    customer_name: 'Ana Souza',
    plan_id: 'CTRL30',
    asset_id: 'AST-0001',
    status: 'active',
  },
  {
    msisdn: '5521988880002',
    customer_name: 'Bruno Lima',
    plan_id: 'POS50',
    asset_id: 'AST-0002',
    status: 'active',
  },
];

export const SERVICES: SeedService[] = [
  {
    msisdn: '5511999990001',
    service_id: 'VAS-DEEZER',
    name: 'Deezer Premium',
    monthly_fee: 0,
    status: 'active',
    activated_at: '2025-06-01',
  },
  {
    msisdn: '5511999990001',
    service_id: 'VAS-HORO',
    name: 'Horóscopo por SMS',
    monthly_fee: 4.99,
    status: 'active',
    activated_at: '2026-01-20',
  },
  {
    msisdn: '5521988880002',
    service_id: 'VAS-AV',
    name: 'Antivírus Mobile',
    monthly_fee: 0,
    status: 'active',
    activated_at: '2025-02-11',
  },
  {
    msisdn: '5521988880002',
    service_id: 'VAS-ROAM',
    name: 'Roaming Américas',
    monthly_fee: 0,
    status: 'active',
    activated_at: '2025-02-11',
  },
];

export const INVOICES: SeedInvoice[] = [
  {
    invoice_id: 'FAT-202602-0001',
    msisdn: '5511999990001',
    reference_month: '2026-02',
    amount: 84.89,
    due_date: '2026-03-10',
    status: 'paid',
    items: [
      { description: 'Plano Controle 30GB', amount: 79.9 },
      { description: 'Horóscopo por SMS', amount: 4.99 },
    ],
  },
  {
    invoice_id: 'FAT-202603-0001',
    msisdn: '5511999990001',
    reference_month: '2026-03',
    amount: 132.37,
    due_date: '2026-04-10',
    status: 'open',
    items: [
      { description: 'Plano Controle 30GB', amount: 79.9 },
      { description: 'Horóscopo por SMS', amount: 4.99 },
      { description: 'Pacote adicional de internet 5GB', amount: 29.9 },
      { description: 'Chamadas internacionais', amount: 17.58 },
    ],
  },
  {
    invoice_id: 'FAT-202603-0002',
    msisdn: '5521988880002',
    reference_month: '2026-03',
    amount: 149.9,
    due_date: '2026-04-15',
    status: 'open',
    items: [{ description: 'Plano Pós 50GB', amount: 149.9 }],
  },
];

export const PAYMENTS: SeedPayment[] = [
  {
    payment_id: 'PAG-0001',
    msisdn: '5511999990001',
    invoice_id: 'FAT-202602-0001',
    amount: 84.89,
    paid_at: '2026-03-08',
    method: 'pix',
  },
];

export const ORDERS: SeedOrder[] = [
  order('100231', 'C-100', 'processing', [['SKU-FONE', 'Fone de ouvido Bluetooth', 1, 249.9]]),
  order('100232', 'C-100', 'shipped', [['SKU-CAFE', 'Cafeteira elétrica', 1, 399.0]]),
  order('100233', 'C-200', 'delivered', [['SKU-TENIS', 'Tênis de corrida', 1, 459.9]]),
  order('100234', 'C-200', 'processing', [['SKU-LIVRO', 'Livro: Arquitetura Limpa', 2, 89.9]]),
  order('100235', 'C-300', 'cancelled', [['SKU-MOUSE', 'Mouse sem fio', 1, 99.9]]),
  order('100236', 'C-300', 'processing', [['SKU-TECL', 'Teclado mecânico', 1, 529.0]]),
  order('100237', 'C-400', 'processing', [['SKU-MONI', 'Monitor 27 polegadas', 1, 1599.0]]),
  order('100238', 'C-400', 'processing', [['SKU-CADE', 'Cadeira de escritório', 1, 899.0]]),
  order('100239', 'C-500', 'processing', [['SKU-LUMI', 'Luminária de mesa', 1, 149.0]]),
  order('100240', 'C-500', 'delivered', [['SKU-MOCH', 'Mochila para notebook', 1, 219.9]]),
];

export const DELIVERIES: SeedDelivery[] = ORDERS.map((o) => ({
  order_id: o.order_id,
  carrier: 'Correios',
  tracking_code: o.status === 'shipped' || o.status === 'delivered' ? `BR${o.order_id}9BR` : null,
  status:
    o.status === 'shipped'
      ? 'in_transit'
      : o.status === 'delivered'
        ? 'delivered'
        : o.status === 'cancelled'
          ? 'cancelled'
          : 'awaiting_dispatch',
  estimated_date: o.status === 'cancelled' ? null : '2026-04-20',
  last_event:
    o.status === 'shipped'
      ? 'Objeto em trânsito para a unidade de distribuição'
      : o.status === 'delivered'
        ? 'Objeto entregue ao destinatário'
        : o.status === 'cancelled'
          ? 'Pedido cancelado'
          : 'Pedido em separação no centro de distribuição',
}));

function order(
  order_id: string,
  customer_id: string,
  status: string,
  items: [string, string, number, number][],
): SeedOrder {
  const lines = items.map(([sku, description, quantity, unit_price]) => ({
    sku,
    description,
    quantity,
    unit_price,
  }));
  return {
    order_id,
    customer_id,
    status,
    total: Math.round(lines.reduce((sum, l) => sum + l.quantity * l.unit_price, 0) * 100) / 100,
    items: lines,
    created_at: '2026-04-01T12:00:00Z',
  };
}
