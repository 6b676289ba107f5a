/*
 * Relaydesk web chat widget. Plain JavaScript, no build step, no third-party resources.
 *
 * Protocol (see gateway/webchat/routes.py): on open the widget sends
 *   {"type": "hello", "visitor_id", "identity_token", "after"}
 * where `after` is the highest message id received in a `message` frame, so the server replays
 * only what this page has not seen. (Ids from acks do not move it: a reply to an earlier message
 * may have a lower id and still be on its way.) Every message is rendered once, in id order:
 * stored messages are keyed by `message_id`, the visitor's own not-yet-stored messages by
 * `client_message_id`. Each shows its local time, and a reply its writer's name: "Bot", or the
 * operator's (`author: "operator"`, `author_name`); a reply citing the business's documents, the
 * titles and links its `[n]` markers stand for, under its text (`citations`).
 *
 * While a reply is being written the server may send `typing` frames (a typing indicator, shown
 * until the reply arrives or TYPING_SHOWN_MS after the last one) and `partial` frames (the reply
 * so far, whole, shown as a growing assistant bubble and never stored). Both carry `reply_to`, the
 * client_message_id answered; the stored reply (`message` with the same `reply_to`) takes over
 * that bubble. Partial bubbles are dropped on every new connection: the backlog brings the stored
 * reply, or the next partial brings the text again.
 *
 * The visitor id is issued by the server (`POST /webchat/visitors`, a signed value) and kept in
 * localStorage; a hello refused for it (not issued here, or a signed-in account's thread opened
 * without that account's token) makes the widget forget it and ask for a new one.
 *
 * Messages the server has not acknowledged stay in an outbox in localStorage and are resent with
 * the same `client_message_id` after every reconnect (the server stores them once).
 *
 * Identity token: `window.RelaydeskChat = {identityToken: "..."}` set before this script runs
 * (on a page of the gateway's origin that includes this script: `/chat` itself allows no inline
 * script). A parent frame may send `postMessage({type: "relaydesk:identity", token})` and the
 * widget reconnects with it (`token: null` drops it), but only a parent whose origin is listed
 * in the page's `<meta name="relaydesk-allowed-origins">` (RELAYDESK_WEBCHAT_ALLOWED_ORIGINS, the
 * same list `frame-ancestors` allows): any other framer's token would put what the visitor types
 * into the framer's account. The widget posts `{type: "relaydesk:ready"}` when it is listening,
 * addressed to those origins only. Never a token in the URL: URLs end up in logs and Referers.
 */
