// ---- the explorer's answer (POST /explore) told in words: what the
// course's why? and the lab's share ----
// renamer turns the explorer's client letters into the race's names:
// A into app1, A's first token A1 into app1#1.
function renamer(columns, names) {
  const letters = columns.slice(0, -1), of = {};
  letters.forEach((l, i) => { of[l] = names[i] || ('app' + (i + 1)); });
  const set = letters.join('');
  if (!set) return s => s;
  const tok = new RegExp(`\\b([${set}])(\\d+)\\b`, 'g'), lone = new RegExp(`\\b([${set}])\\b`, 'g');
  return s => String(s || '').replace(tok, (_, l, n) => `${of[l]}#${n}`).replace(lone, (_, l) => of[l]);
}

// breakStep finds the step that breaks the lock, and says it in words:
// a client's command deletes or overwrites the lock another client still
// holds; else a holder's lease runs out while it holds; else a client
// takes the lock while another holds it; a DEADLOCK's: its holder
// crashes with the lock set. It returns {i, says}, i -1 when none.
function breakStep(rows, verdict, name) {
  const holders = new Set(), theft = [], lapse = [], both = [], crash = [];
  let owner = null, lockBefore = '-';
  const tokenOwner = lock => { const m = /\b([A-Z])\d+\b/.exec(lock); return m ? m[1] : null; };
  rows.forEach((row, i) => {
    const byToken = tokenOwner(lockBefore), own = byToken || owner;
    const changed = row.lock !== lockBefore;
    const verb = (row.command || '').replace(/^m\d+: /, '').replace(/^\(watchdog\) /, '').split(' ')[0];
    if (row.client && own && own !== row.client && holders.has(own) && changed) {
      theft.push({i, says: `${name(row.client)}'s ${verb} ${verb === 'DEL' ? 'deletes' : 'overwrites'} ${name(own)}'s lock, which ${name(own)} still holds`});
    }
    if (!row.client && own && holders.has(own) && changed) {
      lapse.push({i, says: `${name(own)}'s lease runs out while ${name(own)} still holds the lock: the lock is free for another`});
    }
    if (row.note && row.note.includes('holds the lock')) {
      const others = [...holders].filter(h => h !== row.client);
      if (others.length) both.push({i, says: `${name(row.client)} takes the lock while ${name(others[0])} still holds it`});
    }
    if (row.client && (row.command || '').includes('** crashes') && row.lock && row.lock !== '-') {
      crash.push({i, says: `${name(row.client)} crashes with the lock set${/\(\d+ms\)/.test(row.lock) ? '' : ' and no TTL'}: no one will ever delete it`});
    }
    // after the step
    if (row.note && row.note.includes('holds the lock')) { holders.add(row.client); owner = row.client; }
    if (row.note && row.note.includes('released')) holders.delete(row.client);
    if ((row.command || '').includes('** crashes')) holders.delete(row.client);
    if (row.lock === '-' || /^(- )*-$/.test(row.lock)) owner = null;
    lockBefore = row.lock;
  });
  const pick = verdict === 'DEADLOCK' ? [crash] : [theft, lapse, both];
  for (const list of pick) if (list.length) return list[0];
  return {i: -1, says: ''};
}

// lockSays is a lock column's value in words: free, or its value.
const lockSays = (lock, name) => /^(-\s*)+$/.test(lock || '-') ? 'free' : name(lock);

// sentence tells step row in one sentence.
function sentence(row, name) {
  const at = `at ${row.t_ms} ms`, cmd = name(row.command), note = name(row.note);
  if (!row.client) return `${at}: ${note}; the lock is ${lockSays(row.lock, name)}.`;
  if (cmd.startsWith('**')) return `${at}: ${name(row.client)} ${cmd.replace(/\*\*/g, '').trim()}.`;
  return `${at}: ${name(row.client)} sends ${cmd}; Redis answers ${name(row.reply) || 'nothing'}` +
    (note ? ` (${name(row.client)} ${note})` : '') + `; lock after: ${lockSays(row.lock, name)}, stock/sold ${row.stock}.`;
}

