// ---- the course: progress kept in this browser (localStorage), the
// welcome, and a step: its question, its race and what comes next. A
// step is a page of its own (/learn/NAME): the browser's back and
// forward move between steps. Text goes in through textContent only. ----
const COURSE_KEY = 'lockladder.course';
// progress: done[lock] is the verdict of the step's race, once raced;
// predicted[lock] is {guess}, final once made ('' when the learner
// raced without a guess).
const progress = (() => {
  try {
    const s = JSON.parse(localStorage.getItem(COURSE_KEY) || '{}');
    return {done: s.done || {}, predicted: s.predicted || {}};
  } catch (e) { return {done: {}, predicted: {}}; }
})();
function saveProgress() {
  try { localStorage.setItem(COURSE_KEY, JSON.stringify(progress)); } catch (e) { /* private mode: not kept */ }
}
// score is [right, predicted] over the steps predicted and raced.
function score() {
  const made = Object.entries(progress.predicted).filter(([l, p]) => p.guess && progress.done[l]);
  return [made.filter(([l, p]) => p.guess === progress.done[l]).length, made.length];
}
function progressSay(total) {
  const [right, n] = score(), done = Object.keys(progress.done).length;
  return `${done} of ${total} done` + (n ? ` · predictions ${right} of ${n} right` : '');
}

// ---- the welcome: where the learner left off ----
if ($('start')) {
  const links = [...document.querySelectorAll('.toc a[data-lock]')];
  for (const s of document.querySelectorAll('[data-done]')) {
    const v = progress.done[s.dataset.done];
    if (v) s.textContent = `✓ ${v}`;
  }
  const done = links.filter(a => progress.done[a.dataset.lock]).length;
  if (done) {
    const next = links.find(a => !progress.done[a.dataset.lock]);
    const [right, n] = score();
    const p = $('resume');
    const again = el('button', {type: 'button', textContent: 'start over'});
    again.addEventListener('click', () => {
      progress.done = {}; progress.predicted = {};
      saveProgress();
      location.reload();
    });
    p.append(`You have done ${done} of ${links.length} steps` + (n ? `, and predicted ${right} of ${n} right` : '') + '. ');
    if (next) p.append(el('a', {className: 'go', href: next.href, textContent: `Go on: ${next.textContent}`}), ' ');
    p.append(again);
    p.hidden = false;
  }
}

// ---- a step ----
const step = $('stepData') ? JSON.parse($('stepData').textContent) : null;
const CHOICES = [['OVERSOLD', 'it sells more than it has'], ['DEADLOCK', 'the buyers wait for ever'], ['SAFE', 'it sells the stock, no more']];
let plan = null;      // GET /race: the scenarios and the ladder's pairs
let racing = false;
let live = [];        // this race's progress: [seconds, sales/s, p99 ms]

function showProgress() { if ($('progress')) $('progress').textContent = progressSay(step.total); }

// codeView copies the step's code into box (why?, the game) and returns
// mark(marks): each {file, line, client, now} puts the client's letter on
// its line and lights it (now: the line that sent the step's command),
// the box scrolled to it, never the page.
function codeView(box, name) {
  box.replaceChildren(...[...$('code').children].map(f => {
    const c = f.cloneNode(true), r = c.querySelector('.codebox');
    r.setAttribute('aria-label', `${r.getAttribute('aria-label')}, ${name}`);
    for (const s of c.querySelectorAll('.ln .sr')) s.remove(); // the step's own marks stay above
    c.querySelectorAll('.ln').forEach(l => l.classList.remove('new', 'next'));
    return c;
  }));
  return {
    has: (file, line) => !!box.querySelector(`figure[data-file="${CSS.escape(file)}"] .ln[data-line="${line}"]`),
    mark(marks) {
      for (const l of box.querySelectorAll('.ln.at, .ln.now')) l.classList.remove('at', 'now');
      for (const m of box.querySelectorAll('.ln .mk')) m.replaceChildren();
      let focus = null;
      for (const m of marks) {
        const ln = box.querySelector(`figure[data-file="${CSS.escape(m.file)}"] .ln[data-line="${m.line}"]`);
        if (!ln) continue;
        ln.classList.add(m.now ? 'now' : 'at');
        ln.querySelector('.mk').append(el('span', {className: 'cl ' + m.client, textContent: m.client}),
          el('span', {className: 'sr', textContent: ` (${m.client} ${m.now ? 'sent this' : 'is here'}) `}));
        if (m.now || !focus) focus = ln;
      }
      if (focus) {
        const cb = focus.closest('.codebox');
        cb.scrollTop = Math.max(0, focus.offsetTop - cb.clientHeight / 3);
      }
      return !!focus;
    },
  };
}
// siteSay names a call site in words: "line 57 of lock/rung05_check_del.go".
const siteSay = s => s ? `line ${s.line} of ${s.file}` : '';

