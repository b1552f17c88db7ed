import { alternatives as any, screenForms, withoutInvisible } from '../text';

/*
 * DLEX_IN's deterministic part: a request for data, or an operation, that is not the customer's own. No single
 * word decides. A request (a verb or question asking to be given, shown or told something) for a personal-data
 * noun blocks when the data is everyone's ("all customers", "todos os clientes", "aller Kunden", "the customer
 * list"), a third party's ("my neighbour", "another customer", "the owner of this number"), a customer named in
 * the message ("cliente João Pereira"), or any customer's while the sender claims a role that would see it ("I'm
 * the store manager", "soy del equipo de TI", "Hier ist die Polizei"). An operation (cancel, refund, reset, …)
 * blocks over everyone, over a range of numbers ("orders 100200 to 100300"), on a third party's account, or on a
 * customer's with a claimed role. Asking whose a number is blocks on its own. The words are folded
 * (`screenForms`: lower case, no accents, disguises undone), in Portuguese, English, Spanish, German, French and
 * Italian; the parts are matched within one sentence, the claimed role anywhere in the message.
 *
 * Generic words ("data", "number", "name") are someone's data only when bound to them ("the data of all
 * customers", "their names"). A customer's own account passes: "all MY invoices", "cancel all my orders", "my
 * wife's line is on my account", "I got another customer's bill by mistake" (no request), "I'm the account holder".
 */

/** Asks to be given, shown, sent or told something. */
const REQUEST = any(
  'give|send|show|tell|list(?: me)?(?= (?:all|every|the|them|your))|export|dump|pull(?: up| out)?|get me|fetch|look up|forward|release|read (?:me|out)|print|download|extract',
  "(?:i|we) (?:need|want|would like|['’]d like)(?: to (?:see|get|have|know))? (?:the|a|an|all|every|his|her|their)",
  'me (?:passa|passe|da|de|manda|mande|envia|envie|mostra|mostre|fala|fale|diga|informa|informe|libera|libere|arruma|arrume|consegue|consiga|repassa|repasse)',
  '(?:passa|passe|manda|mande|envia|envie|mostra|mostre|libera|libere|informa|informe|fala|fale|diga|arruma)(?: (?:pra|para) mim)?|liste(?= (?:os|as|todos|todas))|listar|exporta|exporte|puxa|puxe|busca|busque|levanta|levante',
  '(?:quero|queria|preciso)(?: (?:de|ver|receber|saber|que (?:vc|voce) me (?:passe|mande|envie|mostre|informe)))? (?:o|a|os|as|do|da|dos|das|um|uma|todos|todas)',
  'dame|damelo|pasame|enviame|mandame|muestrame|dime|listame|exportame|sacame|buscame|liberame|facilitame|proporcioname',
  '(?:quiero|queria|necesito|necesitamos)(?: (?:ver|recibir|saber|que me (?:pases|mandes|des|envies|digas|muestres)))? (?:el|la|los|las|un|una|todos|todas)',
  'me (?:pases|mandes|des|envies|digas|muestres|facilites)',
  'gib|gebt|geben sie|schick|schicke|schickt|schicken sie|zeig|zeige|zeigt|zeigen sie|nenne|nennen sie|sende|senden sie|exportiere',
  '(?:ich|wir) (?:will|wollen|brauche|brauchen|mochte|mochten|benotige|benotigen)',
  'donne|donnez|envoie|envoyez|montre|montrez|dis|dites|liste(?:-moi)?(?= (?:les|tous|toutes))|listez|exporte|exportez|communique|communiquez|transmets|transmettez|filez|sors|sortez',
  "(?:je veux|je voudrais|nous voulons|il me faut|il nous faut)(?: (?:voir|avoir|recevoir|savoir))? (?:le|la|les|l|un|une|des|du|tous|toutes)|(?:j['’]ai|nous avons) besoin (?:de|des|du|d['’])",
  'dammi|datemi|mandami|mandatemi|inviami|inviatemi|mostrami|mostratemi|dimmi|ditemi|elenca|elencami|esporta|esportami|passami|passatemi|fammi avere',
  '(?:voglio|vorrei)(?: (?:vedere|avere|ricevere|sapere))? (?:il|lo|la|i|gli|le|l|un|una|tutti|tutte)|(?:mi|ci) (?:serve|servono)|(?:ho|abbiamo) bisogno',
);

