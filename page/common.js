// ---- what the course and the lab share: the helpers, a race read from
// POST /race's events, and a race told in words. Text goes in through
// textContent only: what a server answered never becomes markup. ----
const $ = id => document.getElementById(id);
const reducedMotion = () => matchMedia('(prefers-reduced-motion: reduce)').matches;
// bringIntoView brings what a press opened into view: smoothly, unless the
// reader asked their system for less motion.
const bringIntoView = (el, block = 'start') => el.scrollIntoView({block, behavior: reducedMotion() ? 'auto' : 'smooth'});
// verdictClass is a verdict's badge class.
const verdictClass = v => v === 'SAFE' ? 'SAFE' : v === 'OVERSOLD' ? 'OVERSOLD' : v === 'LOST UPDATES' ? 'LOST' : 'OTHER';
// announce says s to a screen reader once (the page's live region).
function announce(s) { const a = $('announce'); if (a) a.textContent = s; }
// el makes an element: el('p', {className: 'x'}, 'text', child...).
function el(tag, props, ...kids) {
  const e = Object.assign(document.createElement(tag), props || {});
  e.append(...kids.filter(k => k !== null && k !== undefined && k !== ''));
  return e;
}
const plural = (n, one, many) => `${n} ${n === 1 ? one : (many || one + 's')}`;
const secs = ms => (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';

// readRace runs one race (POST /race?params) and reads its events:
// onProgress(p) on each progress event (p.done of p.total answered...);
// it returns {result, total} (total: the requests planned), or throws an
// Error that says why the race failed or was refused.
async function readRace(params, onProgress) {
  const r = await fetch('/race?' + new URLSearchParams(params), {method: 'POST'});
  if (!r.ok) {
    let msg = String(r.status);
    try { msg += ': ' + (await r.json()).error; } catch (e) { /* no JSON */ }
    throw new Error(msg);
  }
  const rd = r.body.getReader(), dec = new TextDecoder();
  let buf = '', result = null, total = 0;
  for (;;) {
    const {value, done} = await rd.read();
    if (done) break;
    buf += dec.decode(value, {stream: true});
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i); buf = buf.slice(i + 2);
      const ev = (block.match(/^event: (.*)$/m) || [])[1], data = JSON.parse((block.match(/^data: (.*)$/m) || [])[1] || '{}');
      if (ev === 'progress') { total = data.total || total; if (onProgress) onProgress(data); }
      else if (ev === 'result') result = data;
      else if (ev === 'failed') throw new Error(data.error);
    }
  }
  if (!result) throw new Error('the race ended without a result');
  return {result, total: total || result.requests};
}

// What an answer's status says, in words.
const CODE_WORDS = {'409': 'found it sold out', '503': 'gave up waiting for the lock', '502': 'lost their instance as it died',
  '504': 'timed out at the load balancer', '500': 'failed with an error'};

// countsSay tells a /sale race's counts in words: what left the stock,
// what was sold, and what was sold twice.
function countsSay(r) {
  const gone = r.initial - r.remaining, out = [];
  out.push(`The stock went from ${r.initial} to ${r.remaining}: ${plural(gone, 'item')} left it.`);
  if (r.oversold > 0) {
    out.push(`${plural(r.ok, 'sale')} answered "sold": ${r.oversold} more than the items that left, so ${r.oversold} buyers paid for items already gone. That is what oversold means.`);
  } else {
    out.push(`${plural(r.ok, 'sale')} answered "sold": one for each item that left, none twice.`);
  }
  const codes = Object.entries(r.codes || {}).filter(([c]) => c !== '200').map(([c, n]) => `${n} ${CODE_WORDS[c] || 'were answered ' + c}`);
  if (codes.length) out.push(`Of the other buyers, ${codes.join(', ')}.`);
  return out.join(' ');
}

// stopSay says that a race stopped before its last request, and why; ''
// when it ran them all.
function stopSay(r, total) {
  if (!r.stopped && !(total && r.requests < total)) return '';
  // in words short enough to keep the timeline in view on a phone; the
  // timeline's own line, in the reports, keeps the server's reason
  const why = r.stall_bound_ms ? `no sale got through the lock for ${secs(r.stall_ms)}, past the ${secs(r.stall_bound_ms)} the scenario allows` :
    r.stop_reason ? r.stop_reason : 'it reached its time bound';
  return `The race stopped early, after ${r.requests}${total ? ' of its ' + total : ''} requests: ${why}.`;
}