// the question: final once asked
function showQuestion() {
  const p = progress.predicted[step.lock], picks = $('picks');
  if (p) {
    picks.replaceChildren();
    picks.hidden = true;
    $('predicted').textContent = p.guess ? `You predicted ${p.guess}.` : 'You raced it without a prediction.';
    return;
  }
  for (const [v, words] of CHOICES) {
    const b = el('button', {type: 'button'}, v, el('small', {textContent: words}));
    b.addEventListener('click', () => predict(v));
    picks.append(b);
  }
  const skip = el('button', {type: 'button', className: 'skip'}, 'I don\'t know', el('small', {textContent: 'race it without a guess'}));
  skip.addEventListener('click', () => predict(''));
  picks.append(skip);
}
function predict(v) {
  if (progress.predicted[step.lock]) return; // made: final
  progress.predicted[step.lock] = {guess: v};
  saveProgress();
  showQuestion();
  $('predicted').textContent += ' Now race it.';
  raceReady();
  if (!$('raceBtn').disabled) $('raceBtn').focus();
  else $('predicted').focus();
}

// raceReady enables the race once the question is answered, unless this
// stack cannot race the step (then the step goes on without it).
function raceReady() {
  const asked = !!progress.predicted[step.lock], why = cannotRace();
  $('raceBtn').disabled = racing || !asked || !!why;
  if (why) {
    $('raceStatus').textContent = `This stack cannot race ${step.lock} under ${step.scenario}: ${plainWords(why)}.`;
    if (asked) reveal();
  } else if (!asked && !racing) {
    $('raceStatus').textContent = 'Predict first.';
  } else if (!racing && !$('result').hidden) {
    /* a verdict is on screen */
  } else if (!racing) {
    $('raceStatus').textContent = progress.done[step.lock] ? `You raced it before: ${progress.done[step.lock]}.` : '';
  }
}
function cannotRace() {
  if (step.unavailable) return step.unavailable;
  if (!plan) return '';
  const c = plan.ladder.find(x => x.lock === step.lock && x.scenario === step.scenario);
  return c && c.skip ? c.skip : '';
}

// stepLease is the lease of the step's race in ms (0: none set by its
// scenario): why? and the game are told on it too, so that all three
// say the same lease.
function stepLease() {
  const s = step.lease && plan && plan.scenarios.find(x => x.name === step.scenario);
  return s && s.lease_ms ? s.lease_ms : 0;
}

// sayPlan says what the race will run, true of this lock: its lease, or
// that it has none.
function sayPlan() {
  const s = plan && plan.scenarios.find(x => x.name === step.scenario);
  if (!s) { $('plan').textContent = 'The stack serves no races here (GET /race): start it with make demo.'; return; }
  $('size').textContent = `${s.requests} buyers, ${s.concurrency} at a time, want ${s.stock} items.`;
  // none and local keep nothing in Redis: a lease would be a word too soon
  const lease = !step.lease ? (['none', 'local'].includes(step.lock) ? '' : 'This lock has no lease: it is held until its holder lets it go.') :
    s.lease_ms ? `The lock's lease: ${s.lease_ms} ms.` : 'The lock\'s lease: the app\'s own, 2 s.';
  $('plan').textContent = `The race: ${s.requests} buyers, ${s.concurrency} at a time, for a stock of ${s.stock}, ` +
    `through a load balancer to three copies of the app (app1, app2, app3), all on one Redis. ${lease}`;
}

const tlv = $('tl') ? makeTimeline($('tl'), {brief: true}) : null;
function drawLive() {
  drawLine($('liveRps'), live.map(p => [p[0], p[1]]), '#3056d3');
  drawLine($('liveP99'), live.map(p => [p[0], p[2]]), '#b54708');
  const last = live[live.length - 1];
  $('liveRps').setAttribute('aria-label', last ? `throughput: ${Math.round(last[1])} sales a second at ${last[0].toFixed(1)} s, ${live.length} points` : 'throughput: no race yet, 0 points');
  $('liveP99').setAttribute('aria-label', last ? `p99 latency: ${last[2].toFixed(1)} ms at ${last[0].toFixed(1)} s, ${live.length} points` : 'p99 latency: no race yet, 0 points');
}

