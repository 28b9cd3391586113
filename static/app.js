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