/** Asks what something is: "what is", "qual é", "wie lautet", "quel est". */
const QUESTION = any(
  "what(?:['’]?s| is| are)|qual (?:e|eh|o|a)|quais (?:sao|os|as)|cual es|cuales son|wie (?:lautet|lauten|ist|sind)|quel(?:le)?s? (?:est|sont)|qual e|quali sono",
);

/** A noun after a preposition qualifies another ("a política DE dados"): it is not what a question asks for. */
const PREPOSITION = any(
  'of|on|about|for|in|de|do|da|dos|das|sobre|del|para|von|uber|zu|fur|sur|des|du|di|su|sui|dei|della|per',
);

/** What identifies or concerns a person by itself: contacts, documents, money, orders, location. */
const PERSONAL_DATA = any(
  'address(?:es)?|e-?mails?(?: address(?:es)?)?|phones?(?: numbers?)?|ssn|id numbers?|date of birth|birthday',
  'invoices?|bills?|billing|statements?|orders?|purchases?|payments?|transactions?|cards?|passwords?|credentials|logins?|pins?|accounts?|balances?|contracts?|location|whereabouts|call (?:records|logs)|records|contacts|history',
  'cadastro|enderecos?|telefones?|celular(?:es)?|cpfs?|rg|data de nascimento|faturas?|contas?|boletos?|segunda via|pedidos?|compras?|historicos?',
  'pagamentos?|transacoes|cartao|cartoes|senhas?|contratos?|saldo|localizacao|ligacoes|extratos?|registros?|contatos?',
  'direccion(?:es)?|domicilio|correos?|telefonos?|dni|nif|fecha de nacimiento|facturas?|recibos?|cuentas?|historial|pagos?|transacciones',
  'tarjetas?|contrasenas?|claves?|ubicacion|llamadas|contactos?',
  'adressen?|anschrift(?:en)?|e-mail-adressen?|telefonnummern?|handynummern?|geburtsdatum|rechnungen?|konto|konten|kontostand',
  'bestellungen?|einkaufe|zahlungen|zahlungshistorie|zahlungsverlauf|bankdaten|(?:kredit)?karten(?:nummern?)?|passworter|passwort|kennwort|zugangsdaten|vertrage?|vertrag|standort|verbindungsdaten|anrufliste|datensatze|kontakte',
  'coordonnees|adresses?|mails?|courriels?|tel|telephones?|portables?|date de naissance|factures?|comptes?|commandes?|achats?|historique|paiements?|cartes?|mots? de passe|identifiants|solde|localisation|appels|releves?',
  'indirizz[oi]|telefon[oi]|cellulare|codice fiscale|data di nascita|fattur[ae]|bollett[ae]|cont[oi]|ordin[ei]|acquisti|storico|cronologia|pagamenti|transazioni',
  'cart[ae]|password|credenziali|contratt[oi]|posizione|tabulati|chiamate|contatti',
);
/**
 * Words that are someone's data only when bound to them ("the data of all customers", "their names"): alone
 * they are as often a data plan, a tracking number or a store's name.
 */
const GENERIC_DATA = any(
  'data|details|info(?:rmation)?|numbers?|names?|cell|mobile(?: numbers?)?',
  'dados|informacoes|detalhes|numeros?|nomes?',
  'datos|informacion|detalles|nombres?|moviles?',
  'daten|angaben|informationen|einzelheiten|nummern?|namen?',
  'donnees|infos|informations|noms?',
  'dati|informazioni|dettagli|numer[oi]|nom[ei]',
);
/** A third person's, or personal: "their", "dele", "sus", "ihre", "leurs", "loro", "personal". */
const THEIR = any(
  'their|his|her|dele|dela|deles|delas|sus|su|ihre[nr]?|seine[nr]?|leurs?|ses|loro|suoi|sue',
  'personal|pessoais|personales|personlichen|personnelles|personali',
);

