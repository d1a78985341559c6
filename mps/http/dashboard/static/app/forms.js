// What the forms and buttons that call the API share: the busy state and the refusal of an
// action, the fields of a form kept together, and the note that a change was saved.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';

/**
 * The state of an action that calls the API: `run(work)` runs the async `work` with `busy` set
 * and `error` cleared, and keeps what it threw in `error` (an ApiError, or an Error a check of the
 * form threw before asking). `submit(work)` is the form's onSubmit doing the same. With `once`,
 * a success leaves it busy: the view moves on (it navigates, or the form closes), so it is not
 * sent twice meanwhile.
 */
export function useAction({ once = false } = {}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async (work) => {
    setError(null);
    setBusy(true);
    try {
      await work();
      if (!once) setBusy(false);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };
  const submit = (work) => (event) => {
    event.preventDefault();
    return run(work);
  };
  return { busy, error, setError, run, submit };
}

/**
 * A form's fields as one object: `set(name)` is the input handler that writes one of them, and
 * `edited` (if given) is told of every edit, as a "Saved." note that must go.
 */
export function useFields(initial, edited) {
  const [fields, setFields] = useState(initial);
  const set = (name) => (event) => {
    if (edited) edited();
    setFields({ ...fields, [name]: event.currentTarget.value });
  };
  return [fields, set, setFields];
}

/** The input handler that hands the field's text to `setter` (a state setter). */
export const typed = (setter) => (event) => setter(event.currentTarget.value);

/** "Saved." once a change was saved, announced to screen readers. */
export function Saved({ id, when, className }) {
  return when ? html`<span role="status" class=${className} id=${id}>Saved.</span>` : null;
}