async function raceStep() {
  if (racing || !progress.predicted[step.lock]) return;
  racing = true;
  $('raceBtn').disabled = true;
  const st = $('raceStatus');
  st.textContent = 'Starting: the stock is reset, the buyers line up…';
  live = [];
  let result, total;
  try {
    ({result, total} = await readRace({lock: step.lock, endpoint: 'sale', scenario: step.scenario}, p => {
      live.push([p.elapsed_s, p.rps, p.p99_ms]);
      st.textContent = `Racing: ${p.done} of ${p.total} buyers answered, ${p.ok} sold.`;
      if (!$('result').hidden) drawLive();
    }));
  } catch (e) {
    st.replaceChildren(el('span', {className: 'err', textContent: `The race failed: ${plainWords(e.message)}`}));
    racing = false;
    raceReady();
    return;
  } finally {
    racing = false;
  }
  live.push([result.duration_ms / 1000, result.rps, result.p99_ms]);
  showResult(result, total);
}

// showResult shows a race's verdict, its story and its timeline together,
// brought into view with the focus on them.
function showResult(r, total) {
  progress.done[step.lock] = r.verdict;
  saveProgress();
  showProgress();
  const p = progress.predicted[step.lock] || {};
  const you = !p.guess ? '' : p.guess === r.verdict ? `You predicted ${p.guess}: right ✓` : `You predicted ${p.guess}: wrong ✗`;
  $('verdict').textContent = r.verdict;
  $('verdict').className = 'badge ' + verdictClass(r.verdict);
  $('youSay').textContent = you;
  const story = [el('p', {textContent: countsSay(r)})];
  const stop = stopSay(r, total);
  if (stop) story.push(el('p', {className: 'stopped', textContent: stop}));
  const look = lookFor(r.timeline || null, r);
  if (look) story.push(el('p', {}, el('b', {textContent: 'Look for '}), look));
  $('story').replaceChildren(...story);
  $('story').classList.toggle('bad', tlFailed(r.verdict));
  $('result').hidden = false;
  tlv.show(r.timeline || null, '');
  tlv.showEvidence();
  const cv = $('tl').querySelector('canvas'), t = r.timeline;
  cv.setAttribute('role', 'img');
  cv.setAttribute('aria-label', !t ? 'timeline: none' : `timeline of ${step.lock} under ${step.scenario}, ${r.verdict}: ${t.sections.length} critical sections on ${t.instances.length} instances, ` +
    `${t.overlaps} overlaps, ${t.refused} stale writes refused, ${(t.faults || []).length} faults` + (t.stuck ? ', a stuck lock' : ''));
  drawLive();
  $('raceStatus').textContent = `Done: ${r.requests} buyers in ${secs(r.duration_ms)}.`;
  $('raceBtn').textContent = 'Race it again';
  $('raceBtn').disabled = false;
  announce(`${step.lock} under ${step.scenario}: ${r.verdict}. ${you ? you + '. ' : ''}${countsSay(r)}`);
  reveal();
  $('result').focus({preventScroll: true});
  $('result').scrollIntoView({block: 'start', behavior: 'auto'});
  document.body.dataset.raced = r.verdict;
}

// reveal shows what comes after the race: why?, the game, the next step.
function reveal() {
  $('nextSec').hidden = false;
  if (typeof whyOffered === 'function') whyOffered();
  if (typeof playOffered === 'function') playOffered();
  if ($('finalScore')) {
    const [right, n] = score();
    $('finalScore').textContent = n ? `Your predictions: ${right} of ${n} right.` : '';
  }
}

if (step) {
  showProgress();
  showQuestion();
  $('raceBtn').addEventListener('click', raceStep);
  raceReady();
  if (progress.done[step.lock]) reveal();
  fetch('/race').then(r => r.ok ? r.json() : null).catch(() => null).then(p => {
    plan = p;
    sayPlan();
    raceReady();
  });
  window.addEventListener('resize', () => { if (!$('result').hidden) drawLive(); });
}
