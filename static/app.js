// The only script besides htmx (the pages allow no inline script: see config/middleware.py).
// Copy buttons: <button class="copy" data-copy="#element-id">.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  const text = source.innerText;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    document.execCommand("copy");
  }
  const label = button.textContent;
  button.textContent = "Copied";
  const announcer = document.getElementById("announcer");
  if (announcer) announcer.textContent = "Copied to the clipboard";
  setTimeout(() => { button.textContent = label; }, 1500);
});

// <button data-print> prints the page; <form data-confirm="..."> asks before it submits.
document.addEventListener("click", (event) => {
  if (event.target.closest("[data-print]")) window.print();
});
document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-confirm]");
  if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
});

// Live room pages: refresh the panels the moment the room's event stream says something
// happened. While the stream is down (or there is none: shared pages), every two seconds.
document.addEventListener("DOMContentLoaded", () => {
  const poller = document.querySelector(".poller");
  if (!poller) return;
  const changed = () => document.body.dispatchEvent(new Event("roomchange"));
  setInterval(() => { if (!window.roomLive) changed(); }, 2000);
  if (!poller.dataset.stream || !window.EventSource) return;
  const source = new EventSource(poller.dataset.stream);
  source.onopen = () => { window.roomLive = true; };
  source.onmessage = changed;
  source.onerror = () => { window.roomLive = false; };
});

// Times: every <time datetime> reads as "3 min ago" (or "in 2 min"), the absolute time in
// its title; kept fresh every 30 s and after each live refresh.
const UNITS = [["year", 31536000], ["month", 2592000], ["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
function timesRelative(root) {
  for (const el of (root || document).querySelectorAll("time[datetime]")) {
    const when = new Date(el.getAttribute("datetime"));
    if (Number.isNaN(when.getTime())) continue;
    if (!el.title) el.title = when.toLocaleString() + " (" + el.getAttribute("datetime") + ")";
    const seconds = Math.round((when.getTime() - Date.now()) / 1000);
    const [unit, size] = UNITS.find(([, s]) => Math.abs(seconds) >= s) || ["second", 1];
    el.textContent = Math.abs(seconds) < 5 ? "just now" : relative.format(Math.round(seconds / size), unit);
  }
}
document.addEventListener("DOMContentLoaded", () => {
  timesRelative();
  setInterval(() => timesRelative(), 30000);
});

// After a live refresh: times again, and the screen reader hears how many events arrived
// (one polite announcement, not the whole feed).
let eventsSeen = null;
function afterRefresh() {
  timesRelative();
  const count = document.getElementById("event-count");
  const announcer = document.getElementById("announcer");
  if (!count || !announcer) return;
  const now = parseInt(count.textContent, 10);
  if (eventsSeen !== null && now > eventsSeen) {
    announcer.textContent = (now - eventsSeen) + (now - eventsSeen === 1 ? " new event" : " new events") + " in the room";
  }
  eventsSeen = now;
}
document.addEventListener("htmx:afterSettle", afterRefresh);
document.addEventListener("htmx:oobAfterSwap", afterRefresh);
document.addEventListener("DOMContentLoaded", () => {
  const count = document.getElementById("event-count");
  if (count) eventsSeen = parseInt(count.textContent, 10);
  // Presence and "last seen" change without an event (heartbeats): refresh now and then
  // even while the stream is live.
  if (document.querySelector(".poller")) {
    setInterval(() => document.body.dispatchEvent(new Event("roomchange")), 15000);
  }
});
