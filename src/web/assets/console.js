// SPDX-License-Identifier: BSD-2-Clause
// warrantd-web: the overview's live numbers, from /api/overview every 2 s.
// No inline script anywhere (the CSP forbids it): this file is the only code,
// and it writes text with textContent, never HTML.
'use strict';

function age(ms) {
  if (typeof ms !== 'number') return '\u2014';
  const a = Math.abs(ms), s = ms < 0 ? '-' : '';
  if (a < 60000) return s + Math.floor(a / 1000) + '.' + Math.floor(a % 1000 / 100) + ' s';
  if (a < 3600000) return s + Math.floor(a / 60000) + ' min';
  if (a < 86400000) return s + Math.floor(a / 3600000) + ' h';
  return s + Math.floor(a / 86400000) + ' d';
}

function shown(v) {
  if (v === null || v === undefined) return '\u2014';
  if (v === true) return 'yes';
  if (v === false) return 'no';
  return String(v);
}

function cell(tr, text, cls) {
  const td = document.createElement('td');
  if (cls) {
    const b = document.createElement('span');
    b.className = cls;
    b.textContent = text;
    td.appendChild(b);
  } else {
    td.textContent = text;
  }
  tr.appendChild(td);
}

function renderAlerts(list) {
  const box = document.getElementById('alerts');
  if (!box) return;
  box.replaceChildren(...(list || []).map((a) => {
    const p = document.createElement('p');
    p.className = 'alert ' + (a.level === 'bad' ? 'bad' : 'warn');
    p.textContent = a.text;
    return p;
  }));
}

function render(ov) {
  renderAlerts(ov.alerts);
  (ov.streams || []).forEach((st, i) => {
    document.querySelectorAll('[data-k^="' + i + '."]').forEach((el) => {
      const k = el.dataset.k.slice(String(i).length + 1);
      el.textContent = k === 'oldestPendingAge' ? age(st.oldestPendingIdleMs) : shown(st[k]);
    });
    const body = document.querySelector('table[data-consumers="' + i + '"] tbody');
    if (!body) return;
    const rows = [];
    Object.keys(st.consumers || {}).forEach((name) => {
      const c = st.consumers[name], tr = document.createElement('tr');
      cell(tr, name);
      cell(tr, c.alive ? 'alive' : 'dead', 'badge ' + (c.alive ? 'ok' : 'bad'));
      cell(tr, age(c.heartbeatAgeMs));
      cell(tr, shown(c.inFlight));
      cell(tr, shown(c.pending));
      cell(tr, shown(c.tokenState));
      cell(tr, shown(c.version));
      rows.push(tr);
    });
    body.replaceChildren(...rows);
  });
}

async function refresh() {
  const live = document.getElementById('live');
  try {
    const r = await fetch('/api/overview', { credentials: 'same-origin', cache: 'no-store' });
    if (r.status === 401) { window.location.assign('/login'); return; }
    if (!r.ok) throw new Error('HTTP ' + r.status);
    render(await r.json());
    live.textContent = 'live';
    live.classList.remove('stale');
  } catch (e) {
    live.textContent = 'stale: ' + e.message;
    live.classList.add('stale');
  }
}

document.addEventListener('DOMContentLoaded', () => {
  if (document.getElementById('live')) {
    setInterval(refresh, 2000);
  }
});