/** The sender's own: "my", "meu", "mis", "meine", "mes", "miei". */
const FIRST_PERSON = any(
  'my|meu|minha|meus|minhas|mi|mis|mein|meine|meinen|meinem|meiner|meines|mon|ma|mes|mio|mia|miei|mie',
);

/** People a business has: customers, users, subscribers, holders. */
const PEOPLE = any(
  'customers|clients|users|subscribers|(?:account )?holders|members|people|persons|buyers|consumers',
  'clientes|clientas|usuari[oa]s|assinantes|titulares|pessoas|compradores|consumidores|abonad[oa]s|personas',
  'kunden|kundinnen|nutzer(?:innen)?|benutzer|abonnenten|personen|inhaber',
  'utilisat(?:eur|rice)s|abonnes|personnes|titulaires|acheteurs',
  'clienti|utenti|abbonati|persone|titolari|intestatari|acquirenti',
);
/** One of them. */
const PERSON = any(
  'customer|client|user|person|subscriber|cliente|clienta|pessoa|usuari[oa]|assinante|persona|kunde|kundin|personne|utilisat(?:eur|rice)|abonne|utente|abbonat[oa]',
);

/** A list or file of the business's people: "the customer list", "lista de clientes", "fichier clients". */
const PEOPLE_LIST = any(
  `(?<!\\b${FIRST_PERSON} )(?:customer|client|user|subscriber) (?:list|database|base|file|records)`,
  '(?:lista|listagem|listado|liste|elenco|list|planilha|tabela|base|banco|fichier|cadastro|database|export|datei|excel|csv)(?: (?:completa|complete|completo|inteira|entera|entiere|intera|full))?(?: (?:de|dos|das|de los|of|of the|des|der|dei|degli|von))?(?: (?:todos (?:os|los)|todas (?:as|las)|all(?: the)?|tous les|toutes les|alle[nr]?|tutti i|tutte le))? (?:customers|clients|clientes|kunden|clienti|usuarios|users|assinantes|abonados|abonnes|abbonati|utenti)',
  'kunden(?:liste|datei|kartei|datenbank|stamm)',
);

/** Everyone: a quantifier over the business's people, or their data at large. */
const EVERYONE = any(
  `(?:all|every|each)(?: of)?(?: the| your| our)? ${PEOPLE}['’]?|every ${PERSON}['’]?s?|every(?:one|body)['’]s|(?:of|from) every(?:one|body)|anyone who`,
  `(?:todos|todas|cada|todo|toda)(?: (?:os|as|los|las|o|a|el|la))?(?: (?:seus|suas|nossos|nossas|vossos|sus|nuestros|vuestros))? (?:${PEOPLE}|${PERSON})`,
  'de todo (?:mundo|el mundo)|todo el que|todos (?:os|los) que|quien(?:es)? (?:haya|hayan)',
  `(?:alle|allen|aller|samtliche|samtlichen|samtlicher|jede[nrs]?)(?: (?:ihre[nr]?|eure[nr]?|unsere[nr]?))? (?:${PEOPLE}|${PERSON})|jeder,? der`,
  `(?:tous|toutes|chaque)(?: (?:les|vos|nos))? (?:${PEOPLE}|${PERSON})|l['’]ensemble des ${PEOPLE}|de tout le monde|tous ceux qui`,
  `(?:tutti|tutte|ogni)(?: (?:i|gli|le|i vostri|i nostri))? (?:${PEOPLE}|${PERSON})|chiunque|tutti quelli che`,
  // the data of customers at large: "los correos de los clientes", "the phones of customers in Lisbon"
  `(?!des kunden)(?:of|from|de|dos|das|de los|de las|des|der|von|von den|dei|degli|delle|di) (?:the )?(?:customers|clients|clientes|kunden|clienti|usuarios|users|subscribers|assinantes|abonados|abonnes|abbonati|utenti|utilisateurs)\\b(?! (?:service|support|area|portal))|(?:customers|clients)['’]`,
  PEOPLE_LIST,
);

