// A small autocomplete for text inputs: a list below the input, filled by an
// async source as the user types, driven by the mouse or the keyboard
// (arrows, Enter or Tab to pick, Escape to close).

let nextId = 0;

// attach adds autocomplete to input. source(text) returns (a promise of) the
// names to offer; onPick(name) is called after one is picked.
export function attach(input, source, onPick) {
  const wrap = document.createElement('span');
  wrap.className = 'ac';
  input.replaceWith(wrap);
  wrap.append(input);
  const list = document.createElement('ul');
  list.className = 'ac-list';
  list.id = 'ac-' + (++nextId);
  list.setAttribute('role', 'listbox');
  list.hidden = true;
  wrap.append(list);
  input.setAttribute('role', 'combobox');
  input.setAttribute('aria-autocomplete', 'list');
  input.setAttribute('aria-controls', list.id);
  input.setAttribute('aria-expanded', 'false');
  input.autocomplete = 'off';
  input.spellcheck = false;

  let items = [], active = -1, timer = 0, seq = 0;

  const close = () => {
    list.hidden = true;
    input.setAttribute('aria-expanded', 'false');
    active = -1;
  };
  const setActive = i => {
    active = i;
    [...list.children].forEach((li, j) => li.setAttribute('aria-selected', j === i ? 'true' : 'false'));
    if (i >= 0 && list.children[i]) list.children[i].scrollIntoView({ block: 'nearest' });
  };
  const pick = name => {
    input.value = name;
    close();
    input.dispatchEvent(new Event('change', { bubbles: true }));
    if (onPick) onPick(name);
  };
  const show = names => {
    items = names.slice(0, 200);
    list.replaceChildren(...items.map((n, i) => {
      const li = document.createElement('li');
      li.setAttribute('role', 'option');
      li.textContent = n;
      li.addEventListener('mousedown', e => { e.preventDefault(); pick(items[i]); });
      return li;
    }));
    if (items.length === 0 || document.activeElement !== input) { close(); return; }
    list.hidden = false;
    input.setAttribute('aria-expanded', 'true');
    setActive(-1);
  };
  const refresh = () => {
    clearTimeout(timer);
    const my = ++seq;
    timer = setTimeout(async () => {
      let names = [];
      try { names = await source(input.value); } catch (e) { names = []; }
      if (my !== seq) return;
      const v = input.value;
      show(names.filter(n => n !== v));
    }, 120);
  };
  input.addEventListener('input', refresh);
  input.addEventListener('focus', refresh);
  input.addEventListener('blur', () => { seq++; clearTimeout(timer); close(); });
  input.addEventListener('keydown', e => {
    if (list.hidden) {
      if (e.key === 'ArrowDown') { refresh(); e.preventDefault(); }
      return;
    }
    if (e.key === 'ArrowDown') { setActive(Math.min(items.length - 1, active + 1)); e.preventDefault(); }
    else if (e.key === 'ArrowUp') { setActive(Math.max(-1, active - 1)); e.preventDefault(); }
    else if (e.key === 'Escape') { close(); e.preventDefault(); e.stopPropagation(); }
    else if ((e.key === 'Enter' || e.key === 'Tab') && active >= 0) {
      pick(items[active]);
      if (e.key === 'Enter') { e.preventDefault(); e.stopPropagation(); }
    }
  });
  return { close, list };
}

// filterNames keeps the names that start with text first, then those that
// contain it, each group sorted.
export function filterNames(names, text) {
  const t = text.toLowerCase();
  const pre = [], mid = [];
  for (const n of names) {
    const l = n.toLowerCase();
    if (l.startsWith(t)) pre.push(n); else if (t && l.includes(t)) mid.push(n);
  }
  pre.sort(); mid.sort();
  return pre.concat(mid);
}
