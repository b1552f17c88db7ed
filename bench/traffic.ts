/**
 * Conversations for the stickiness benchmark, generated from templates in Portuguese, English and Spanish. Each
 * conversation opens a topic, then every turn either follows it up (with probability `followUps`) or switches to
 * another topic of the same business, and it may end with a request for a person or an ending. Every text has
 * one label and one intent wherever it appears, so the scripted model answers it the same in every mode.
 */
import { ContinuityLabel, ScriptedConversation, ScriptedTurn } from './conversations';
import { prng } from './scripted-llm';

type Language = 'pt' | 'en' | 'es';

interface TopicTexts {
  /** New-subject messages: the first two carry a catalogue keyword in Portuguese, the others none. */
  openers: string[];
  followUps: string[];
}

interface Topic {
  intent: string;
  texts: Record<Language, TopicTexts>;
}

const TELECOM: Topic[] = [
  {
    intent: 'billing_invoice_explanation',
    texts: {
      pt: {
        openers: [
          'minha fatura veio mais alta este mês',
          'quero entender uma cobrança que apareceu',
          'por que estou pagando mais caro agora?',
          'recebi um valor estranho para pagar',
        ],
        followUps: [
          'por que o valor subiu?',
          'e quando vence?',
          'dá para parcelar?',
          'e esse item de serviços digitais?',
          'pode mandar a segunda via por e-mail?',
          'foi cobrado duas vezes',
        ],
      },
      en: {
        openers: [
          'my bill is higher this month',
          'I want to understand a charge I got',
          'why am I paying more now?',
          'I got a strange amount to pay',
        ],
        followUps: [
          'why did the amount go up?',
          'and when is it due?',
          'can I pay it in instalments?',
          'what is that digital services item?',
          'can you email me a copy?',
          'it was charged twice',
        ],
      },
      es: {
        openers: [
          'mi factura vino más alta este mes',
          'quiero entender un cargo que apareció',
          '¿por qué estoy pagando más ahora?',
          'recibí un importe raro para pagar',
        ],
        followUps: [
          '¿por qué subió el importe?',
          '¿y cuándo vence?',
          '¿se puede pagar en cuotas?',
          '¿y ese concepto de servicios digitales?',
          '¿me la mandas por correo?',
          'me lo cobraron dos veces',
        ],
      },
    },
  },
  {
    intent: 'product_services_information',
    texts: {
      pt: {
        openers: [
          'qual é o meu plano atual?',
          'quais pacotes de dados vocês têm?',
          'o que eu tenho contratado hoje?',
          'quero mais internet no celular',
        ],
        followUps: [
          'o que está incluso?',
          'tem roaming internacional?',
          'e quanto custa o maior?',
          'pode detalhar o primeiro?',
          'a franquia acumula?',
          'e o app de música entra?',
        ],
      },
      en: {
        openers: [
          'what is my current plan?',
          'which data packages do you have?',
          'what do I have subscribed today?',
          'I want more mobile data',
        ],
        followUps: [
          'what does it include?',
          'does it have international roaming?',
          'and how much is the biggest one?',
          'can you detail the first one?',
          'does unused data roll over?',
          'is the music app part of it?',
        ],
      },
      es: {
        openers: [
          '¿cuál es mi plan actual?',
          '¿qué paquetes de datos tienen?',
          '¿qué tengo contratado hoy?',
          'quiero más datos en el móvil',
        ],
        followUps: [
          '¿qué incluye?',
          '¿tiene roaming internacional?',
          '¿y cuánto cuesta el más grande?',
          '¿puedes detallar el primero?',
          '¿los datos que sobran se acumulan?',
          '¿y la app de música entra?',
        ],
      },
    },
  },
];

