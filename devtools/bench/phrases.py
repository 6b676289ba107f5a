"""Phrase templates for the synthetic histories: support chats about orders, payments and
deliveries, in Portuguese and English. Placeholders are filled by `devtools.bench.history`."""

from __future__ import annotations

from typing import Final

Language = str  # "pt" or "en"
Topic = str  # one of TOPICS

TOPICS: Final = ("order", "payment", "delivery", "return")

USER: Final[dict[Language, dict[Topic, tuple[str, ...]]]] = {
    "pt": {
        "order": (
            "Oi, queria saber do meu pedido {order}. Já faz {days} dias e nada ainda.",
            "O pedido {order} aparece como 'em separação' desde {weekday}, está tudo certo?",
            "Vocês conseguem ver se o {order} já saiu do centro de distribuição?",
            "Comprei {item} no pedido {order} e queria trocar o tamanho, dá tempo?",
            "Posso incluir mais um item no pedido {order} ou preciso fazer outro?",
            "ok",
            "Beleza, obrigada!",
            "Mas e o prazo? Eu preciso disso até {weekday}.",
        ),
        "payment": (
            "Paguei o pedido {order} via Pix ontem, a chave era {pix}. Caiu aí?",
            "O boleto do pedido {order} venceu, vocês podem gerar outro?",
            "Foi cobrado duas vezes no meu cartão final {card}, valor {amount}.",
            "Dá pra parcelar {amount} em 3x sem juros?",
            "Acabei de mandar o comprovante, confere por favor.",
            "Certo, vou aguardar a confirmação.",
        ),
        "delivery": (
            "O rastreio {tracking} não atualiza desde {weekday}.",
            "Meu CEP é {cep}, vocês entregam no sábado?",
            "O entregador disse que não tinha ninguém, mas eu estava em casa o dia todo!",
            "Pode entregar na portaria? O endereço é {street}, {number}.",
            "Chegou, mas a caixa veio amassada.",
            "Que horas mais ou menos passa o entregador?",
        ),
        "return": (
            "Quero devolver {item} do pedido {order}, não serviu.",
            "Como faço pra pedir o reembolso de {amount}?",
            "Já postei a devolução, o código é {tracking}.",
            "Prefiro vale-compra em vez do estorno, pode ser?",
        ),
    },
    "en": {
        "order": (
            "Hi, any news on order {order}? It has been {days} days.",
            "My order {order} still says 'processing' since {weekday_en}. Is that normal?",
            "Can I add one more {item} to order {order}?",
            "Please cancel order {order}, I bought it twice by mistake.",
            "thanks",
            "Great, thank you!",
        ),
        "payment": (
            "I paid order {order} by card ending {card}, amount {amount}. Did it go through?",
            "The Pix key you sent ({pix}) does not work for me.",
            "I was charged twice: {amount} on {date}.",
            "Can I pay the rest by bank slip?",
            "Sent the receipt just now.",
        ),
        "delivery": (
            "Tracking {tracking} has not moved since {weekday_en}.",
            "Can you deliver to {street}, {number} instead? Postal code {cep}.",
            "The courier left a note but nobody rang the bell.",
            "Package arrived but one item is missing.",
        ),
        "return": (
            "I want to return the {item} from order {order}, wrong size.",
            "When will the refund of {amount} show up on my card?",
            "Return shipped, label {tracking}.",
        ),
    },
}