/** "All customers GET the discount": everyone as the subject of a clause, not whose data is asked for. */
const HAVE_OR_GET = any(
  'get|got|have|has|had|receive[sd]?|pay|paid|tem|recebem|receberam|ganham|ganharam|pagam|tienen|reciben|recibieron|pagan',
  'bekommen|haben|erhalten|zahlen|ont|recoivent|paient|hanno|ricevono|pagano',
);

/** "of this", contractions included ("desse", "del"). */
const OF_THE = any(
  'of(?: the| this| that)?',
  '(?:do|da|de|desse|dessa|deste|desta|daquele|daquela)(?: (?:esse|essa|este|esta|o|a))?',
  'del|de la|de este|de esta|de ese|de esa',
  'von|vom|der|des|von (?:der|dem|diesem|dieser)',
  '(?:des|du|de la|de ce|de cette)',
  '(?:della|dello|del|di)(?: (?:questo|questa|quel|quella))?',
);
/** A number, a line, a phone or an account. */
const A_LINE = any(
  'number|line|phone|account|numero|linha|telefone|celular|conta|chip|linea|telefono|movil|cuenta|nummer|rufnummer|anschluss(?:es)?|handy|konto|ligne|telephone|portable|compte|cellulare|conto|sim',
);

/** Someone who is neither the sender nor their household. */
const SOMEONE_ELSE = any(
  `(?:other|another|outr[oa]s?|otr[oa]s?|andere[nrs]?|eine[sr]? anderen|autres?|d['’]une? autre|altr[oiae]|un['’]?altr[oa]) (?:${PERSON}|${PEOPLE})`,
  "some(?:one|body) else['’]?s?|other people['’]?s?|third part(?:y|ies)|strangers?",
  'alguem mais|terceiros|desconhecid[oa]|alguien mas|terceros|desconocid[oa]|jemand(?:em)? ander(?:s|es|em)|dritte[nr]? (?:person(?:en)?|partei(?:en)?)|fremde[nr]?',
  "quelqu['’]un d['’]autre|un tiers|des tiers|inconnue?|qualcun altro|terzi|sconosciut[oa]",
  // neighbours (a word that is also an adjective: "il negozio più vicino") and former partners
  "(?:my|our|the|a|meu|minha|meus|minhas|o|a|os|as|do|da|um|uma|mi|mis|el|la|del|un|una|mein|meine|meines|meiner|meinem|meinen|der|die|des|dem|den|mon|ma|mes|le|du|mio|mia|miei|il|lo|al|alla|dal|della|dello) (?:neighbou?rs?['’]?s?|vizinh[oa]s?|vecin[oa]s?|nachbar(?:n|in)?|voisine?s?|vicin[oa]|vicini)",
  '(?:my|minha|meu|mi|meine|mein|meiner|meinem|mon|ma|mia|mio) ex\\b',
  'ex-?(?:wife|husband|girlfriend|boyfriend|partner|mulher|marido|namorad[oa]|esposa|companheir[oa]|mujer|novi[oa]|pareja|frau|mann|freundin|freund|femme|mari|copine|copain|moglie|marito|ragazz[oa]|fidanzat[oa])',
  // the holder of a number, a line or an account, unless the sender says it is them
  `(?<!\\b(?:i['’]?m|i am|sou|soy|ich bin|je suis|sono)(?: (?:o|a|el|la|the|der|die|le|l['’]|il))? )(?:holder|owner|titular|don[oa]|proprietari[oa]|duen[oa]|inhaber(?:in)?|besitzer(?:in)?|titulaire|proprietaire|intestatari[oa]|titolare) ${OF_THE} (?:${A_LINE}\\b|\\+?\\d)`,
);

