// A list's filters, kept in the URL's query so that a reload or a shared link shows the same
// list: the form that holds them, a choice among values, a range of dates, and clearing them.
// Any change starts the list's cursor again: the page it named belongs to the old filters.
import { html } from 'htm/preact';
import { label } from './format.js';
import { setQuery } from './router.js';

const stay = (event) => event.preventDefault();

/**
 * The form around a list's filters (`label` names it). Its filters apply as they change, so
 * submitting does nothing unless `onSubmit` says otherwise.
 */
export function Filters({ label: name = 'Filters', role, onSubmit = stay, children }) {
  return html`<form class="row filters" role=${role} aria-label=${name} onSubmit=${onSubmit}>
    ${children}
  </form>`;
}

/**
 * A choice written to the query parameter `param` ("status" unless told; `any`, "Any" unless
 * told, leaves it out), which starts the list's cursor (`cursorParam`) again. The select is
 * `filter-${param}` and labelled as the parameter reads unless `id` and `name` say otherwise;
 * `text` shows an option.
 */
export function FilterSelect({
  value,
  options,
  param = 'status',
  id = `filter-${param}`,
  name = label(param),
  cursorParam = 'cursor',
  any = 'Any',
  text = label,
}) {
  const choose = (e) => setQuery({ [param]: e.currentTarget.value, [cursorParam]: '' });
  return html`<label>
    ${name}
    <select id=${id} value=${value} onChange=${choose}>
      <option value="">${any}</option>
      ${options.map((o) => html`<option value=${o}>${text(o)}</option>`)}
    </select>
  </label>`;
}

/** The dates `from` and `to` (YYYY-MM-DD), each applied as it is picked. */
export function DateRange({ from, to }) {
  const pick = (name) => (e) => setQuery({ [name]: e.currentTarget.value, cursor: '' });
  return html`<label>
      From
      <input id="filter-from" type="date" value=${from} onChange=${pick('from')} />
    </label>
    <label>
      To
      <input id="filter-to" type="date" value=${to} onChange=${pick('to')} />
    </label>`;
}

/**
 * "Clear filters" while any of `values` (the filters by name) is set: it empties them all, and
 * tells `cleared` (a field's own text to empty too).
 */
export function ClearFilters({ values, cleared, text = 'Clear filters' }) {
  if (!Object.values(values).some(Boolean)) return null;
  const clear = () => {
    if (cleared) cleared();
    setQuery({ ...Object.fromEntries(Object.keys(values).map((n) => [n, ''])), cursor: '' });
  };
  return html`<button type="button" class="link" onClick=${clear}>${text}</button>`;
}