ASSISTANT: Final[dict[Language, dict[Topic, tuple[str, ...]]]] = {
    "pt": {
        "order": (
            "Olá! Verifiquei aqui: o pedido {order} foi separado e deve ser faturado em até "
            "{days} dias úteis. Assim que sair, você recebe o código de rastreio por aqui.",
            "Entendo a preocupação. O pedido {order} está na etapa de conferência; o prazo "
            "original de entrega continua valendo ({date}).",
            "Consigo trocar o tamanho antes do faturamento. Qual tamanho você prefere?",
            "Não é possível incluir itens em um pedido já pago, mas posso abrir um novo com o "
            "mesmo endereço e frete combinado.",
            "Por nada! Qualquer coisa é só chamar.",
        ),
        "payment": (
            "O pagamento via Pix do pedido {order} foi identificado às {hour}. Está tudo certo!",
            "Gerei um novo boleto com vencimento em {date}; o link é válido por 3 dias.",
            "Vi as duas cobranças de {amount}. Uma delas é só uma pré-autorização e some da "
            "fatura em até 5 dias úteis; se não sumir, abrimos o estorno.",
            "Parcelamos em até 3x sem juros no cartão para compras acima de R$ 300,00.",
            "Comprovante recebido, obrigado. A confirmação leva até 1 hora útil.",
        ),
        "delivery": (
            "O objeto {tracking} está em trânsito para a unidade de distribuição do seu CEP. "
            "A última atualização pode levar até 48 horas para aparecer.",
            "Entregamos de segunda a sábado no CEP {cep}, das 8h às 20h.",
            "Sinto muito pelo transtorno. Registrei uma reclamação com a transportadora e "
            "pedi uma nova tentativa de entrega para amanhã.",
            "Atualizei o endereço para {street}, {number}. A portaria pode receber, sim.",
            "Lamento pela embalagem. Pode me mandar uma foto da caixa e do produto?",
        ),
        "return": (
            "Claro! Gerei a etiqueta de devolução do pedido {order}; você tem 7 dias para "
            "postar em qualquer agência.",
            "O reembolso de {amount} é feito na mesma forma de pagamento em até 10 dias "
            "úteis depois que o produto chegar ao nosso centro.",
            "Vale-compra emitido no valor de {amount}, válido por 6 meses.",
        ),
    },
    "en": {
        "order": (
            "Hello! Order {order} has been picked and will be invoiced within {days} business "
            "days. You will get the tracking code here as soon as it ships.",
            "I checked: order {order} is in quality control, and the delivery estimate "
            "({date}) still holds.",
            "Order {order} is cancelled; the refund goes back to the original payment method.",
            "You're welcome! Anything else, just write.",
        ),
        "payment": (
            "The card payment for order {order} was approved at {hour}.",
            "Sorry about that. Here is a new Pix code, valid for 30 minutes.",
            "One of the two {amount} charges is a pre-authorization and will drop off within "
            "5 business days.",
            "Receipt received, thanks. Confirmation takes up to one business hour.",
        ),
        "delivery": (
            "Parcel {tracking} is on its way to your local hub; tracking can lag by up to "
            "48 hours.",
            "Address updated to {street}, {number}. The courier will come tomorrow between "
            "8 am and 8 pm.",
            "I have opened a claim with the carrier and requested a new delivery attempt.",
        ),
        "return": (
            "Sure. Your return label for order {order} is ready; you have 7 days to ship it.",
            "Refunds of {amount} reach your card within 10 business days after we receive "
            "the item.",
        ),
    },
}

# Assistant replies are model-written and usually run a sentence or two past the answer.
FOLLOW_UPS: Final[dict[Language, tuple[str, ...]]] = {
    "pt": (
        "Se preferir, posso te avisar por aqui assim que houver qualquer atualização.",
        "Lembrando que o prazo conta em dias úteis, a partir da confirmação do pagamento.",
        "Fico à disposição caso precise de mais alguma coisa com este ou outro pedido.",
        "Para sua segurança, nunca pedimos senhas ou códigos de verificação por mensagem.",
        "Se o problema continuar, abro um chamado com prioridade para a equipe de logística.",
        "Você também pode acompanhar tudo pelo app, na área Meus Pedidos.",
    ),
    "en": (
        "If you like, I can message you here as soon as anything changes.",
        "Please note that delivery times count business days from the payment confirmation.",
        "Happy to help with this or any other order.",
        "For your security, we never ask for passwords or verification codes by message.",
        "You can also follow every step in the app, under My Orders.",
    ),
}

SUMMARY: Final[dict[Language, tuple[str, ...]]] = {
    "pt": (
        "Cliente perguntou pelo pedido {order} ({item}); informado prazo de {days} dias úteis.",
        "Pagamento de {amount} via {method} confirmado em {date}.",
        "Rastreio {tracking} parado; aberta reclamação com a transportadora.",
        "Endereço de entrega atualizado para {street}, {number}, CEP {cep}.",
        "Cliente pediu devolução de {item}; etiqueta gerada, reembolso em até 10 dias.",
        "Cliente prefere ser atendida pelo WhatsApp depois das 18h.",
    ),
    "en": (
        "Customer asked about order {order} ({item}); told {days} business days.",
        "Payment of {amount} by {method} confirmed on {date}.",
        "Tracking {tracking} stalled; claim opened with the carrier.",
        "Delivery address changed to {street}, {number}, postal code {cep}.",
        "Customer returned the {item}; label issued, refund within 10 business days.",
    ),
}

PHONE_FILLERS: Final = ("é... ", "então, ", "tipo, ", "ahn, ", "olha, ", "")

ITEMS: Final = (
    "tênis de corrida",
    "jaqueta jeans",
    "fone bluetooth",
    "cafeteira elétrica",
    "mochila",
    "kit de panelas",
    "smartwatch",
    "vestido floral",
)
STREETS: Final = (
    "Rua Augusta",
    "Av. Paulista",
    "Rua das Laranjeiras",
    "Rua XV de Novembro",
    "Av. Sete de Setembro",
)
WEEKDAYS_PT: Final = ("segunda", "terça", "quarta", "quinta", "sexta", "sábado")
WEEKDAYS_EN: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
METHODS: Final = ("Pix", "cartão de crédito", "boleto")
CURRENT_MESSAGE: Final = "Oi de novo! Alguma novidade sobre a entrega? Preciso receber até sexta."
