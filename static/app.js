// Copy buttons: <button class="copy" data-copy="#element-id">. The only script besides htmx.
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

// Live room pages: refresh the panels the moment the room's event stream says something
// happened. While the stream is down, htmx polls every two seconds instead.
document.addEventListener("DOMContentLoaded", () => {
  const poller = document.querySelector("[data-stream]");
  if (!poller || !window.EventSource) return;
  const source = new EventSource(poller.dataset.stream);
  source.onopen = () => { window.roomLive = true; };
  source.onmessage = () => { document.body.dispatchEvent(new Event("roomchange")); };
  source.onerror = () => { window.roomLive = false; };
});
