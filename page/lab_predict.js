// ---- predict, then run: the learner says what a pair will do first ----
// Before a race of a ladder pair (a lock under a scenario: from the
// ladder's grid, "run the ladder" or the race card's scenario picker),
// the page asks which verdict the learner expects: OVERSOLD, LOST
// UPDATES, DEADLOCK or SAFE, or skip. Until they pick or skip, the
// ladder's verdict for the pair stays hidden (its cell says "?", the
// scenario's line "?"); once the race is in, the prediction is marked
// right or wrong against the verdict the race read back. Predictions and
// the score are kept in the browser (localStorage), never on the server;
// the first prediction of a pair is the one that counts, until "start
// over". Text goes in through textContent only.
const PREDICT_KEY = 'lockladder.predictions';
const VERDICTS = ['OVERSOLD', 'LOST UPDATES', 'DEADLOCK', 'SAFE'];
// waitedMs: the time spent waiting for the learner's picks, which the
// ladder's three minutes do not count.
const predict = {pairs: {}, ask: true, waiting: null, waitedMs: 0};

(function loadPredictions() {
  try {
    const s = JSON.parse(localStorage.getItem(PREDICT_KEY) || '{}');
    predict.pairs = s.pairs || {};
    predict.ask = s.ask !== false;
  } catch { /* unreadable: start afresh */ }
})();

function savePredictions() {
  try { localStorage.setItem(PREDICT_KEY, JSON.stringify({pairs: predict.pairs, ask: predict.ask})); } catch { /* private mode: not kept */ }
}

// predictPair is the key of a pair's prediction: the ladder's pairs run
// on /sale; a scenario race on /testLock is a pair of its own (its
// verdict: LOST UPDATES or SAFE).
const predictPair = (scenario, lock, endpoint) => scenario + ' ' + lock + (endpoint === 'testLock' ? ' testLock' : '');

// hiddenVerdict says the ladder's verdict for pair is not to be shown
// yet: the learner predicts, and has not picked or skipped for it.
const hiddenVerdict = pair => predict.ask && !(pair in predict.pairs);

// predictScore is "your predictions: R of N right" over the pairs
// predicted whose race is in.
function predictScore() {
  const done = Object.values(predict.pairs).filter(p => p.guess && p.verdict);
  const right = done.filter(p => p.guess === p.verdict).length;
  return `your predictions: ${right} of ${done.length} right`;
}

function showPredictions() {
  $('predictOn').checked = predict.ask;
  $('predictScore').textContent = predictScore();
  if (typeof repaintLadder === 'function') repaintLadder();
}

// predictFirst asks, in card, for the verdict of lock under scenario
// before its race, and resolves once the learner picked or skipped (at
// once when they do not predict, or predicted this pair before).
function predictFirst(lock, scenario, endpoint, card) {
  const pair = predictPair(scenario, lock, endpoint);
  if (!hiddenVerdict(pair)) return Promise.resolve();
  const panel = $('predict'), back = document.activeElement;
  // where the learner was: a ladder cell is painted afresh as the
  // prediction shows, so it is found again by its pair
  const backCell = back && back.closest ? back.closest('[data-pair]') : null, backPair = backCell ? backCell.dataset.pair : '';
  card.querySelector('.predictSlot').append(panel);
  $('predictAsk').textContent = `Predict first: what will ${lock} do under ${scenario}?`;
  $('predictSay').textContent = '';
  const picks = $('predictPicks');
  picks.replaceChildren();
  picks.hidden = false;
  panel.hidden = false;
  const asked = Date.now();
  return new Promise(resolve => {
    let made = false;
    const done = guess => {
      if (made) return; // a prediction is final: a second press changes nothing
      made = true;
      predict.waiting = null;
      predict.waitedMs += Date.now() - asked;
      if (!(pair in predict.pairs)) predict.pairs[pair] = guess ? {guess} : {skipped: true};
      savePredictions();
      picks.replaceChildren(); // gone, not only hidden
      picks.hidden = true;
      const expected = endpoint === 'testLock' ? '' : (ladder.plan && (ladder.plan.ladder.find(c => c.lock === lock && c.scenario === scenario) || {}).expected) || '';
      $('predictSay').textContent = (guess ? `You predicted ${guess}` : 'Skipped') + (expected ? `; the ladder says ${expected}` : '') + `. The race of ${lock} under ${scenario} starts.`;
      showPredictions();
      // back where the learner was (the cell they pressed), else the panel's line
      const cell = backPair && document.querySelector(`[data-pair="${CSS.escape(backPair)}"] button`);
      if (cell) cell.focus({preventScroll: true});
      else if (back && back.isConnected && !back.disabled && back !== document.body && !picks.contains(back)) back.focus({preventScroll: true});
      else $('predictSay').focus({preventScroll: true});
      resolve();
    };
    predict.waiting = () => done(null);
    for (const v of VERDICTS) {
      const b = Object.assign(document.createElement('button'), {type: 'button', className: 'pick', textContent: v});
      b.addEventListener('click', () => done(v));
      picks.append(b);
    }
    const skip = Object.assign(document.createElement('button'), {type: 'button', textContent: 'skip: show the ladder\'s answer'});
    skip.addEventListener('click', () => done(null));
    const stop = Object.assign(document.createElement('button'), {type: 'button', textContent: 'stop predicting'});
    stop.addEventListener('click', () => { predict.ask = false; done(null); });
    picks.append(skip, stop);
    picks.firstChild.focus();
  });
}

// predictResult marks the prediction of entry's pair right or wrong once
// its race is in, says so in the panel and the live region, and counts it.
function predictResult(entry) {
  if (!entry.scenario) return;
  const p = predict.pairs[predictPair(entry.scenario, entry.lock, entry.endpoint)];
  if (!p || !p.guess || p.verdict) {
    if ($('predictSay').textContent.includes(`${entry.lock} under ${entry.scenario} starts`)) $('predict').hidden = true;
    return;
  }
  p.verdict = entry.verdict;
  savePredictions();
  const right = p.guess === p.verdict;
  const say = `${entry.lock} under ${entry.scenario}: you predicted ${p.guess}, it was ${p.verdict} ${right ? '✓' : '✗'}; ${predictScore()}.`;
  $('predictSay').textContent = say;
  $('predict').hidden = false;
  announce($('announce').textContent + '. ' + say);
  showPredictions();
}

$('predictOn').addEventListener('change', () => {
  predict.ask = $('predictOn').checked;
  savePredictions();
  if (!predict.ask && predict.waiting) predict.waiting();
  showPredictions();
});
$('predictReset').addEventListener('click', () => {
  predict.pairs = {};
  savePredictions();
  $('predict').hidden = true;
  showPredictions();
});
showPredictions();
