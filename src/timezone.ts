/**
 * The dashboard's time zone as the backend takes it: an IANA name, or UTC.
 * Grafana sends "browser" (the default), "utc", "" or an IANA name; the
 * backend cannot know the browser's zone, so it is resolved here.
 */
export function resolveTimeZone(tz: string | undefined, browserZone: () => string | undefined = browserTimeZone): string {
  const v = (tz ?? '').trim();
  if (v === '' || v.toLowerCase() === 'browser') {
    return browserZone() || 'UTC';
  }
  if (v.toLowerCase() === 'utc') {
    return 'UTC';
  }
  return v;
}

function browserTimeZone(): string | undefined {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}
