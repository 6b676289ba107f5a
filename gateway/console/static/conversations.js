// Relaydesk console: the live conversations pages. Reads the operator API under the page's
// login (cookie + X-CSRF-Token on writes) and reads it again whenever the change stream says
// something changed. Customer text only ever goes in through textContent.
(function () {
  "use strict";

  const live = document.getElementById("live");
  if (!live) return;
  const csrf = live.dataset.csrf;
  const operator = live.dataset.operator;
  const status = document.getElementById("live-status");
  const API = "/v1/operator/conversations";
  const conversationId = live.dataset.conversation;  // none on the list page

  function make(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  async function getJson(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`${url}: ${response.status}`);
    return response.json();
  }

  async function postJson(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
    let data = {};
    try { data = await response.json(); } catch (_) { /* no body */ }
    if (!response.ok) throw new Error(data.detail || data.error || `${response.status}`);
    return data;
  }

  function age(iso) {
    const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    if (seconds < 60) return `${seconds} s`;
    if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
    if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
    return `${Math.floor(seconds / 86400)} d`;
  }

  function when(iso) {
    return iso ? new Date(iso).toLocaleString() : "—";
  }

  // --- the list ---------------------------------------------------------------------------

  function ago(iso) {
    return iso ? `${age(iso)} ago` : "";
  }

  // A text badge per channel (no icon font, nothing fetched): the letters, then the name.
  const CHANNEL_MARKS = { whatsapp: "WA", telegram: "TG", webchat: "WEB", voice: "TEL" };

  function channelBadge(channel) {
    return make("span", { class: `tag channel channel-${channel}`, title: channel },
      make("b", { class: "mark", "aria-hidden": "true" }, CHANNEL_MARKS[channel] || "•"),
      make("span", { class: "channel-name" }, ` ${channel}`));
  }

  function preview(c) {
    const p = c.preview;
    if (!p) return make("span", { class: "preview muted" }, "no message yet");
    return make("span", { class: "preview" }, p.from === "customer" ? "" : "↩ ", p.text);
  }

  // One conversation in the list: name, unread count and time; the last message; channel,
  // link level and who answers it. The row marked `aria-current` is the open conversation.
  function row(c) {
    const who = c.owner === "human" ? `held by ${c.held_by || "?"} for ${age(c.since)}`
      : c.owner === "waiting" ? `waiting ${age(c.since)}` : "with the bot";
    const last = c.preview ? c.preview.at : c.last_message_at;
    const open = c.id === conversationId;
    return make("li", { "data-conversation": c.id, class: c.waiting_too_long ? "late" : null, "aria-current": open ? "page" : null },
      make("div", { class: "row-head" },
        make("a", { href: `/console/conversations/${c.id}`, class: "name", "aria-current": open ? "page" : null }, c.name || c.channel),
        c.unread ? make("span", { class: "unread", title: `${c.unread} unread`, "data-unread": c.unread }, String(c.unread)) : null,
        make("time", { datetime: last, title: when(last) }, ago(last))),
      preview(c),
      make("div", { class: "row-tags" }, channelBadge(c.channel),
        c.link_level ? make("span", { class: `tag level level-${c.link_level}` }, c.link_level) : null,
        make("span", { class: "state" }, who),
        c.assigned_to ? make("span", { class: "assigned" }, `assigned to ${c.assigned_to}`) : null,
        c.waiting_too_long ? make("strong", { class: "late" }, "waiting too long") : null,
        c.held_replies ? make("strong", { class: "late" }, `${c.held_replies} held (outside the window)`) : null));
  }

  function section(id, items, empty, shown) {
    const box = document.getElementById(id);
    const heading = box.querySelector("h3");
    box.replaceChildren(heading);
    box.hidden = !shown;
    box.append(items.length ? make("ul", { class: "pane-list" }, ...items.map(row)) : make("p", { class: "muted" }, empty));
  }

  // `/console`'s queue pane: the whole list in numbers, whatever the view.
  function showSummary(all) {
    const box = document.getElementById("queue-summary");
    if (!box) return;
    const count = (test) => String(all.filter(test).length);
    const figures = [
      ["Waiting for a person", count((c) => c.owner === "waiting")],
      ["With an operator", count((c) => c.owner === "human")],
      ["With the bot", count((c) => c.owner === "bot")],
      ["Assigned to you", count((c) => c.assigned_to === operator)],
      ["Unassigned", count((c) => c.owner !== "human" && !c.assigned_to)],
      ["With unread messages", count((c) => c.unread > 0)],
    ];
    box.replaceChildren(...figures.flatMap(([label, value]) => [make("dt", null, label), make("dd", null, value)]));
  }

  // --- views and filters ------------------------------------------------------------------

  const VIEWS = {
    all: () => true,
    waiting: (c) => c.owner === "waiting",
    mine: (c) => (c.owner === "human" && c.held_by === operator) || c.assigned_to === operator,
    unassigned: (c) => c.owner !== "human" && !c.assigned_to,
    bot: (c) => c.owner === "bot",
  };
  const filters = { view: "all", channel: "", tenant: "", q: "" };
  const seen = { channel: new Set(), tenant: new Set() };

  function listUrl() {
    const params = new URLSearchParams();
    for (const name of ["channel", "tenant", "q"]) if (filters[name]) params.set(name, filters[name]);
    const query = params.toString();
    return query ? `${API}?${query}` : API;
  }

  // The filters' options: every channel and tenant the list has shown so far.
  function offer(name, values) {
    const select = document.getElementById(`filter-${name}`);
    if (!select) return;
    let added = false;
    for (const value of values) {
      if (!value || seen[name].has(value)) continue;
      seen[name].add(value);
      select.append(make("option", { value }, value));
      added = true;
    }
    if (added) select.value = filters[name];
  }

  function bindFilters() {
    for (const button of document.querySelectorAll("[data-inbox-view]")) {
      button.addEventListener("click", () => {
        filters.view = button.dataset.inboxView;
        for (const other of document.querySelectorAll("[data-inbox-view]")) {
          other.setAttribute("aria-pressed", other === button ? "true" : "false");
        }
        refresh();
      });
    }
    for (const name of ["channel", "tenant"]) {
      const select = document.getElementById(`filter-${name}`);
      if (select) select.addEventListener("change", () => { filters[name] = select.value; refresh(); });
    }
    const search = document.getElementById("message-search");
    if (search) search.addEventListener("submit", (event) => {
      event.preventDefault();
      filters.q = document.getElementById("message-q").value.trim();
      refresh();
    });
  }

  async function showList() {
    const data = await getJson(listUrl());
    const all = data.conversations || [];
    offer("channel", all.map((c) => c.channel));
    offer("tenant", all.map((c) => c.tenant));
    showSummary(all);
    const kept = all.filter(VIEWS[filters.view] || VIEWS.all);
    const everything = filters.view === "all";
    const of = (owner) => kept.filter((c) => c.owner === owner);
    const nothing = filters.q ? "No conversation has a message with that text." : null;
    section("waiting", of("waiting"), nothing || "Nobody is waiting for a person.", everything || of("waiting").length > 0 || !kept.length);
    section("human", of("human"), nothing || "No conversation is held by an operator.", everything || of("human").length > 0);
    section("bot", of("bot"), nothing || "No conversation yet.", everything || of("bot").length > 0);
  }

  // --- one conversation -------------------------------------------------------------------

  let current = null;

  function messageItem(m) {
    const author = m.author === "operator" ? `operator ${m.actor || ""}`.trim() : m.author || m.role;
    const tags = [make("span", { class: `tag channel-${m.channel}` }, m.channel), make("span", { class: "tag" }, author)];
    if (m.transcript_confidence !== null && m.transcript_confidence !== undefined) {
      tags.push(make("span", { class: "tag uncertain" }, `confidence ${Number(m.transcript_confidence).toFixed(2)}`));
    }
    const delivery = m.delivery || null;
    if (delivery && delivery.status) tags.push(make("span", { class: `tag delivery-${delivery.status}` }, delivery.status));
    if (delivery && delivery.error) tags.push(make("span", { class: "tag bad" }, delivery.error));
    return make("li", { class: `message ${m.author === "operator" ? "operator" : m.role}`, "data-message": m.id },
      make("div", { class: "meta" }, ...tags, make("time", { datetime: m.created_at }, when(m.created_at))),
      make("div", { class: "text" }, m.text),
      ...attachments(m.media));
  }

  // Attachments as links (http(s) only) labelled with their caption, file name or type.
  function attachments(media) {
    const links = (Array.isArray(media) ? media : [])
      .filter((a) => a && typeof a.url === "string" && /^https?:\/\//i.test(a.url))
      .map((a) => make("a", { class: "attachment", href: a.url, target: "_blank", rel: "noopener noreferrer" },
        `📎 ${a.caption || a.filename || a.content_type || "attachment"}`));
    return links.length ? [make("div", { class: "attachments" }, ...links)] : [];
  }

  function showControls(c) {
    const mine = c.owner === "human" && c.held_by === operator;
    document.getElementById("take").hidden = mine || (c.owner === "human" && c.held_by !== operator);
    showReplyModes(mine);
    document.getElementById("handback").hidden = !mine;
    const owner = document.getElementById("owner");
    owner.textContent = c.owner === "human" ? `Held by ${c.held_by} since ${when(c.since)}`
      : c.owner === "waiting" ? `Waiting for a person for ${age(c.since)}` : "Answered by the bot";
    owner.dataset.owner = c.owner;
  }

  // Internal notes: in the thread among the messages (by time), styled apart, operators only.
  function noteItem(n) {
    return make("li", { class: "message note", "data-note": n.id },
      make("div", { class: "meta" }, make("span", { class: "tag note" }, `note · ${n.author}`),
        make("time", { datetime: n.created_at }, when(n.created_at))),
      make("div", { class: "text" }, n.text));
  }

  function threadItems(messages, notes) {
    const items = [...messages.map((m) => [m.created_at, messageItem(m)]), ...notes.map((n) => [n.created_at, noteItem(n)])];
    items.sort((a, b) => new Date(a[0]) - new Date(b[0]));
    return items.map((pair) => pair[1]);
  }

  // The reply box: a reply only by the operator holding the conversation, a note by anyone.
  function replyMode() {
    const checked = document.querySelector('#reply-form input[name="mode"]:checked');
    return checked ? checked.value : "reply";
  }

  // Canned replies: "/" then part of a shortcut lists them; the one picked lands in the box
  // with the customer's facts filled in. A placeholder with no fact stays visible, and the
  // box refuses to send while it is there.
  let canned = [];
  let unfilled = [];

  function cannedMatches(value) {
    if (!value.startsWith("/")) return [];
    const wanted = value.slice(1).trim().toLowerCase();
    return canned.filter((r) => r.shortcut.toLowerCase().includes(wanted) || r.text.toLowerCase().includes(wanted));
  }

  function pickCanned(reply) {
    const field = document.getElementById("reply-text");
    field.value = reply.text;
    unfilled = reply.unfilled || [];
    showCanned([]);
    field.focus();
  }

  function showCanned(matches) {
    const list = document.getElementById("canned");
    list.hidden = matches.length === 0;
    list.replaceChildren(...matches.map((r) => {
      const item = make("li", { role: "option", "data-shortcut": r.shortcut },
        make("strong", null, `/${r.shortcut}`), " ", make("span", null, r.text));
      item.addEventListener("mousedown", (event) => { event.preventDefault(); pickCanned(r); });
      return item;
    }));
  }

  function stillUnfilled(text) {
    return unfilled.filter((key) => text.includes(`{${key}}`));
  }

  // Beside the box: the customer's channel and WhatsApp's window; when the window is closed
  // the holder gets the template picker (free text would not go).
  let templates = null;
  function showReplyState(c) {
    const w = c.window;
    const closed = Boolean(w && !w.open);
    document.getElementById("reply-state").textContent = `Channel: ${c.channel}`
      + (w ? (w.open ? " · window open" : " · window closed: only templates go") : "");
    const mine = c.owner === "human" && c.held_by === operator;
    const picker = document.getElementById("template-form");
    picker.hidden = !(closed && mine);
    if (!picker.hidden && templates === null) loadTemplates();
  }

  async function loadTemplates() {
    templates = (await getJson(`${API}/${conversationId}/templates`)).templates || [];
    const select = document.getElementById("template-name");
    select.replaceChildren(...templates.map((t) => make("option", { value: t.name }, t.name)));
    if (!templates.length) select.replaceChildren(make("option", { value: "" }, "No templates configured"));
    showTemplateVariables();
  }

  function showTemplateVariables() {
    const name = document.getElementById("template-name").value;
    const chosen = (templates || []).find((t) => t.name === name);
    const box = document.getElementById("template-variables");
    box.replaceChildren(...Object.entries(chosen ? chosen.variables : {}).map(([key, value]) =>
      make("label", null, `{{${key}}}`, make("input", { "data-variable": key, value, required: "" }))));
  }

  // Taking the conversation over turns the box to a reply; losing it, to a note.
  let wasMine = null;
  function showReplyModes(mine) {
    const reply = document.getElementById("mode-reply");
    reply.disabled = !mine;
    if (!mine) document.getElementById("mode-note").checked = true;
    else if (wasMine !== true) reply.checked = true;
    wasMine = mine;
    const note = replyMode() === "note";
    document.getElementById("reply-form").dataset.mode = note ? "note" : "reply";
    document.getElementById("reply-label").textContent = note ? "Internal note (never sent to the customer)" : "Reply to the customer";
    document.getElementById("reply").textContent = note ? "Add note" : "Send";
    document.getElementById("attachment-label").hidden = note;
  }

  // WhatsApp: free text only within 24 h of the customer's last message; outside it a reply
  // goes as the tenant's template or is held (the held ones show their reason in the thread).
  function showWindow(c) {
    showReplyState(c);
    const box = document.getElementById("window");
    const w = c.window;
    box.hidden = !w;
    if (!w) return;
    box.textContent = w.open ? `WhatsApp window open until ${when(w.open_until)}`
      : w.closed_by_provider ? "WhatsApp window closed (the provider refused free text) — only templates go until the customer writes"
      : `WhatsApp window closed${w.open_until ? ` since ${when(w.open_until)}` : ""} — only templates go until the customer writes`;
    if (c.held_replies) box.textContent += ` · ${c.held_replies} held repl${c.held_replies === 1 ? "y" : "ies"}`;
    box.dataset.open = w.open ? "true" : "false";
  }

  async function showProfile(customerId) {
    const profile = await getJson(`/v1/operator/customers/${customerId}`);
    const box = document.getElementById("profile");
    const identities = make("ul", { class: "identities" }, ...(profile.identities || []).map((i) =>
      make("li", null, make("span", { class: `tag channel-${i.channel}` }, i.channel), ` ${i.external_id} `,
        make("span", { class: `tag level-${i.link_level}` }, i.link_level))));
    const facts = make("table", { class: "audit" }, make("tbody", null, ...(profile.facts || []).map((f) =>
      make("tr", null, make("th", null, f.key), make("td", null, f.value), make("td", { class: "muted" }, f.scope)))));
    box.replaceChildren(
      make("p", null, make("a", { href: `/console/customers/${profile.id}` }, profile.display_name || profile.id)),
      make("h3", null, "Identities"), identities, make("h3", null, "Facts"),
      (profile.facts || []).length ? facts : make("p", { class: "muted" }, "No facts."));
  }

  async function showConversation() {
    const data = await getJson(`${API}/${conversationId}`);
    const c = data.conversation || data;
    const first = current === null;
    current = c;
    document.getElementById("title").textContent = `${c.name || c.channel} · ${c.channel}`;
    showControls(c);
    showAssignment(c);
    showWindow(c);
    const notes = await getJson(`${API}/${conversationId}/notes`);
    document.getElementById("thread").replaceChildren(...threadItems(data.messages || [], notes.notes || []));
    await showList();
    if (first) await showProfile(c.customer_id);
    if (first) {
      canned = (await getJson(`${API}/${conversationId}/canned-replies`)).replies || [];
      showCanned(cannedMatches(document.getElementById("reply-text").value));  // typed meanwhile
    }
  }

  // The error box exists only while there is an error: no empty pink box under the buttons.
  function showControlError(message) {
    let box = document.getElementById("control-error");
    if (!message) {
      if (box) box.remove();
      return;
    }
    if (!box) {
      box = make("p", { id: "control-error", class: "error", role: "alert" });
      document.getElementById("controls").append(box);
    }
    box.textContent = message;
  }

  function showAssignment(c) {
    const assigned = document.getElementById("assigned");
    assigned.textContent = c.assigned_to ? `Assigned to ${c.assigned_to === operator ? "you" : c.assigned_to}` : "Unassigned";
    assigned.dataset.assigned = c.assigned_to || "";
    document.getElementById("assign-me").hidden = c.assigned_to === operator;
    document.getElementById("unassign").hidden = !c.assigned_to;
  }

  function assignTo(name) {
    return act(() => postJson(`${API}/${conversationId}/assign`,
      { operator: name, actor: operator, reason: name ? "assigned in the console" : "unassigned in the console" }));
  }

  async function act(action) {
    showControlError("");
    try {
      await action();
      await refresh();
    } catch (exc) {
      showControlError(exc.message);
    }
  }

  if (conversationId) {
    document.getElementById("take").addEventListener("click", () => act(() =>
      postJson(`${API}/${conversationId}/take`, { actor: operator, reason: "taken over in the console" })));
    document.getElementById("handback").addEventListener("click", () => act(() =>
      postJson(`${API}/${conversationId}/handback`, { actor: operator, reason: "handed back in the console" })));
    document.getElementById("assign-me").addEventListener("click", () => assignTo(operator));
    document.getElementById("unassign").addEventListener("click", () => assignTo(null));
    document.getElementById("assign-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const field = document.getElementById("assign-operator");
      assignTo(field.value.trim()).then(() => { field.value = ""; });
    });
    const form = document.getElementById("reply-form");
    for (const radio of form.querySelectorAll('input[name="mode"]')) {
      radio.addEventListener("change", () => showReplyModes(current && current.owner === "human" && current.held_by === operator));
    }
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const field = document.getElementById("reply-text");
      const text = field.value;
      const target = replyMode() === "note" ? "notes" : "messages";
      const attachment = document.getElementById("reply-attachment");
      const url = target === "messages" ? attachment.value.trim() : "";
      if (!text.trim() && !url) return;
      const missing = target === "messages" ? stillUnfilled(text) : [];
      if (missing.length) {
        showControlError(`No fact for ${missing.map((k) => `{${k}}`).join(", ")}: edit the reply before sending.`);
        return;
      }
      act(async () => {
        const body = { text, actor: operator };
        if (url) body.media = [{ url }];
        await postJson(`${API}/${conversationId}/${target}`, body);
        field.value = "";
        attachment.value = "";
        unfilled = [];
      });
    });
    document.getElementById("template-name").addEventListener("change", showTemplateVariables);
    document.getElementById("template-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const name = document.getElementById("template-name").value;
      if (!name) return;
      const variables = {};
      for (const input of document.querySelectorAll("#template-variables input")) variables[input.dataset.variable] = input.value;
      act(() => postJson(`${API}/${conversationId}/template`, { name, variables, actor: operator }));
    });
    const replyText = document.getElementById("reply-text");
    replyText.addEventListener("input", () => showCanned(cannedMatches(replyText.value)));
    // Enter sends (or picks the first canned reply listed); Shift+Enter starts a new line.
    replyText.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        const matches = cannedMatches(replyText.value);
        if (matches.length) pickCanned(matches[0]); else form.requestSubmit();
      } else if (event.key === "Escape") {
        showCanned([]);
      }
    });
  }

  // --- live -------------------------------------------------------------------------------

  let running = null;
  let again = false;

  async function refresh() {
    if (running) { again = true; return running; }
    running = (async () => {
      do {
        again = false;
        try {
          if (live.dataset.view === "list") await showList(); else await showConversation();
          status.textContent = `Live · updated ${new Date().toLocaleTimeString()}`;
          status.dataset.state = "live";
        } catch (exc) {
          status.textContent = `Could not update: ${exc.message}`;
          status.dataset.state = "error";
        }
      } while (again);
    })();
    try { await running; } finally { running = null; }
  }

  bindFilters();
  const stream = new EventSource(live.dataset.stream);
  stream.addEventListener("changed", () => { refresh(); });
  stream.addEventListener("error", () => {
    status.textContent = "Reconnecting…";
    status.dataset.state = "reconnecting";
  });
  refresh();
})();