// lookFor says where a race's verdict shows on its timeline, one line per
// verdict: an overlap, a stuck lock, a refused write, or the counters.
function lookFor(t, r) {
  const v = r.verdict, who = l => (t && t.instances[l]) || 'an instance';
  if (t && t.pairs.length) return `two holders wrote at once (${plural(t.overlaps, 'overlap')}): the first is zoomed on the timeline, red bars over a pink band.`;
  if (v === 'DEADLOCK') {
    if (t && t.stuck) {
      // a holder that crashed before its section began has no lane: its
      // lock has a row of its own, "the lock", under the lanes
      const where = t.stuck.lane >= 0 ? `on ${who(t.stuck.lane)}'s lane` : `in the row "the lock", under the lanes (its holder crashed before its sale began)`;
      return `the stuck lock: the dark red strip ${where}, from ${tlMs(t.stuck.from_us)} ms to the end (${tlTTL(t.stuck)}); each ✕ is a buyer that gave up waiting.`;
    }
    const gave = t ? (t.gave_up || []).length : 0;
    return `the silence after the crash: no sale for ${secs(r.stall_ms || 0)}, ${gave ? plural(gave, 'buyer') + ' giving up (✕) while' : 'while'} a dead holder's lock stays in Redis. Nothing was oversold: the lock failed by never coming free.`;
  }
  const cut = t && t.interrupted ? `${plural(t.interrupted, 'section')} cut by a crash (hatched)` : '';
  if (v === 'OVERSOLD') return `the counters: ${r.oversold} sold beyond the stock, though no two sections read back overlapped (a section whose instance died leaves nothing to draw)` + (cut ? `; also ${cut}.` : '.');
  if (v === 'LOST UPDATES') return `the counters: ${r.lost_updates} increments lost, though no two sections read back overlapped.`;
  if (v !== 'SAFE' || !t) return '';
  if (t.refused) return `the refused writes (orange outline): ${plural(t.refused, 'time')} a holder whose lease had lapsed tried to write, and the fence turned it away.`;
  const lapsed = t.lease_ms ? t.sections.filter(s => s[2] - s[1] > t.lease_ms * 1000).length : 0;
  if (lapsed) return `${plural(lapsed, 'lease')} ran out while held (red under the bar), yet no two holders wrote at once.`;
  if (cut) return `${cut}: the next holder waited for the dead one's lock to lapse.`;
  return 'no two sections overlap: one holder at a time.';
}

// Words a learner may not know, as the servers write them, in plain words.
const PLAIN = [
  [/\bfault=crash-before-expire\b/g, 'a crash between SETNX and EXPIRE'], [/\bfault=crash\b/g, 'a crash'], [/\bfault=pause\b/g, 'a freeze'],
  [/\buntil=written\b/g, 'until another request has written the item'], [/\buntil=taken\b/g, 'until another request has taken the lock'],
  [/\btry=(\d+m?s)\b/g, 'waiting up to $1'], [/\bwork=(\d+m?s)\b/g, 'a business of $1'], [/\btakeover=(\d+m?s)\b/g, 'a $1 sleep before a takeover'],
  [/\bSIGSTOP\b/g, 'freeze (SIGSTOP)'], [/\block TTL\b/g, 'lock lease'],
];
function plainWords(s) {
  let out = String(s || '');
  for (const [re, to] of PLAIN) out = out.replace(re, to);
  return out;
}

// The sources by key ([000]...), named in full (the page's #sources).
const SOURCES = (() => { try { return JSON.parse($('sources').textContent); } catch (e) { return {}; } })();
// sourceNamed names in s, in full, the first of each source it cites by
// key that the page has not named yet ("[004]" becomes "[004] "Redis
// SETNX for a distributed lock, explained"").
const sourcesNamed = new Set();
function sourceNamed(s) {
  const text = String(s || '');
  return text.replace(/\[(\d{3}|[A-Z]+\d+)\]/g, (m, k) => {
    if (!SOURCES[k] || sourcesNamed.has(k)) return m;
    sourcesNamed.add(k);
    // a text that names the title itself beside the key keeps it once
    const title = (SOURCES[k].match(/"[^"]+"/) || [''])[0];
    return title && text.includes(title) ? m : SOURCES[k];
  });
}