const RETAIL: Topic[] = [
  {
    intent: 'retail_order_tracking',
    texts: {
      pt: {
        openers: [
          'onde está o meu pedido?',
          'a entrega está atrasada',
          'minha encomenda ainda não chegou',
          'quando chega o que eu comprei?',
        ],
        followUps: [
          'é o número 4821',
          'e o horário previsto?',
          'qual transportadora leva?',
          'posso mudar o endereço?',
          'já saiu para entrega?',
          'tem código de acompanhamento?',
        ],
      },
      en: {
        openers: [
          'where is my order?',
          'the delivery is late',
          'my parcel has not arrived yet',
          'when will my purchase arrive?',
        ],
        followUps: [
          'it is number 4821',
          'and the expected time?',
          'which carrier has it?',
          'can I change the address?',
          'is it out for delivery already?',
          'is there a tracking code?',
        ],
      },
      es: {
        openers: [
          '¿dónde está mi pedido?',
          'la entrega está retrasada',
          'mi paquete todavía no llegó',
          '¿cuándo llega lo que compré?',
        ],
        followUps: [
          'es el número 4821',
          '¿y la hora prevista?',
          '¿qué transportista lo lleva?',
          '¿puedo cambiar la dirección?',
          '¿ya salió para entrega?',
          '¿hay código de seguimiento?',
        ],
      },
    },
  },
  {
    intent: 'retail_order_cancel',
    texts: {
      pt: {
        openers: [
          'quero cancelar o pedido que fiz ontem',
          'preciso do cancelamento do pedido 5932',
          'desisti da compra, quero desfazer',
          'não quero mais aquilo que comprei',
        ],
        followUps: [
          'o estorno cai quando?',
          'foi no cartão de crédito',
          'sim, tenho certeza',
          'e se já tiver sido enviado?',
          'vou receber confirmação?',
          'tem alguma multa?',
        ],
      },
      en: {
        openers: [
          'I want to cancel the order I placed yesterday',
          'please cancel order 5932',
          'I changed my mind about the purchase',
          'I do not want what I bought anymore',
        ],
        followUps: [
          'when does the refund arrive?',
          'it was on my credit card',
          'yes, I am sure',
          'and if it was already shipped?',
          'will I get a confirmation?',
          'is there any fee?',
        ],
      },
      es: {
        openers: [
          'quiero cancelar el pedido que hice ayer',
          'necesito anular el pedido 5932',
          'me arrepentí de la compra',
          'ya no quiero lo que compré',
        ],
        followUps: [
          '¿cuándo llega el reembolso?',
          'fue con tarjeta de crédito',
          'sí, estoy seguro',
          '¿y si ya fue enviado?',
          '¿recibiré una confirmación?',
          '¿hay alguna penalización?',
        ],
      },
    },
  },
  {
    intent: 'retail_support_exchange_return',
    texts: {
      pt: {
        openers: [
          'quero devolver o pedido, veio com defeito',
          'preciso solicitar troca de tamanho',
          'o produto chegou quebrado',
          'veio a cor errada',
        ],
        followUps: [
          'como faço para enviar de volta?',
          'tenho que pagar o frete?',
          'a garantia cobre isso?',
          'pode ser por outro modelo?',
          'quanto tempo leva a análise?',
          'ainda está na caixa original',
        ],
      },
      en: {
        openers: [
          'I want to return my order, it is defective',
          'I need to exchange it for another size',
          'the product arrived broken',
          'it came in the wrong colour',
        ],
        followUps: [
          'how do I send it back?',
          'do I pay for the shipping?',
          'does the warranty cover it?',
          'can it be another model?',
          'how long does the review take?',
          'it is still in the original box',
        ],
      },
      es: {
        openers: [
          'quiero devolver el pedido, vino con defecto',
          'necesito cambiarlo por otra talla',
          'el producto llegó roto',
          'vino en el color equivocado',
        ],
        followUps: [
          '¿cómo lo envío de vuelta?',
          '¿tengo que pagar el envío?',
          '¿la garantía lo cubre?',
          '¿puede ser otro modelo?',
          '¿cuánto tarda la revisión?',
          'todavía está en la caja original',
        ],
      },
    },
  },
];

const SESSION: Record<Language, { handoff: string[]; end: string[] }> = {
  pt: {
    handoff: ['quero falar com uma pessoa', 'prefiro falar com um atendente'],
    end: ['era só isso, obrigado, pode encerrar', 'obrigado, pode finalizar'],
  },
  en: {
    handoff: ['I want to talk to a person', 'can I speak to a human agent?'],
    end: ['that is all, thanks, you can close this', 'thanks, we are done'],
  },
  es: {
    handoff: ['quiero hablar con una persona', 'prefiero hablar con un agente humano'],
    end: ['eso es todo, gracias, puedes cerrar', 'gracias, ya terminamos'],
  },
};

const LANGUAGES: Language[] = ['pt', 'en', 'es'];

export interface TrafficOptions {
  conversations: number;
  /** Share of the turns after the first that follow the current topic up, 0..1. */
  followUps: number;
  seed?: number;
}

/**
 * `conversations` conversations of 4 to 8 turns, a third per language, alternating telecom and retail. After the
 * opener each turn follows up (share `followUps`) or switches topic; one conversation in three ends asking for
 * a person or closing the session.
 */
export function generateTraffic(options: TrafficOptions): ScriptedConversation[] {
  const random = prng(options.seed ?? 20);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const turn = (text: string, label: ContinuityLabel, intent?: string): ScriptedTurn => ({
    text,
    label,
    ...(intent ? { intent } : {}),
  });
  const result: ScriptedConversation[] = [];
  for (let i = 0; i < options.conversations; i++) {
    const language = LANGUAGES[i % LANGUAGES.length];
    const telecom = Math.floor(i / LANGUAGES.length) % 2 === 0;
    const topics = telecom ? TELECOM : RETAIL;
    const length = 4 + Math.floor(random() * 5);
    const used = new Set<string>();
    const fresh = (texts: readonly string[]) => {
      const unused = texts.filter((text) => !used.has(text));
      const text = pick(unused.length > 0 ? unused : texts);
      used.add(text);
      return text;
    };
    let topic = pick(topics);
    const turns: ScriptedTurn[] = [turn(fresh(topic.texts[language].openers), 'ROUTE', topic.intent)];
    const closing = random();
    const body = closing < 1 / 3 ? length - 1 : length;
    while (turns.length < body) {
      if (random() < options.followUps) {
        turns.push(turn(fresh(topic.texts[language].followUps), 'CONTINUE', topic.intent));
      } else {
        topic = pick(topics.filter((t) => t !== topic));
        turns.push(turn(fresh(topic.texts[language].openers), 'ROUTE', topic.intent));
      }
    }
    if (body < length) {
      turns.push(
        closing < 1 / 9
          ? turn(pick(SESSION[language].handoff), 'HUMAN_HANDOFF')
          : turn(pick(SESSION[language].end), 'END_SESSION'),
      );
    }
    result.push({
      id: `${language}-${telecom ? 'telecom' : 'retail'}-${i + 1}`,
      agentId: telecom ? 'telecom_contas' : 'retail_orders',
      turns,
    });
  }
  return result;
}