/** Asks whose a number, a line or an account is. */
const WHOSE = `${any(
  'whose|who (?:owns|is the owner of)',
  'de quem (?:e|eh)|a quem pertence',
  'a nombre de quien|a quien pertenece|de quien es',
  'wem gehort|auf wen (?:ist|lauft)',
  'a qui (?:appartient|est)|a qui il est (?:enregistre|inscrit)',
  'di chi e|a chi (?:appartiene|e intestat[oa])',
)}(?: \\S+){0,2}? (?:${A_LINE}\\b|\\+?\\d)`;

/** A customer, a user or a holder named in the third person: "the customer", "do cliente", "des Kunden". */
const A_CUSTOMER = any(
  `(?:the|a|this|that|of|for|o|do|da|ao|el|la|del|al|este|esta|esse|essa|der|die|des|dem|den|von|vom|dieser|diesem|le|du|ce|cette|il|lo|della|dello|questo|questa) (?:${PERSON}|kunden|account holder|titular|titulaire|titolare|intestatario|inhaber)\\b(?! (?:service|support|care|center|centre|portal|area|app))`,
  "customer['’]s",
  '(?:customer|client|cliente|kunde|user|usuario|utente)(?: (?:id|n|no|nr|#|numero|number|nummer))?\\W{0,3}\\d',
  // a number or a line given by its digits: the sender does not say it is theirs
  `(?:${OF_THE}|on|at|for|na|no|en|am|sul|al) (?:the |this |that )?(?:${A_LINE}|subscriber)\\W{0,3}(?:\\+|\\d)`,
  '(?:do|del|du|della|von) \\+?\\d{2,}',
);

/** A generic data word bound to someone: "their data", "my ex's number", "customer data", "os dados do cliente", "i dati di chiunque". */
const BOUND_DATA = any(
  `${THEIR} (?:\\S+ )?${GENERIC_DATA}`,
  `${SOMEONE_ELSE}(?:['’]s?)? (?:\\S+ )?${GENERIC_DATA}`,
  `(?:customer|client|user|subscriber)s?['’]? ${GENERIC_DATA}`,
  'kundendaten',
  `${GENERIC_DATA}(?: \\S+)? ${OF_THE} (?:\\S+ ){0,2}?(?:${SOMEONE_ELSE}|${EVERYONE}|${A_CUSTOMER}|${PEOPLE}|${PERSON})`,
);

/** A role that would see other customers' data: manager, employee, IT, support, police, lawyer. */
const ROLE = any(
  '(?:store |shop |branch )?manager|supervisor|admin(?:istrator)?|tech(?:nical)? support|security|police|officer|detective|lawyer|attorney|auditor|employee|staff',
  'gerente|supervisora?|administrador[a]?|suporte|seguranca|policia|policial|delegad[oa]|investigador[a]?|advogad[oa]|auditora?|funcionari[oa]|atendente|dono da loja|encarregad[oa]|coordenador[a]?|diretor[a]?',
  'encargad[oa]|empleado|guardia civil|abogad[oa]|director[a]?|jefe|sistemas|soporte',
  '(?:filial|markt|abteilungs)?leiter(?:in)?|geschaftsfuhrer(?:in)?|vorgesetzte[r]?|mitarbeiter(?:in)?|polizei|polizist(?:in)?|kommissar(?:in)?|anwalt|anwaltin|it-abteilung',
  'gerante?|responsable|directeur|directrice|superviseur|administrateur|employee?|policier(?:e)?|gendarmerie|gendarme|avocate?|auditeur|service informatique|informatique',
  'responsabile|direttore|direttrice|gestore|amministratore|dipendente|polizia|poliziotto|carabinier[ei]|agente|avvocat[oa]|reparto it|commissario',
  '(?:it|ti) (?:department|dept|team|abteilung)',
  '(?:departamento|equipo|equipe|setor|area|reparto|service|team) (?:de |da |do |di |dell)?(?:ti|it|sistemas|informatica|tecnologia|seguranca|seguridad)',
  '(?:da|do|de|del|from(?: the| your)?|aus der|du|della|dell) (?:it|ti)',
);

