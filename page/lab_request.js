// ---- one request at a time ----
async function call(method, path) {
  const out = $('out');
  try {
    const r = await fetch(path, {method});
    const body = await r.text();
    let why = '';
    try {
      const j = JSON.parse(body);
      if (r.status === 409 && j.reason === 'run_in_progress') {
        why = 'Refused: ' + j.owner + ' holds the stack (since ' + new Date(j.since).toLocaleTimeString() +
          '); this request would change the counters it reads back. Try again once it ends.\n';
      }
    } catch (e) { /* not JSON */ }
    out.textContent = why + method + ' ' + path + '\n' + r.status + ' from ' + (r.headers.get('X-Instance') || '?') + '\n' + body;
    lockHint(r.status, body, path);
  } catch (e) {
    out.textContent = method + ' ' + path + '\nfailed: ' + e;
  }
  refresh();
}
// lockHint says, after a lock not had in time (503 lock_timeout), that
// a holder still has it: after a race with a crash, the crashed holder's
// lock stays until its lease runs out (setnx's never), and reset deletes
// every lock key with the stock. Any other answer hides it.
function lockHint(status, body, path) {
  const h = $('lockHint');
  let reason = '';
  try { reason = JSON.parse(body).reason || ''; } catch (e) {}
  if (path.startsWith('/reset') || status !== 503 || reason !== 'lock_timeout') { h.hidden = true; return; }
  const lr = lastRace, crashed = lr && lr.timeline && (lr.timeline.faults || []).length;
  const who = crashed ? `The last race, ${lr.lock}${lr.scenario ? ' under ' + lr.scenario : ''}, struck a holder with a fault: its lock is still held ` +
      (lr.timeline.lease_ms ? `until its lease of ${Math.round(lr.timeline.lease_ms)} ms runs out. ` : 'and, with no lease, never expires. ') :
    'Another holder still has this lock: one that crashed keeps it until its lease runs out (setnx: for ever). ';
  const b = Object.assign(document.createElement('button'), {textContent: 'reset: the stock, and delete every lock'});
  b.addEventListener('click', () => $('resetBtn').click());
  h.replaceChildren(`The lock was not had in time. ${who}`, b);
  h.hidden = false;
}
async function refresh() {
  try {
    const s = await (await fetch('/stock')).json();
    for (const k of ['stock', 'sold', 'num']) $(k).textContent = s[k];
  } catch (e) { /* Redis down: keep the last values */ }
}