(() => {
  "use strict";

  const KEYS = { visitor: "relaydesk.visitor_id", outbox: "relaydesk.outbox" };
  // Issued and signed by the server (POST /webchat/visitors); never made up here.
  const VISITOR_ID = /^[0-9a-f]{32}_[0-9a-f]{64}$/;
  // Hello refusals that mean "this visitor id will not do": forget it and ask for a new one.
  const VISITOR_REFUSED = new Set(["invalid_visitor_id", "identity_required", "identity_mismatch"]);
  const CLIENT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
  const MESSAGE_ID = /^[0-9]{1,30}$/;
  const MAX_TEXT_CHARS = 8000;
  const BACKOFF_MIN_MS = 250;
  const BACKOFF_MAX_MS = 5000;
  // No ack this long after a send: the connection is treated as dead and replaced.
  const ACK_TIMEOUT_MS = 15000;
  // A typing frame shows the indicator this long; the server renews it every few seconds.
  const TYPING_SHOWN_MS = 8000;
  // Replies already shown as stored messages (by reply_to), so a late typing or partial frame
  // does not bring them back; the oldest are forgotten past this many.
  const MAX_ANSWERED = 200;

  const storage = makeStorage();
  const config = window.RelaydeskChat && typeof window.RelaydeskChat === "object"
    ? window.RelaydeskChat : {};
  // The parent origins that may hand this widget an identity token (the script is deferred:
  // the page's head is parsed by now).
  const ALLOWED_ORIGINS = allowedOrigins();

  const state = {
    visitorId: loadVisitorId(), // null until the server issued one
    token: initialToken(),
    socket: null,
    issuing: false, // a visitor id is being asked for
    ready: false,
    cursor: null, // highest message_id seen in a `message` frame
    inflight: [], // client ids sent on this socket, awaiting ack or error, in order
    backoff: BACKOFF_MIN_MS,
    reconnectTimer: 0,
    ackTimer: 0,
    statusName: "connecting",
    statusText: "Connecting…",
  };

  const byMessageId = new Map();
  const byClientId = new Map();
  const partials = new Map(); // reply_to → the assistant bubble growing with partial frames
  const typingTimers = new Map(); // reply_to → timer hiding its typing indicator
  const answered = new Set(); // reply_to of the stored replies shown

  let list, form, input, status, typing;

  // ---- storage ----------------------------------------------------------------------------

  function makeStorage() {
    const memory = new Map();
    let local = null;
    try {
      local = window.localStorage;
      local.setItem("relaydesk.probe", "1");
      local.removeItem("relaydesk.probe");
    } catch (_) {
      local = null; // storage blocked (privacy mode, third-party frame): this page only
    }
    return {
      get(key) {
        if (local) {
          try {
            return local.getItem(key);
          } catch (_) { /* fall through to memory */ }
        }
        return memory.has(key) ? memory.get(key) : null;
      },
      set(key, value) {
        memory.set(key, value);
        if (local) {
          try {
            local.setItem(key, value);
          } catch (_) { /* quota or blocked: memory copy still works */ }
        }
      },
    };
  }

  function randomId(prefix) {
    const bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function loadVisitorId() {
    const id = storage.get(KEYS.visitor);
    return id && VISITOR_ID.test(id) ? id : null;
  }

  // A visitor id from the server, kept for the next visits. Rejects when none could be had
  // (the caller retries with its back-off).
  async function issueVisitorId() {
    const response = await window.fetch("/webchat/visitors", { method: "POST", credentials: "omit" });
    if (response.status !== 201) throw new Error(`visitor id refused: ${response.status}`);
    const body = await response.json();
    if (!body || typeof body.visitor_id !== "string" || !VISITOR_ID.test(body.visitor_id)) {
      throw new Error("visitor id malformed");
    }
    storage.set(KEYS.visitor, body.visitor_id);
    return body.visitor_id;
  }

  function forgetVisitorId() {
    state.visitorId = null;
    state.cursor = null;
    storage.set(KEYS.visitor, "");
    // A new thread starts: nothing of the refused one stays on the page (it may be another
    // account's); messages still waiting in the outbox are sent on the new thread.
    const waiting = new Set(outbox.load().map((m) => m.client_message_id));
    for (const [clientId, item] of byClientId) {
      if (!waiting.has(clientId)) {
        item.remove();
        byClientId.delete(clientId);
      }
    }
    for (const item of byMessageId.values()) item.remove();
    byMessageId.clear();
    answered.clear();
    dropPartials();
  }

  function initialToken() {
    return typeof config.identityToken === "string" && config.identityToken
      ? config.identityToken : null;
  }

  function allowedOrigins() {
    const meta = document.querySelector('meta[name="relaydesk-allowed-origins"]');
    const content = meta ? meta.getAttribute("content") || "" : "";
    return content.split(/\s+/).filter((origin) => /^https?:\/\/[^/\s]+$/.test(origin));
  }

  // The outbox is read and written through storage on every change, so two tabs of the same
  // visitor do not overwrite each other's pending messages.
  const outbox = {
    load() {
      try {
        const items = JSON.parse(storage.get(KEYS.outbox) || "[]");
        return Array.isArray(items)
          ? items.filter((m) => m && typeof m.text === "string" && CLIENT_ID.test(m.client_message_id))
          : [];
      } catch (_) {
        return [];
      }
    },
    add(entry) {
      const items = outbox.load();
      items.push(entry);
      storage.set(KEYS.outbox, JSON.stringify(items));
    },
    remove(clientId) {
      const items = outbox.load();
      const kept = items.filter((m) => m.client_message_id !== clientId);
      if (kept.length !== items.length) storage.set(KEYS.outbox, JSON.stringify(kept));
    },
  };

  // ---- rendering --------------------------------------------------------------------------

  function idLess(a, b) {
    // Decimal strings of any length, compared without losing precision.
    return a.length !== b.length ? a.length < b.length : a < b;
  }

  // Who wrote a message, from its frame's `author` and `author_name`: the visitor, the bot,
  // or an operator by name. A reply shows its writer's name; the visitor's own messages are
  // named for screen readers only.
  function authorOf(frame) {
    if (frame.role === "user") return { kind: "customer", name: "You" };
    if (frame.author === "operator" && typeof frame.author_name === "string" && frame.author_name.trim()) {
      return { kind: "operator", name: frame.author_name.trim() };
    }
    return { kind: "bot", name: "Bot" };
  }

  function bubble(role, text, createdAt, author) {
    const item = document.createElement("li");
    const mine = role === "user";
    const writer = author || authorOf({ role });
    item.className = mine ? "msg msg--user" : `msg msg--assistant msg--${writer.kind}`;
    item.dataset.author = writer.kind;
    const who = document.createElement("p");
    who.className = mine ? "visually-hidden" : "msg__author";
    who.textContent = writer.name; // text only, never markup: an operator's name is typed in
    const body = document.createElement("p");
    body.className = "msg__text";
    body.textContent = text; // text only, never markup: message text is untrusted
    const footer = document.createElement("p");
    footer.className = "msg__meta";
    const when = document.createElement("time");
    when.className = "msg__time";
    footer.append(when);
    if (mine) {
      const meta = document.createElement("span");
      meta.className = "msg__status";
      footer.append(meta);
    }
    item.append(who, body, footer);
    setBubbleTime(item, createdAt);
    return item;
  }

  // The time a message was written, in the visitor's local time (hours and minutes; the
  // date too, in the tooltip).
  function setBubbleTime(item, createdAt) {
    const time = item.querySelector(".msg__time");
    const when = createdAt === null || createdAt === undefined ? null : new Date(createdAt);
    if (!time || !when || Number.isNaN(when.getTime())) return;
    time.dateTime = when.toISOString();
    time.textContent = when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    item.title = when.toLocaleString();
  }

  // A reply's attachments (frame.media: [{url, content_type, caption, filename}]) as links
  // under its text; only http(s) URLs, opened in a new tab without the page as opener.
  function addAttachments(item, media) {
    if (!Array.isArray(media)) return;
    const links = [];
    for (const m of media) {
      if (!m || typeof m.url !== "string" || !/^https?:\/\//i.test(m.url)) continue;
      const link = document.createElement("a");
      link.className = "msg__attachment";
      link.href = m.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      const name = (typeof m.caption === "string" && m.caption) || (typeof m.filename === "string" && m.filename);
      link.textContent = name || m.url.split("/").pop() || m.url; // text only, never markup
      links.push(link);
    }
    if (!links.length) return;
    const list = document.createElement("p");
    list.className = "msg__attachments";
    list.append(...links);
    item.insertBefore(list, item.querySelector(".msg__meta")); // above the time
  }

  // The documents a reply's `[n]` markers cite (frame.citations: [{number, title, url}]) as a
  // small "Sources" list under its text. Only an http(s) URL becomes a link (a new tab, without
  // the page as opener or referrer); any other is left out and the title shown as plain text.
  function addCitations(item, citations) {
    if (!Array.isArray(citations)) return;
    const entries = [];
    for (const c of citations) {
      if (!c || !Number.isInteger(c.number) || typeof c.title !== "string") continue;
      const linked = typeof c.url === "string" && /^https?:\/\//i.test(c.url);
      const label = c.title.trim() || (linked ? c.url : "");
      if (!label) continue;
      const entry = document.createElement("li");
      entry.className = "msg__source";
      const number = document.createElement("span");
      number.className = "msg__source-number";
      number.textContent = `[${c.number}]`;
      const name = document.createElement(linked ? "a" : "span");
      name.className = "msg__source-title";
      if (linked) {
        name.href = c.url;
        name.target = "_blank";
        name.rel = "noopener noreferrer";
      }
      name.textContent = label; // text only, never markup: a document's title is typed in
      entry.append(number, name);
      entries.push(entry);
    }
    if (!entries.length) return;
    const box = document.createElement("div");
    box.className = "msg__sources";
    const heading = document.createElement("p");
    heading.className = "msg__sources-title";
    heading.id = randomId("sources-");
    heading.textContent = "Sources";
    const sources = document.createElement("ol");
    sources.className = "msg__sources-list";
    sources.setAttribute("aria-labelledby", heading.id);
    sources.append(...entries);
    box.append(heading, sources);
    item.insertBefore(box, item.querySelector(".msg__meta")); // above the time
  }

  // ---- choices (the satisfaction question's 1-5) --------------------------------------------
  // Buttons sent with a live reply: a tap sends the choice's title as the visitor's message
  // (the gateway reads a bare "4" as the score) and the buttons go.
  function addChoices(item, choices) {
    if (!Array.isArray(choices) || !choices.length) return;
    const row = document.createElement("p");
    row.className = "msg__choices";
    for (const c of choices) {
      if (!c || typeof c.title !== "string" || !c.title) continue;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "msg__choice";
      button.textContent = c.title; // text only, never markup
      button.addEventListener("click", () => {
        row.remove();
        send(c.title);
      });
      row.append(button);
    }
    if (row.childElementCount) item.insertBefore(row, item.querySelector(".msg__meta"));
  }

  function setBubbleStatus(item, value) {
    item.dataset.status = value;
    const meta = item.querySelector(".msg__status");
    if (meta) {
      meta.textContent = { sending: "Sending…", sent: "Sent", failed: "Not delivered" }[value] || "";
    }
  }

  // Stored messages in id order; the visitor's pending messages after them, in send order.
  function place(item) {
    const id = item.dataset.messageId;
    if (!id && item.parentNode === list) return;
    let before = null;
    if (id) {
      for (const child of list.children) {
        if (child === item) continue;
        const other = child.dataset.messageId;
        if (!other || idLess(id, other)) {
          before = child;
          break;
        }
      }
    }
    if (item.parentNode === list && item.nextElementSibling === before) return;
    const stick = nearBottom();
    list.insertBefore(item, before);
    if (stick) scrollToBottom();
  }

  function nearBottom() {
    return list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  }

  function scrollToBottom() {
    list.scrollTop = list.scrollHeight;
  }

  function pendingBubble(entry) {
    let item = byClientId.get(entry.client_message_id);
    if (item) return item;
    item = bubble("user", entry.text, entry.created_at);
    item.dataset.clientMessageId = entry.client_message_id;
    setBubbleStatus(item, "sending");
    byClientId.set(entry.client_message_id, item);
    place(item);
    return item;
  }

  function stored(item, messageId) {
    item.dataset.messageId = messageId;
    byMessageId.set(messageId, item);
    place(item);
  }

  function setBubbleText(item, text) {
    const stick = nearBottom();
    item.querySelector(".msg__text").textContent = text; // text only, never markup
    if (stick) scrollToBottom();
  }

  // The indicator shows while some reply is being written that has no partial bubble yet
  // (a growing bubble already says the reply is being written).
  function renderTyping() {
    let waiting = false;
    for (const replyTo of typingTimers.keys()) {
      if (!partials.has(replyTo)) waiting = true;
    }
    if (typing.hidden === !waiting) return;
    const stick = nearBottom();
    typing.hidden = !waiting;
    if (stick) scrollToBottom();
  }

  function stopTyping(replyTo) {
    window.clearTimeout(typingTimers.get(replyTo));
    typingTimers.delete(replyTo);
  }

  function dropPartials() {
    for (const item of partials.values()) item.remove();
    partials.clear();
    for (const replyTo of Array.from(typingTimers.keys())) stopTyping(replyTo);
    renderTyping();
  }

  function replyKey(value) {
    return typeof value === "string" && CLIENT_ID.test(value) ? value : null;
  }

  // ---- protocol ---------------------------------------------------------------------------

  function onMessageFrame(frame) {
    const id = frame.message_id;
    if (typeof id !== "string" || !MESSAGE_ID.test(id) || typeof frame.text !== "string") return;
    if (state.cursor === null || idLess(state.cursor, id)) state.cursor = id;
    const replyTo = frame.role === "assistant" ? replyKey(frame.reply_to) : null;
    let growing;
    if (replyTo !== null) {
      growing = partials.get(replyTo);
      partials.delete(replyTo);
      stopTyping(replyTo);
      answered.add(replyTo);
      if (answered.size > MAX_ANSWERED) answered.delete(answered.values().next().value);
      renderTyping();
    }
    if (byMessageId.has(id)) {
      if (growing) growing.remove(); // already shown as stored (replayed before this frame)
      return;
    }
    if (growing) {
      // The stored message takes the growing bubble's place, not a second one. A new node, so
      // that screen readers announce the finished reply (the growing one is hidden from them).
      const item = bubble("assistant", frame.text, frame.created_at, authorOf(frame));
      addAttachments(item, frame.media);
      addCitations(item, frame.citations);
      addChoices(item, frame.choices);
      const stick = nearBottom();
      growing.replaceWith(item);
      stored(item, id);
      if (stick) scrollToBottom();
      return;
    }
    const clientId = frame.role === "user" ? frame.client_message_id : null;
    if (typeof clientId === "string" && clientId) outbox.remove(clientId); // stored: not resent
    let item = typeof clientId === "string" ? byClientId.get(clientId) : undefined;
    if (item) {
      if (item.dataset.messageId) return; // the same message under an ack we already applied
      setBubbleTime(item, frame.created_at); // the server's time, not the browser's
    } else {
      item = bubble(frame.role, frame.text, frame.created_at, authorOf(frame));
      addAttachments(item, frame.media);
      addCitations(item, frame.citations);
      addChoices(item, frame.choices);
      if (typeof clientId === "string" && clientId) {
        item.dataset.clientMessageId = clientId;
        byClientId.set(clientId, item);
      }
    }
    if (frame.role === "user") setBubbleStatus(item, "sent");
    stored(item, id);
  }

  function onTyping(frame) {
    const replyTo = replyKey(frame.reply_to);
    if (replyTo === null || answered.has(replyTo)) return;
    stopTyping(replyTo);
    typingTimers.set(
      replyTo,
      window.setTimeout(() => {
        typingTimers.delete(replyTo);
        renderTyping();
      }, TYPING_SHOWN_MS),
    );
    renderTyping();
  }

  function onPartial(frame) {
    const replyTo = replyKey(frame.reply_to);
    if (replyTo === null || answered.has(replyTo) || typeof frame.text !== "string") return;
    let item = partials.get(replyTo);
    if (!item) {
      item = bubble("assistant", "", Date.now());
      item.classList.add("msg--partial");
      item.dataset.replyTo = replyTo;
      item.setAttribute("aria-hidden", "true"); // announced once finished, not word by word
      partials.set(replyTo, item);
      place(item);
    }
    setBubbleText(item, frame.text); // the whole reply so far: it may be shorter than before
    renderTyping();
  }

  function onAck(frame) {
    const clientId = frame.client_message_id;
    state.backoff = BACKOFF_MIN_MS; // the server stores again: the connection is healthy
    settle(clientId);
    outbox.remove(clientId);
    const item = byClientId.get(clientId);
    if (!item) return;
    setBubbleStatus(item, "sent");
    const id = frame.message_id;
    if (item.dataset.messageId || typeof id !== "string" || !MESSAGE_ID.test(id)) return;
    const shown = byMessageId.get(id);
    if (shown && shown !== item) {
      byClientId.set(clientId, shown);
      item.remove();
      return;
    }
    stored(item, id);
  }

  function onError(frame) {
    if (!state.ready) {
      // The hello was refused: start over with a fresh connection (and, if the visitor id
      // itself was refused, a fresh one: a thread of a signed-in account without its token).
      if (VISITOR_REFUSED.has(frame.error)) forgetVisitorId();
      showStatus("error", "The chat could not start. Retrying…");
      replaceSocket();
      return;
    }
    // The server answers each message frame, in order, with an ack or an error.
    const clientId = state.inflight[0];
    if (clientId === undefined) return;
    settle(clientId);
    outbox.remove(clientId);
    const item = byClientId.get(clientId);
    if (item) setBubbleStatus(item, "failed");
    renderStatus();
    console.warn("relaydesk: message refused", frame.error, frame.detail);
  }

  function settle(clientId) {
    const index = state.inflight.indexOf(clientId);
    if (index >= 0) state.inflight.splice(index, 1);
    armAckTimer();
  }

  function armAckTimer() {
    window.clearTimeout(state.ackTimer);
    state.ackTimer = 0;
    if (state.inflight.length) state.ackTimer = window.setTimeout(replaceSocket, ACK_TIMEOUT_MS);
  }

  function transmit(entry) {
    if (!state.ready || state.inflight.includes(entry.client_message_id)) return;
    try {
      state.socket.send(
        JSON.stringify({ type: "message", text: entry.text, client_message_id: entry.client_message_id }),
      );
    } catch (_) {
      return; // the close event follows; the entry stays in the outbox
    }
    state.inflight.push(entry.client_message_id);
    if (!state.ackTimer) armAckTimer();
  }

  function flushOutbox() {
    for (const entry of outbox.load()) {
      pendingBubble(entry);
      transmit(entry);
    }
  }

  function onFrame(frame) {
    if (!frame || typeof frame !== "object") return;
    switch (frame.type) {
      case "ready":
        state.ready = true;
        dropPartials(); // the backlog or the next partial frames bring them back
        // With messages to resend, only their acks prove the connection healthy: a server
        // that fails on them keeps backing off instead of retrying four times a second.
        if (!outbox.load().length) state.backoff = BACKOFF_MIN_MS;
        showStatus("connected", "Connected");
        flushOutbox();
        break;
      case "message":
        onMessageFrame(frame);
        break;
      case "ack":
        onAck(frame);
        break;
      case "typing":
        onTyping(frame);
        break;
      case "partial":
        onPartial(frame);
        break;
      case "error":
        onError(frame);
        break;
      default:
        break;
    }
  }

  // ---- connection -------------------------------------------------------------------------

  function socketUrl() {
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    return scheme + window.location.host + "/webchat/ws";
  }

  function connect() {
    window.clearTimeout(state.reconnectTimer);
    state.reconnectTimer = 0;
    if (state.socket || state.issuing) return;
    showStatus("connecting", "Connecting…");
    if (!state.visitorId) {
      state.issuing = true;
      issueVisitorId().then(
        (id) => {
          state.issuing = false;
          state.visitorId = id;
          connect();
        },
        () => {
          state.issuing = false;
          scheduleReconnect();
        },
      );
      return;
    }
    let socket;
    try {
      socket = new WebSocket(socketUrl());
    } catch (_) {
      scheduleReconnect();
      return;
    }
    state.socket = socket;
    state.ready = false;
    state.inflight = [];
    socket.onopen = () => {
      socket.send(
        JSON.stringify({
          type: "hello",
          visitor_id: state.visitorId,
          identity_token: state.token,
          after: state.cursor,
        }),
      );
    };
    socket.onmessage = (event) => {
      if (socket !== state.socket || typeof event.data !== "string") return;
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch (_) {
        return;
      }
      onFrame(frame);
    };
    socket.onclose = () => {
      if (socket !== state.socket) return;
      detach();
      scheduleReconnect();
    };
  }

  function detach() {
    const socket = state.socket;
    state.socket = null;
    state.ready = false;
    state.inflight = [];
    window.clearTimeout(state.ackTimer);
    state.ackTimer = 0;
    return socket;
  }

  // Drop the current socket without waiting for its close handshake, then reconnect.
  function replaceSocket() {
    const socket = detach();
    if (socket) {
      try {
        socket.close();
      } catch (_) { /* already closing */ }
    }
    scheduleReconnect();
  }

  function reconnectNow() {
    const socket = detach();
    if (socket) {
      try {
        socket.close();
      } catch (_) { /* already closing */ }
    }
    state.backoff = BACKOFF_MIN_MS;
    connect();
  }

  function scheduleReconnect() {
    if (state.reconnectTimer || state.socket || state.issuing) return;
    const delay = state.backoff;
    state.backoff = Math.min(state.backoff * 2, BACKOFF_MAX_MS);
    const seconds = Math.round(delay / 1000);
    showStatus(
      "reconnecting",
      seconds >= 1 ? `Connection lost. Reconnecting in ${seconds} s…` : "Connection lost. Reconnecting…",
    );
    state.reconnectTimer = window.setTimeout(connect, delay);
  }

  function showStatus(name, text) {
    state.statusName = name;
    state.statusText = text;
    renderStatus();
  }

  function renderStatus() {
    const waiting = state.ready ? 0 : outbox.load().length;
    const queued = waiting === 1 ? " 1 message waiting to be sent." : ` ${waiting} messages waiting to be sent.`;
    status.dataset.state = state.statusName;
    status.textContent = state.statusText + (waiting ? queued : "");
  }

  // ---- input ------------------------------------------------------------------------------

  function send(text) {
    const entry = { client_message_id: randomId("c"), text, created_at: Date.now() };
    outbox.add(entry);
    pendingBubble(entry);
    scrollToBottom(); // the list only: scrollIntoView would scroll the page around it too
    if (state.ready) transmit(entry);
    else renderStatus();
  }

  function onSubmit(event) {
    event.preventDefault();
    const text = input.value;
    if (!text.trim()) return;
    if (text.length > MAX_TEXT_CHARS) return; // maxlength already stops this when typing
    input.value = "";
    send(text);
    input.focus();
  }

  function onKeyDown(event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  }

  function onParentMessage(event) {
    if (window.parent === window || event.source !== window.parent) return;
    if (!ALLOWED_ORIGINS.includes(event.origin)) return; // a framer not listed: never its token
    const data = event.data;
    if (!data || typeof data !== "object" || data.type !== "relaydesk:identity") return;
    const token = typeof data.token === "string" && data.token ? data.token : null;
    if (token === state.token) return;
    state.token = token;
    showIdentity();
    reconnectNow(); // the token is presented in the hello, so it takes a new connection
  }

  // Whether this page speaks with an identity token (for the host page's styling and tests).
  function showIdentity() {
    document.body.dataset.identity = state.token ? "token" : "anonymous";
  }

  function start() {
    list = document.getElementById("chat-messages");
    form = document.getElementById("chat-form");
    input = document.getElementById("chat-input");
    status = document.getElementById("chat-status");
    typing = document.getElementById("chat-typing");
    if (!list || !form || !input || !status || !typing) return;
    form.addEventListener("submit", onSubmit);
    input.addEventListener("keydown", onKeyDown);
    window.addEventListener("message", onParentMessage);
    window.addEventListener("online", () => {
      if (!state.socket) reconnectNow();
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && !state.socket) reconnectNow();
    });
    showIdentity();
    for (const entry of outbox.load()) pendingBubble(entry);
    connect();
    announceReady();
  }

  // Tells the host page it may now post the identity token: addressed to each allowed origin,
  // never to "*" (the browser delivers it only where the parent is of that origin).
  function announceReady() {
    if (window.parent === window) return;
    for (const origin of ALLOWED_ORIGINS) {
      window.parent.postMessage({ type: "relaydesk:ready" }, origin);
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