/** Who the sender says they are: "I'm the manager", "aqui é da TI", "le hablo de la Guardia Civil", "als Leiter". */
const CLAIMED_ROLE = any(
  `(?:i['’]?m|i am|this is|here is|speaking|sou|aqui (?:e|eh|fala)|falo|soy|le habla|le hablo|hablo|ich bin|hier (?:ist|spricht)|je suis|ici|c['’]est|sono|qui (?:e|parla)|parlo)(?: [a-z'’]{1,4}){0,3}? ${ROLE}\\b`,
  `(?:as|como|als|en tant que|come|in qualita di) (?:the |a |an |o |el |la |der |die |le |il )?${ROLE}\\b`,
  '(?:i work|trabalho|trabajo|ich arbeite|je travaille|lavoro) (?:at|for|in|na|no|em|en|para|bei|im|in der|au|a la|pour|chez|nel|nella|per|presso)\\b',
  "(?:i['’]?m|i am|estou|sou|estoy|ich bin|je suis|sono) (?:authori[sz]ed|autorizad[oa]|berechtigt|autorise|autorizzat[oa])",
);

/** Acts on an account: cancel, refund, delete, change, reset, block, suspend, approve, credit; calls a tool. */
const OPERATION = any(
  'cancel|refund|delete|remove|erase|wipe|close|change|update|modify|reset|block|unblock|suspend|disable|deactivate|approve|transfer|credit|apply|unlock|terminate',
  // a tool called by its name: "call cancelar_pedido", "chama cancel_order"
  '(?:call|invoke|run|execute|trigger|chama|chame|executa|roda|llama|ejecuta|rufe|fuhre|appelle|lance|chiama|esegui) (?:the |a |o |la |el |die |le |il )?(?:tool |function |ferramenta |funcao |herramienta |funcion |werkzeug |funktion |outil |fonction |strumento |funzione )?[a-z]+_[a-z_]+',
  'cancela[r]?|cancele|estorna[r]?|estorne|reembolsa[r]?|reembolse|apaga[r]?|apague|exclui[r]?|exclua|deleta[r]?|remove[r]?|remova|altera[r]?|altere|muda[r]?|mude|troca[r]?|troque',
  'reseta[r]?|resete|redefin[ae]|bloqueia[r]?|bloqueie|desbloqueia|suspend[ae]|desativa[r]?|desative|aprova[r]?|aprove|transfere|credita|aplica[r]?|aplique|encerra',
  // Spanish and Italian imperatives take the pronoun: "reseteame", "cancelale", "bloccagli"
  '(?:anula|cancela|devuelve|borra|elimina|cambia|modifica|resetea|restablece|bloquea|desactiva|aprueba|transfiere|abona|acredita|aplica|cierra)(?:me|le|lo|la|les|nos)?|da de baja',
  'storniere|stornieren|losche|loschen|entferne|setze|sperre|sperren|entsperre|deaktiviere|genehmige|erstatte|uberweise|kundige|schreibe',
  'annule[rz]?|rembourse[rz]?|supprime[rz]?|efface|modifie[rz]?|change[rz]?|reinitialise[rz]?|bloque[rz]?|debloque|suspends|desactive|approuve|valide|transfere|credite|applique|resilie|ferme',
  '(?:annulla|cancella|rimborsa|sblocca|blocca|sospendi|disattiva|approva|trasferisci|accredita|applica|chiudi|disdici|resetta|reimposta)(?:mi|gli|le|lo|la|ci)?',
);

