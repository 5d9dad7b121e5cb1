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
// lockHint explains what a single request meets. After a lock not had
// in time (503 lock_timeout): another holder of the lab's item has it
// (one that crashed keeps it until its lease runs out; setnx's never),
// and reset deletes every lock key with the stock. After a race whose
// fault struck a holder, a request with the race's lock: the race ran
// on items of its own (package guard: no request without its token
// reaches them), so its crashed holder's lock is still held there, not
// on the lab's item this request used; the course's step for the lock
// lets the learner strike a holder by hand. Any other answer hides it.
function lockHint(status, body, path) {
  const h = $('lockHint');
  let reason = '';
  try { reason = JSON.parse(body).reason || ''; } catch (e) {}
  const [route, query] = path.split('?');
  const lock = new URLSearchParams(query || '').get('lock');
  const lr = lastRace, struck = lr && lr.timeline && (lr.timeline.faults || []).length;
  if (route !== '/reset' && status === 503 && reason === 'lock_timeout') {
    const b = Object.assign(document.createElement('button'), {textContent: 'reset: the stock, and delete every lock'});
    b.addEventListener('click', () => $('resetBtn').click());
    h.replaceChildren('The lock was not had in time: another holder of the lab\'s item still has it. ' +
      'One that crashed keeps it until its lease runs out (setnx: for ever). ', b);
    h.hidden = false;
  } else if (struck && lock === lr.lock && (route === '/sale' || route === '/testLock')) {
    const held = lr.timeline.lease_ms ? `until its lease of ${Math.round(lr.timeline.lease_ms)} ms runs out` : 'and, with no lease, never expires';
    const a = Object.assign(document.createElement('a'), {href: '/learn/' + encodeURIComponent(lock), textContent: `strike a ${lock} holder yourself`});
    h.replaceChildren(`The last race, ${lr.lock}${lr.scenario ? ' under ' + lr.scenario : ''}, ran on items of its own and struck a holder with a fault: ` +
      `its lock is still held there ${held}. This request used the lab's item, which no fault touched. To see a held lock stop the next request, `, a, '.');
    h.hidden = false;
  } else {
    h.hidden = true;
  }
}
async function refresh() {
  try {
    const s = await (await fetch('/stock')).json();
    for (const k of ['stock', 'sold', 'num']) $(k).textContent = s[k];
  } catch (e) { /* Redis down: keep the last values */ }
}
