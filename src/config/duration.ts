// Go-style durations ("5m0s", "1h30m", "90s"), as job timeouts are written (spec 2.3).
const PATTERN = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/** Milliseconds, or null when the text is not a Go-style duration of whole seconds. */
export function parseDuration(text: string): number | null {
  const m = PATTERN.exec(text);
  if (!m || text === '') return null;
  const [, h = '0', min = '0', s = '0'] = m;
  return ((Number(h) * 60 + Number(min)) * 60 + Number(s)) * 1000;
}

/** Canonical form, as Go prints it: 300000 → "5m0s", 3600000 → "1h0m0s", 5000 → "5s". */
export function formatDuration(ms: number): string {
  const total = Math.round(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}