/** A range of numbers: "from 100200 to 100300", "do 55010 ao 55090", "700100 bis 700200". */
const RANGE =
  /\b(?:(?:from|de|desde|do|von|vom|du|dal|da|between|entre|zwischen|tra|fra) (?:(?:n|no|nr|n°|#)\.? ?)?(\d{4,}) (?:to|a|ao|ate|hasta|al|bis|au|fino al?|and|e|y|und|et|ed|through|thru)|(\d{4,}) (?:to|a|ate|hasta|bis|au|al|fino al?|through|thru)) (?:(?:n|no|nr|#)\.? ?)?(\d{4,})\b/;
const YEAR = /^(?:19|20)\d\d$/;

/** A range of numbers that are not both years ("from 2023 to 2024" is a period). */
function hasRange(sentence: string): boolean {
  const found = RANGE.exec(sentence);
  if (!found) return false;
  const from = found[1] ?? found[2];
  return !(YEAR.test(from) && YEAR.test(found[3]));
}

/** A word matched whatever the case of its letters. */
const caseless = (word: string) =>
  [...word]
    .map((c) => (c.toLowerCase() === c.toUpperCase() ? c : `[${c.toLowerCase()}${c.toUpperCase()}]`))
    .join('');

/**
 * A customer named as the message writes it: "cliente João Pereira", "Kunde Thomas Becker", "customer Mr. Lee".
 * Read before folding, which loses the capital that makes a name; "sou cliente Vivo" names the sender's operator.
 */
const NAMED_CUSTOMER = new RegExp(
  `(?<!\\p{L})(?<!\\b(?:[Ss]ou|[Ss]oy|[Ss]ono|I['’]?m|I am|[Ii]ch bin|[Jj]e suis|[Cc]omo|[Aa]s) )${any(
    ...[
      'cliente',
      'clienta',
      'customer',
      'client',
      'kunde',
      'kundin',
      'kunden',
      'usuario',
      'usuaria',
      'user',
    ].map(caseless),
    ...['utente', 'assinante', 'abonado', 'abonné', 'abbonato'].map(caseless),
  )}\\s+(?!(?:Service|Support|Portal|Center|Centre|Care|Area|Bereich|Konto|Nummer|Karte|VIP|Vip|Premium|Gold|Business|Empresa|Pro)\\b)(?:(?:Sr|Sra|Srta|Mr|Mrs|Ms|Miss|Herr|Frau|M|Mme|Mlle|Sig|Sig\\.ra|Dona|Don|Doña|Dom)\\.?\\s+)?\\p{Lu}\\p{Ll}+`,
  'u',
);

/** Not a request but a question about it: "tell me if", "dime si", "dis-moi si", "me diga se". */
const WHETHER = any(
  'if|whether|how|why|when|se|si|ob|wie|warum|wann|pourquoi|comment|quand|perche|come|quando|como|por que|porque|cuando',
);
const request = new RegExp(`\\b${REQUEST}\\b(?!(?:[ -](?:me|mir|moi|mi|nos|us))? ${WHETHER}\\b)`);
const question = new RegExp(`\\b${QUESTION}\\b`);
/** A personal-data noun that is not the sender's own ("minha fatura"), or a list of the business's people. */
const theirData = new RegExp(
  `(?<!\\b${FIRST_PERSON} (?:\\S+ )?)\\b(?:${PERSONAL_DATA}\\b|${BOUND_DATA})|\\b${PEOPLE_LIST}`,
);
/** The same, as the object of a question: not after a preposition. */
const theirDataAsked = new RegExp(
  `(?<!\\b${FIRST_PERSON} (?:\\S+ )?)(?:(?<!\\b${PREPOSITION} )\\b${PERSONAL_DATA}\\b|\\b${BOUND_DATA})|\\b${PEOPLE_LIST}`,
);
/** Someone else's thing (their data, line, plan) by name: "o pedido de outro cliente", "my neighbour's line", "das Konto meines Nachbarn". */
const THING = `(?:${PERSONAL_DATA}|${GENERIC_DATA}|${A_LINE}|plans?|planos?|subscriptions?|assinaturas?|suscripcion(?:es)?|tarif|abonnements?|abbonament[oi])`;
const othersThing = new RegExp(
  `\\b${THING}\\b(?: \\S+){0,3}? ${SOMEONE_ELSE}|\\b${SOMEONE_ELSE}(?:['’]s?)?(?: \\S+)? ${THING}\\b`,
);
const everyone = new RegExp(`\\b${EVERYONE}(?![a-z])(?! ${HAVE_OR_GET}\\b)`);
const someoneElse = new RegExp(`\\b${SOMEONE_ELSE}`);
const whose = new RegExp(`\\b${WHOSE}`);
const aCustomer = new RegExp(`\\b${A_CUSTOMER}`);
const claimedRole = new RegExp(`\\b${CLAIMED_ROLE}`);
/**
 * An operation commanded, not described: its verb starts a clause, after "please", "can you", "I want you to"
 * and their like ("se aplica a todos os clientes?" asks a question; "aplica o desconto a todos" commands).
 */
const COMMANDED = new RegExp(
  `(?:^\\W*|[,:]\\s*|\\b(?:and|e|y|und|et|ed|then|depois|luego|dann|puis|poi) )(?:(?:please|pls|por favor|porfa|bitte|stp|svp|s['’]il (?:te|vous) plait|per favore|now|agora|ahora|jetzt|maintenant|ora|adesso|just|go ahead and) )*${any(
    '(?:can|could|would|will) (?:you|u)(?: please)? ',
    '(?:pode|poderia|consegue|voce pode|vc pode)(?: me)? ',
    '(?:puedes|podrias|puede|podria)(?: me)? ',
    '(?:kannst du|konnen sie|konntest du|konnten sie) ',
    '(?:peux-tu|pouvez-vous|tu peux|vous pouvez) ',
    '(?:puoi|potresti|potete|puo) ',
    '(?:i want you to|i need you to|quero que (?:voce |vc )?|preciso que (?:voce |vc )?|quiero que|necesito que) ',
  )}?${OPERATION}\\b`,
);

export type ForeignDataRule =
  'everyone' | 'someone_else' | 'whose_number' | 'named_customer' | 'claimed_role' | 'bulk_operation';

/** The sentences of a folded form: split at ., !, ?, ; and line breaks followed by a space or the end. */
const sentencesOf = (form: string) =>
  form
    .split(/[.!?;\n]+(?=\s|$)/)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence !== '');

/**
 * A request whose object, after its verb, is someone's data (not the sender's) or a list of customers: "I got
 * another customer's bill, can you send me mine?" asks for nothing of theirs.
 */
function asksForTheirData(sentence: string): boolean {
  const asked = request.exec(sentence);
  if (asked !== null && theirData.test(sentence.slice(asked.index))) return true;
  const what = question.exec(sentence);
  return what !== null && theirDataAsked.test(sentence.slice(what.index));
}

/** Which rule a sentence breaks, with what the message says around it. */
function ruleOf(sentence: string, named: boolean, role: boolean): ForeignDataRule | null {
  if (whose.test(sentence)) return 'whose_number';
  if (asksForTheirData(sentence)) {
    if (everyone.test(sentence)) return 'everyone';
    if (someoneElse.test(sentence)) return 'someone_else';
    if (named) return 'named_customer';
    if (role && aCustomer.test(sentence)) return 'claimed_role';
  }
  const acting = COMMANDED.exec(sentence);
  if (acting) {
    // over whom the operation runs comes after its verb: "can other customers change plans?" runs nothing on them
    const object = sentence.slice(acting.index);
    if (hasRange(sentence) || everyone.test(object)) return 'bulk_operation';
    if (othersThing.test(object)) return 'someone_else';
    if (role && aCustomer.test(sentence)) return 'claimed_role';
  }
  return null;
}

/** The rule a message breaks and the sentence that breaks it, or null. */
export function screenForeignData(text: string): { rule: ForeignDataRule; match: string } | null {
  const named = NAMED_CUSTOMER.test(withoutInvisible(text).normalize('NFKC'));
  for (const form of screenForms(text)) {
    const role = claimedRole.test(form);
    for (const sentence of sentencesOf(form)) {
      const rule = ruleOf(sentence, named, role);
      if (rule) return { rule, match: sentence };
    }
  }
  return null;
}
