// Money is carried in minor units as strings (the API's amountMinor) and shown in major units with
// the currency's own number of decimals (ISO 4217: JPY has none). Amounts are never summed across
// currencies anywhere in the dashboard.

const exponents = new Map();

export function exponent(currency) {
  if (!exponents.has(currency)) {
    let digits = 2;
    try {
      digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions()
        .maximumFractionDigits;
    } catch {
      // An unknown code: two decimals, as most currencies have.
    }
    exponents.set(currency, digits);
  }
  return exponents.get(currency);
}

const grouped = new Intl.NumberFormat('en-US');

/** "123456", "USD" -> "1,234.56 USD"; outputs may be 0 or negative. */
export function money(minor, currency) {
  const text = String(minor ?? '0');
  const negative = text.startsWith('-');
  const digits = (negative ? text.slice(1) : text).padStart(exponent(currency) + 1, '0');
  const cut = digits.length - exponent(currency);
  const whole = grouped.format(BigInt(digits.slice(0, cut)));
  const fraction = exponent(currency) ? '.' + digits.slice(cut) : '';
  return `${negative ? '-' : ''}${whole}${fraction} ${currency}`;
}

/** A number of major units for charts (precision beyond a pixel does not matter there). */
export function major(minor, currency) {
  return Number(minor) / 10 ** exponent(currency);
}

/** What a person typed ("12.5") -> minor units ("1250"), or null if it is not an amount. */
export function toMinor(text, currency) {
  const places = exponent(currency);
  const pattern = places ? new RegExp(`^(\\d+)(?:\\.(\\d{1,${places}}))?$`) : /^(\d+)$/;
  const found = pattern.exec(String(text).trim().replace(/,/g, ''));
  if (!found) return null;
  const minor = (found[1] + (found[2] || '').padEnd(places, '0')).replace(/^0+(?=\d)/, '');
  return minor === '0' ? null : minor;
}

/** Minor units -> the plain number a person would type back ("1250" -> "12.50"). */
export function toMajorText(minor, currency) {
  const places = exponent(currency);
  const digits = String(minor).padStart(places + 1, '0');
  return places ? `${digits.slice(0, -places)}.${digits.slice(-places)}` : digits;
}

const when = new Intl.DateTimeFormat('en-GB', {
  dateStyle: 'medium',
  timeStyle: 'short',
  timeZone: 'UTC',
});

export function dateTime(iso) {
  return iso ? `${when.format(new Date(iso))} UTC` : '—';
}

/** YYYY-MM-DD of a Date, in UTC (the API's ranges are UTC). */
export function isoDate(date) {
  return date.toISOString().slice(0, 10);
}

export function daysAgo(days) {
  return isoDate(new Date(Date.now() - days * 86_400_000));
}

/** Statuses as a person reads them: PARTIAL_REFUND -> "Partial refund". */
export function label(status) {
  const text = String(status || '')
    .replace(/_/g, ' ')
    .toLowerCase();
  return text.charAt(0).toUpperCase() + text.slice(1);
}
