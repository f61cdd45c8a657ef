// Live pages: an element with data-events="URL" is replaced by each server-sent "update" event's HTML
// (rendered and escaped by the server). Folded observations the reader opened stay open.
document.querySelectorAll("[data-events]").forEach((box) => {
  const source = new EventSource(box.dataset.events);
  source.addEventListener("update", (event) => {
    const open = new Set([...box.querySelectorAll("details[open]")].map(keyOf));
    box.innerHTML = event.data;
    box.querySelectorAll("details").forEach((d) => { if (open.has(keyOf(d))) d.open = true; });
    box.dataset.updates = String(Number(box.dataset.updates || 0) + 1);
  });
});

function keyOf(details) {
  const step = details.closest("[id]");
  const siblings = step ? [...step.querySelectorAll("details")] : [];
  return (step ? step.id : "") + ":" + siblings.indexOf(details);
}
